#pragma once
// How many leading tokens two sequences share: the positions of a cache a prompt can reuse.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

namespace inferscope {

inline size_t commonPrefixLength(std::span<const int32_t> a, std::span<const int32_t> b) {
    return size_t(std::ranges::mismatch(a, b).in1 - a.begin());
}

}  // namespace inferscope
