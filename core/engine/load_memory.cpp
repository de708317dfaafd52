#include "engine/load_memory.h"

#include <algorithm>

#include "backend/kernels.h"
#include "gguf/quant_blocks.h"

namespace inferscope {

MemoryNeed estimateLoadMemory(const GgufFile& file, const LlamaHParams& hp, const LoadShape& shape) {
    MemoryNeed need;
    uint64_t largestTemporary = 0;
    const bool tied = file.findTensor("output.weight") == nullptr;
    // A matrix as makeLinear holds it. `countMapped` false: its mapped bytes are counted already.
    auto matrix = [&](const GgufTensorInfo& t, bool countMapped) {
        const uint64_t rows = t.ne[1], elements = t.nElements;
        const GgmlType type = t.type();
        const bool bf16 = shape.precision == ComputePrecision::BF16 ||
                          (shape.precision == ComputePrecision::Auto && type == GgmlType::BF16);
        if (shape.precision == ComputePrecision::Int8) {
            need.weightsConverted += elements + rows * 4;             // s8 packed + per-row scales
            largestTemporary = std::max(largestTemporary, elements);  // the plain s8 copy before packing
        } else if (bf16 ? type == GgmlType::BF16
                        : type == GgmlType::F32 || type == GgmlType::F16 ||
                              (shape.precision == ComputePrecision::Auto && isQuantizedBlockType(type))) {
            if (countMapped) need.weightsMapped += t.nBytes;  // used in place
        } else {
            need.weightsConverted += elements * (bf16 ? 2 : 4);
        }
    };
    for (const GgufTensorInfo& t : file.tensors()) {
        if (t.name == "token_embd.weight") {
            need.weightsMapped += t.nBytes;  // rows are looked up in the mapping
            if (tied) matrix(t, false);      // and it is the LM head too
        } else if (t.nDims == 2) {
            matrix(t, true);
        } else {
            need.weightsMapped += t.nBytes;  // norms, rope_freqs: a few KB
        }
    }

    need.kvCache = 2 * uint64_t(hp.nLayer) * uint64_t(hp.nHeadKv) * kvRowBytes(shape.kvType, hp.headDim) * uint64_t(shape.nCtx);

    const uint64_t m = uint64_t(std::clamp(shape.batch, 1, std::max(shape.nCtx, 1)));
    const uint64_t E = uint64_t(hp.nEmbd), Q = uint64_t(hp.qDim()), KV = uint64_t(hp.kvDim()), F = uint64_t(hp.nFf);
    // gemma3's sliding layers have their own RoPE base and scale: a second table
    const uint64_t ropeTables = hp.ropeFreqBaseSliding != hp.ropeFreqBase || hp.ropeFreqScaleSliding != hp.ropeFreqScale ? 2 : 1;
    const uint64_t floats = m * (3 * E + 2 * Q + 2 * KV + 2 * F)  // x, xn, tmp, q, att, k, v, gate, up
                            + uint64_t(hp.nVocab)                  // logits
                            + uint64_t(shape.nCtx) * uint64_t(hp.nRot) * ropeTables  // RoPE tables
                            + (hp.arch.fusedQkv || hp.arch.fusedGateUp ? m * std::max(Q + 2 * KV, 2 * F) : 0)  // fused outputs
                            + attentionScratchFloats(std::max(shape.threads, 1), hp.nHead, hp.nHeadKv, hp.headDim, shape.nCtx);
    need.buffers = floats * 4 + largestTemporary;
    return need;
}

int32_t largestFittingContext(const GgufFile& file, const LlamaHParams& hp, LoadShape shape, const MemoryFigures& have) {
    int32_t lo = 0, hi = shape.nCtx;  // lo fits (0 trivially), find the largest
    while (lo < hi) {
        const int32_t mid = lo + (hi - lo + 1) / 2;
        shape.nCtx = mid;
        if (findMemoryShortfall(estimateLoadMemory(file, hp, shape), have)) hi = mid - 1;
        else lo = mid;
    }
    return lo;
}

}  // namespace inferscope
