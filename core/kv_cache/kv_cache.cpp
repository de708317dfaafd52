#include "kv_cache/kv_cache.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <fmt/format.h>

#include "gguf/ggml_types.h"

namespace inferscope {

Result<KvType> parseKvType(std::string_view text) {
    if (text == "f32") return KvType::F32;
    if (text == "f16") return KvType::F16;
    return fail(ErrorKind::InvalidArgument, fmt::format("KV cache type must be f32 or f16, got '{}'", text));
}

Result<KvCache> KvCache::create(const KvCacheLayout& layout) {
    if (layout.nLayer <= 0 || layout.nHeadKv <= 0 || layout.headDim <= 0 || layout.nCtx <= 0)
        return fail(ErrorKind::InvalidArgument, "KV cache dimensions must be positive");
    KvCache cache;
    cache.layout_ = layout;
    const size_t elements = size_t(layout.nLayer) * size_t(layout.nHeadKv) * size_t(layout.nCtx) * size_t(layout.headDim);
    try {
        // Zero-filled so that the memory is committed now, not on first use mid-generation.
        cache.keys_.allocate(elements * size_t(cache.bytesPerElement()), true);
        cache.values_.allocate(elements * size_t(cache.bytesPerElement()), true);
        cache.origins_.assign(size_t(layout.nCtx), CellOrigin::Empty);
    } catch (const std::bad_alloc&) {
        return fail(ErrorKind::OutOfMemory,
                    fmt::format("out of memory allocating the KV cache: {} MiB for {} tokens; choose a smaller context",
                                2 * elements * size_t(cache.bytesPerElement()) >> 20, layout.nCtx));
    }
    return cache;
}

void KvCache::store(int32_t layer, int32_t position0, int64_t m, const float* k, const float* v) {
    assert(layer >= 0 && layer < layout_.nLayer && position0 >= 0 && m >= 0 && position0 + m <= layout_.nCtx);
    const int32_t hd = layout_.headDim, nh = layout_.nHeadKv;
    uint8_t* kl = keys_.data() + layerOffset(layer);
    uint8_t* vl = values_.data() + layerOffset(layer);
    const size_t eb = size_t(bytesPerElement());
    for (int64_t r = 0; r < m; ++r) {
        for (int32_t h = 0; h < nh; ++h) {
            const size_t dst = (size_t(h) * layout_.nCtx + size_t(position0 + r)) * hd * eb;
            const size_t src = (size_t(r) * nh + h) * hd;
            if (layout_.type == KvType::F16) {
                fp32ToFp16Row(k + src, reinterpret_cast<uint16_t*>(kl + dst), size_t(hd));
                fp32ToFp16Row(v + src, reinterpret_cast<uint16_t*>(vl + dst), size_t(hd));
            } else {
                std::memcpy(kl + dst, k + src, sizeof(float) * hd);
                std::memcpy(vl + dst, v + src, sizeof(float) * hd);
            }
        }
    }
}

void KvCache::commit(int32_t position0, int32_t m, CellOrigin origin) {
    std::fill(origins_.begin() + position0, origins_.begin() + position0 + m, origin);
    used_ = position0 + m;
    kvComputed_ += uint64_t(m);
    // Query at position p scores keys 0..p: Σ (p + 1) over the new positions.
    for (int32_t p = position0; p < position0 + m; ++p) {
        attentionScores_ += uint64_t(p) + 1;
        if (layout_.slidingWindow > 0) attentionScoresSliding_ += uint64_t(std::min(p + 1, layout_.slidingWindow));
    }
}

void KvCache::truncate(int32_t n) {
    n = std::clamp(n, 0, used_);
    std::fill(origins_.begin() + n, origins_.begin() + used_, CellOrigin::Empty);
    used_ = n;
}

KvCacheStats KvCache::stats() const {
    KvCacheStats s;
    s.layout = layout_;
    s.nUsed = used_;
    s.nPromptCells = int32_t(std::count(origins_.begin(), origins_.begin() + used_, CellOrigin::Prompt));
    s.bytesPerElement = bytesPerElement();
    s.bytesPerToken = 2ull * uint64_t(layout_.nLayer) * uint64_t(layout_.nHeadKv) * uint64_t(layout_.headDim) * uint64_t(s.bytesPerElement);
    s.bytesReserved = keys_.bytes() + values_.bytes();
    s.bytesUsed = s.bytesPerToken * uint64_t(used_);
    s.bytesUsedPerLayer = s.bytesUsed / uint64_t(layout_.nLayer);
    s.bytesUsedPerHead = s.bytesUsedPerLayer / uint64_t(layout_.nHeadKv);
    s.kvComputed = kvComputed_;
    s.attentionScores = attentionScores_;
    s.attentionScoresSliding = attentionScoresSliding_;
    s.bytesReservedPerLayer = s.bytesReserved / uint64_t(layout_.nLayer);
    s.bytesReservedPerHead = s.bytesReservedPerLayer / uint64_t(layout_.nHeadKv);
    const bool windowed = layout_.slidingWindow > 0 && layout_.nSlidingLayers > 0;
    const uint64_t slidingLayers = windowed ? uint64_t(layout_.nSlidingLayers) : 0;
    const uint64_t perLayerPerToken = s.bytesPerToken / uint64_t(layout_.nLayer);
    s.bytesUsedSlidingLayers = perLayerPerToken * slidingLayers * uint64_t(used_);
    s.bytesUsedGlobalLayers = s.bytesUsed - s.bytesUsedSlidingLayers;
    s.bytesNeededSlidingLayers = perLayerPerToken * slidingLayers * uint64_t(std::min(used_, layout_.slidingWindow));
    for (int32_t p = 0; p < used_; ++p) {
        if (s.originRuns.empty() || s.originRuns.back().second != origins_[size_t(p)])
            s.originRuns.emplace_back(0, origins_[size_t(p)]);
        ++s.originRuns.back().first;
    }
    return s;
}

void KvCache::resetCounters() {
    kvComputed_ = 0;
    attentionScores_ = 0;
    attentionScoresSliding_ = 0;
}

}  // namespace inferscope
