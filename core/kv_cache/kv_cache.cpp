#include "kv_cache/kv_cache.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <iterator>
#include <string>
#include <fmt/format.h>

#include "gguf/ggml_types.h"
#include "gguf/quant_encode.h"

namespace inferscope {
namespace {

// A new KvType goes here too (kvTypeName's switch warns when it lacks a name; this list cannot).
constexpr KvType kAllKvTypes[] = {KvType::F32, KvType::F16, KvType::Q8_0, KvType::Q4_0};

}  // namespace

std::span<const KvType> allKvTypes() { return kAllKvTypes; }

// Read by name, so the names parsed are the names written: "f32, f16, q8_0 or q4_0" in the error too.
Result<KvType> parseKvType(std::string_view text) {
    std::string names;
    for (size_t i = 0; i < std::size(kAllKvTypes); ++i) {
        if (text == kvTypeName(kAllKvTypes[i])) return kAllKvTypes[i];
        names += i == 0 ? "" : i + 1 == std::size(kAllKvTypes) ? " or " : ", ";
        names += kvTypeName(kAllKvTypes[i]);
    }
    return fail(ErrorKind::InvalidArgument, fmt::format("KV cache type must be {}, got '{}'", names, text));
}

const char* kvTypeName(KvType type) {
    switch (type) {
    case KvType::F32: return "f32";
    case KvType::F16: return "f16";
    case KvType::Q8_0: return "q8_0";
    case KvType::Q4_0: return "q4_0";
    }
    return "?";
}

Result<void> checkKvHeadDim(KvType type, int32_t headDim) {
    if (!isBlockKvType(type) || headDim % kKvBlockElements == 0) return {};
    return fail(ErrorKind::InvalidArgument,
                fmt::format("a {} KV cache needs a head dimension that is a multiple of {} (its blocks are per head); "
                            "this model's head dimension is {}: use an f16 or f32 KV cache",
                            kvTypeName(type), kKvBlockElements, headDim));
}

Result<KvCache> KvCache::create(const KvCacheLayout& layout) {
    if (layout.nLayer <= 0 || layout.nHeadKv <= 0 || layout.headDim <= 0 || layout.nCtx <= 0)
        return fail(ErrorKind::InvalidArgument, "KV cache dimensions must be positive");
    if (auto ok = checkKvHeadDim(layout.type, layout.headDim); !ok) return std::unexpected(ok.error());
    KvCache cache;
    cache.layout_ = layout;
    const size_t bytes = size_t(layout.nLayer) * size_t(layout.nHeadKv) * size_t(layout.nCtx) * kvRowBytes(layout.type, layout.headDim);
    try {
        // Zero-filled so that the memory is committed now, not on first use mid-generation.
        cache.keys_.allocate(bytes, true);
        cache.values_.allocate(bytes, true);
        cache.origins_.assign(size_t(layout.nCtx), CellOrigin::Empty);
    } catch (const std::bad_alloc&) {
        return fail(ErrorKind::OutOfMemory,
                    fmt::format("out of memory allocating the KV cache: {} MiB for {} tokens; choose a smaller context",
                                2 * bytes >> 20, layout.nCtx));
    }
    return cache;
}

void KvCache::store(int32_t layer, int32_t position0, int64_t m, const float* k, const float* v) {
    assert(layer >= 0 && layer < layout_.nLayer && position0 >= 0 && m >= 0 && position0 + m <= layout_.nCtx);
    const int32_t hd = layout_.headDim, nh = layout_.nHeadKv;
    uint8_t* kl = keys_.data() + layerOffset(layer);
    uint8_t* vl = values_.data() + layerOffset(layer);
    const size_t rb = rowBytes();
    for (int64_t r = 0; r < m; ++r) {
        for (int32_t h = 0; h < nh; ++h) {
            const size_t dst = (size_t(h) * layout_.nCtx + size_t(position0 + r)) * rb;
            const size_t src = (size_t(r) * nh + h) * hd;
            switch (layout_.type) {
            case KvType::F16:
                fp32ToFp16Row(k + src, reinterpret_cast<uint16_t*>(kl + dst), size_t(hd));
                fp32ToFp16Row(v + src, reinterpret_cast<uint16_t*>(vl + dst), size_t(hd));
                break;
            case KvType::Q8_0:
            case KvType::Q4_0: {
                const GgmlType g = layout_.type == KvType::Q8_0 ? GgmlType::Q8_0 : GgmlType::Q4_0;
                quantizeBlocks(g, k + src, kl + dst, size_t(hd));
                quantizeBlocks(g, v + src, vl + dst, size_t(hd));
                break;
            }
            case KvType::F32:
                std::memcpy(kl + dst, k + src, sizeof(float) * hd);
                std::memcpy(vl + dst, v + src, sizeof(float) * hd);
                break;
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

void KvCache::copyPositions(const KvCache& source, int32_t from, int32_t to) {
    assert(source.layout_ == layout_ && from == used_ && from <= to && to <= layout_.nCtx);
    const size_t rb = rowBytes();
    for (int32_t layer = 0; layer < layout_.nLayer; ++layer)
        for (int32_t h = 0; h < layout_.nHeadKv; ++h) {
            const size_t at = layerOffset(layer) + (size_t(h) * size_t(layout_.nCtx) + size_t(from)) * rb;
            std::memcpy(keys_.data() + at, source.keys_.data() + at, size_t(to - from) * rb);
            std::memcpy(values_.data() + at, source.values_.data() + at, size_t(to - from) * rb);
        }
    std::fill(origins_.begin() + from, origins_.begin() + to, CellOrigin::Prompt);
    used_ = to;
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
    s.bytesPerToken = 2ull * uint64_t(layout_.nLayer) * uint64_t(layout_.nHeadKv) * uint64_t(rowBytes());
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
