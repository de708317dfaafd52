#pragma once
// KV-cache arithmetic for any model shape (the CLI's `kv` command and the visualizer's calculator):
// bytes per token = 2 (K and V) × layers × KV heads × head dim × bytes per element, where a block
// type's element size is its block's bytes over its elements (q8_0 34/32, q4_0 18/32: what
// KvCache allocates for those types).
// Exact integer arithmetic; overflow is an error, not a wrap.

#include <cstdint>
#include <string_view>

#include "common/error.h"

namespace inferscope {

struct KvShape {
    uint64_t layers = 0;
    uint64_t heads = 0;     // query heads
    uint64_t kvHeads = 0;   // key/value heads (== heads: MHA, 1: MQA, between: GQA)
    uint64_t headDim = 0;
    uint64_t bytesPerElement = 0;   // bytes of one block of blockElements elements (1 element: the element size)
    // Of the layers, how many attend only to the last `window` positions (Gemma 2/3, Phi-3):
    // a cache that keeps only the window needs min(tokens, window) positions on those.
    uint64_t slidingLayers = 0;
    uint64_t window = 0;
    uint64_t blockElements = 1;     // 32 for q8_0 (34 bytes per block) and q4_0 (18); headDim must be a multiple
};

// A cache dtype's storage: `bytes` per `elements` elements.
struct KvElementSize {
    uint64_t bytes = 0;
    uint64_t elements = 1;
};

struct KvFigures {
    uint64_t bytesPerToken = 0;
    uint64_t totalBytes = 0;        // bytesPerToken × tokens × users
    uint64_t mhaBytesPerToken = 0;  // the same model with one KV head per query head
    uint64_t mhaTotalBytes = 0;
    uint64_t mqaBytesPerToken = 0;  // the same model with a single KV head
    uint64_t mqaTotalBytes = 0;
    uint64_t windowedTotalBytes = 0;  // the sliding layers keeping only their window (= totalBytes without them)
};

// Bytes per element of a cache dtype name: f32 4, f16 2, bf16 2, int8 1.
Result<uint64_t> kvBytesPerElement(std::string_view dtype);
// Any cache dtype, the block types too: f32 4/1, f16 and bf16 2/1, int8 1/1, q8_0 34/32, q4_0 18/32.
Result<KvElementSize> kvElementSize(std::string_view dtype);
Result<KvFigures> computeKvFigures(const KvShape& shape, uint64_t tokens, uint64_t users);

}  // namespace inferscope
