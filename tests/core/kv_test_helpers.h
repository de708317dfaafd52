#pragma once
// Comparing two KV caches byte for byte (speculative rollback, batched decoding).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "kv_cache/kv_cache.h"

namespace inferscope::testing_model {

// The K and V bytes of every cached position, every layer and head, and the positions used.
inline void expectSameCacheBytes(const KvCache& a, const KvCache& b) {
    ASSERT_EQ(a.used(), b.used());
    const auto& layout = a.layout();
    for (int32_t l = 0; l < layout.nLayer; ++l)
        for (int32_t h = 0; h < layout.nHeadKv; ++h) {
            const size_t offset = size_t(h) * size_t(layout.nCtx) * a.rowBytes(), bytes = size_t(a.used()) * a.rowBytes();
            const auto* ka = static_cast<const uint8_t*>(a.layerKeysData(l)) + offset;
            const auto* kb = static_cast<const uint8_t*>(b.layerKeysData(l)) + offset;
            const auto* va = static_cast<const uint8_t*>(a.layerValuesData(l)) + offset;
            const auto* vb = static_cast<const uint8_t*>(b.layerValuesData(l)) + offset;
            ASSERT_EQ(std::memcmp(ka, kb, bytes), 0) << "keys, layer " << l << " head " << h;
            ASSERT_EQ(std::memcmp(va, vb, bytes), 0) << "values, layer " << l << " head " << h;
        }
}

}  // namespace inferscope::testing_model
