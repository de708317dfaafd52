#pragma once
// Element type of the KV cache's keys and values, shared by the cache (kv_cache.h) and the
// attention kernel that reads it (backend/kernels.h).
//   F32   4 B per element
//   F16   2 B per element (IEEE half)
//   Q8_0  ggml's block of 32: fp16 scale d, 32 int8 q; value = q·d            (34 B / 32)
//   Q4_0  ggml's block of 32: fp16 scale d, 16 B of nibbles; value = (q − 8)·d (18 B / 32)
// A row (one position of one KV head, headDim elements) is headDim / 32 whole blocks in Q8_0/Q4_0.

#include <cstddef>
#include <cstdint>

namespace inferscope {

enum class KvType : uint8_t { F32, F16, Q8_0, Q4_0 };

inline constexpr bool isBlockKvType(KvType t) { return t == KvType::Q8_0 || t == KvType::Q4_0; }
inline constexpr int32_t kKvBlockElements = 32;

// Bytes of one cache row of headDim elements (headDim a multiple of 32 for the block types).
inline constexpr size_t kvRowBytes(KvType t, int32_t headDim) {
    switch (t) {
    case KvType::F32: return size_t(headDim) * 4;
    case KvType::F16: return size_t(headDim) * 2;
    case KvType::Q8_0: return size_t(headDim / kKvBlockElements) * 34;
    case KvType::Q4_0: return size_t(headDim / kKvBlockElements) * 18;
    }
    return 0;
}

}  // namespace inferscope
