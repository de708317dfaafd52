#pragma once
// The KV cache: the keys and values of every past position, per layer and KV head, so that a
// decode step computes K and V for its new token only.
//
// Storage (f32; f16 halves what long-context decode reads; q8_0 and q4_0, ggml's blocks of 32, cut
// it to 34/128 and 18/128 of f32), preallocated for the whole context:
//   keys   [nLayer][nHeadKv][nCtx][rowBytes]   rowBytes = kvRowBytes(type, headDim)
//   values [nLayer][nHeadKv][nCtx][rowBytes]
// One (layer, head) block is contiguous over positions, which is what attention reads.
// Bookkeeping beside it: how many positions are valid, and whether each came from the prompt
// (prefill) or was generated (decode), for the visualizer.

#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "common/aligned_buffer.h"
#include "common/error.h"
#include "record/kv_stats.h"
#include "record/kv_type.h"

namespace inferscope {

Result<KvType> parseKvType(std::string_view text);  // "f32" | "f16" | "q8_0" | "q4_0"
const char* kvTypeName(KvType type);                 // the same names
// Every type, in the order a list of them shows: F32, F16, Q8_0, Q4_0. The names are
// kvTypeName's, so a list built from these (Settings → KV cache, the command line's help) names
// what parseKvType reads back.
std::span<const KvType> allKvTypes();
// A block type's rows are whole blocks of 32: refused (naming the head dimension) otherwise.
Result<void> checkKvHeadDim(KvType type, int32_t headDim);


class KvCache {
public:
    // Allocates the whole context up front; fails with OutOfMemory naming the size, and for the
    // block types with InvalidArgument when the head dimension is not a multiple of 32.
    static Result<KvCache> create(const KvCacheLayout& layout);

    const KvCacheLayout& layout() const { return layout_; }
    int32_t used() const { return used_; }
    int32_t capacity() const { return layout_.nCtx; }

    KvType type() const { return layout_.type; }
    // 4 or 2; 0 for the block types, whose rows are rowBytes() each.
    int32_t bytesPerElement() const { return isBlockKvType(layout_.type) ? 0 : int32_t(rowBytes() / size_t(layout_.headDim)); }
    size_t rowBytes() const { return kvRowBytes(layout_.type, layout_.headDim); }
    // [nHeadKv][nCtx][rowBytes] block of one layer, of type(): float, uint16_t (IEEE half) or ggml blocks.
    const void* layerKeysData(int32_t layer) const { return keys_.data() + layerOffset(layer); }
    const void* layerValuesData(int32_t layer) const { return values_.data() + layerOffset(layer); }
    // The same, for an F32 cache.
    const float* layerKeys(int32_t layer) const { return reinterpret_cast<const float*>(layerKeysData(layer)); }
    const float* layerValues(int32_t layer) const { return reinterpret_cast<const float*>(layerValuesData(layer)); }

    // Writes K and V of m new positions position0 .. position0+m-1 of one layer.
    // k, v: [m][nHeadKv][headDim] f32 as the projections produce them (rounded to f16 in an F16
    // cache, quantized per row as ggml's reference quantize_row_q8_0 / q4_0 in a block cache).
    void store(int32_t layer, int32_t position0, int64_t m, const float* k, const float* v);
    // Marks positions position0 .. position0+m-1 valid (after all layers stored them) and counts
    // the work a forward pass over them did.
    void commit(int32_t position0, int32_t m, CellOrigin origin);

    // Copies positions from .. to-1 of `source` (the same layout) into this cache, which holds
    // exactly `from` positions: keys and values another cache computed for the same tokens at the
    // same positions (sessions sharing a prompt's prefix). They count as prompt cells, not as work.
    void copyPositions(const KvCache& source, int32_t from, int32_t to);

    // Forgets positions >= n (regenerate, edit, branch). Cheap: storage is overwritten later.
    void truncate(int32_t n);
    void clear() { truncate(0); }

    std::span<const CellOrigin> cells() const { return {origins_.data(), size_t(used_)}; }
    KvCacheStats stats() const;
    void resetCounters();

private:
    size_t layerOffset(int32_t layer) const {  // in bytes
        return size_t(layer) * size_t(layout_.nHeadKv) * size_t(layout_.nCtx) * rowBytes();
    }
    KvCacheLayout layout_;
    AlignedBuffer<uint8_t> keys_;
    AlignedBuffer<uint8_t> values_;
    std::vector<CellOrigin> origins_;
    int32_t used_ = 0;
    uint64_t kvComputed_ = 0;
    uint64_t attentionScores_ = 0;
    uint64_t attentionScoresSliding_ = 0;
};

}  // namespace inferscope
