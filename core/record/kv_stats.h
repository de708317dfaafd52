#pragma once
// What a KV cache is shaped like and what it holds, as plain values: the engine's cache fills them
// (kv_cache/kv_cache.h), a generation's summary and the app's stored answers carry them.

#include <cstdint>
#include <utility>
#include <vector>

#include "record/kv_type.h"

namespace inferscope {

struct KvCacheLayout {
    int32_t nLayer = 0;
    int32_t nHeadKv = 0;
    int32_t headDim = 0;
    int32_t nCtx = 0;
    KvType type = KvType::F32;
    // Layers that attend only to the last slidingWindow positions (Gemma, Phi-3). Their cache
    // still holds every position: what is allocated is the same for every layer.
    int32_t slidingWindow = 0;
    int32_t nSlidingLayers = 0;
    // [nLayer]: 1 for a sliding-window layer (which ones: the architecture's pattern, e.g. Gemma 2's
    // even layers); empty when there are none. Bookkeeping for the visualizer: storage ignores it.
    std::vector<uint8_t> slidingLayers{};
    bool operator==(const KvCacheLayout&) const = default;
    bool isSliding(int32_t layer) const {
        return slidingWindow > 0 && size_t(layer) < slidingLayers.size() && slidingLayers[size_t(layer)] != 0;
    }
};

enum class CellOrigin : uint8_t { Empty = 0, Prompt = 1, Generated = 2 };

struct KvCacheStats {
    KvCacheLayout layout;
    int32_t nUsed = 0;               // valid positions
    int32_t nPromptCells = 0;        // of which written by prefill
    int32_t bytesPerElement = 4;     // f32 4, f16 2; 0 for the block types (34 or 18 bytes per 32)
    uint64_t bytesPerToken = 0;      // 2 (K and V) × layers × KV heads × kvRowBytes(type, head dim)
    uint64_t bytesReserved = 0;      // allocated: bytesPerToken × nCtx
    uint64_t bytesUsed = 0;          // bytesPerToken × nUsed
    uint64_t bytesUsedPerLayer = 0;  // bytesUsed / layers
    uint64_t bytesUsedPerHead = 0;   // bytesUsed / (layers × KV heads)
    uint64_t bytesReservedPerLayer = 0;  // bytesReserved / layers
    uint64_t bytesReservedPerHead = 0;   // bytesReserved / (layers × KV heads)
    // Per layer type. A sliding-window layer reads only its last slidingWindow positions: a cache
    // that kept only those (llama.cpp's SWA cache does) would need min(nUsed, window) of them.
    // Without sliding layers: global = bytesUsed, the rest 0.
    uint64_t bytesUsedGlobalLayers = 0;      // the global layers' share of bytesUsed
    uint64_t bytesUsedSlidingLayers = 0;     // the sliding layers' share of bytesUsed (what they hold)
    uint64_t bytesNeededSlidingLayers = 0;   // what they read: min(nUsed, window) positions each
    // Work counters since the last resetCounters(), in token units (multiply by layers × KV heads
    // for single K/V vectors, by layers × query heads for single dot products):
    uint64_t kvComputed = 0;         // positions whose K and V were computed
    uint64_t attentionScores = 0;    // (query position, key position) pairs scored (on a global layer)
    uint64_t attentionScoresSliding = 0;  // the same on a sliding-window layer: min(p + 1, window) per query
    // Origins of the used cells in position order, run-length encoded as {count, origin}: after a
    // second chat turn {5, Prompt}, {19, Generated}, {8, Prompt}, {30, Generated}. Σ count = nUsed.
    std::vector<std::pair<int32_t, CellOrigin>> originRuns;
};

}  // namespace inferscope
