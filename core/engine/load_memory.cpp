#include "engine/load_memory.h"

#include <algorithm>
#include <fmt/format.h>

#include "backend/kernels.h"
#include "gguf/quant_blocks.h"

namespace inferscope {

LoadFootprint loadFootprint(const GgufFile& file, const LlamaHParams& hp, ComputePrecision precision) {
    LoadFootprint fp;
    fp.precision = precision;
    const bool tied = file.findTensor("output.weight") == nullptr;
    // A matrix as makeLinear holds it. `countMapped` false: its mapped bytes are counted already.
    auto matrix = [&](const GgufTensorInfo& t, bool countMapped) {
        const uint64_t rows = t.ne[1], elements = t.nElements;
        const GgmlType type = t.type();
        const bool bf16 = precision == ComputePrecision::BF16 || (precision == ComputePrecision::Auto && type == GgmlType::BF16);
        if (precision == ComputePrecision::Int8) {
            fp.weightsConverted += elements + rows * 4;                   // s8 packed + per-row scales
            fp.largestTemporary = std::max(fp.largestTemporary, elements);  // the plain s8 copy before packing
        } else if (bf16 ? type == GgmlType::BF16
                        : type == GgmlType::F32 || type == GgmlType::F16 ||
                              (precision == ComputePrecision::Auto && isQuantizedBlockType(type))) {
            if (countMapped) fp.weightsMapped += t.nBytes;  // used in place
        } else {
            fp.weightsConverted += elements * (bf16 ? 2 : 4);
        }
    };
    for (const GgufTensorInfo& t : file.tensors()) {
        if (t.name == "token_embd.weight") {
            fp.weightsMapped += t.nBytes;  // rows are looked up in the mapping
            if (tied) matrix(t, false);    // and it is the LM head too
        } else if (t.nDims == 2) {
            matrix(t, true);
        } else {
            fp.weightsMapped += t.nBytes;  // norms, rope_freqs: a few KB
        }
    }
    fp.nLayer = hp.nLayer;
    fp.nHead = hp.nHead;
    fp.nHeadKv = hp.nHeadKv;
    fp.headDim = hp.headDim;
    fp.nEmbd = hp.nEmbd;
    fp.nFf = hp.nFf;
    fp.nVocab = hp.nVocab;
    fp.nRot = hp.nRot;
    fp.nCtxTrain = hp.nCtxTrain;
    fp.fusedOutputs = hp.arch.fusedQkv || hp.arch.fusedGateUp;
    fp.ropeTables = hp.ropeFreqBaseSliding != hp.ropeFreqBase || hp.ropeFreqScaleSliding != hp.ropeFreqScale ? 2 : 1;
    return fp;
}

MemoryNeed LoadFootprint::need(const LoadShape& shape) const {
    MemoryNeed n;
    n.weightsMapped = weightsMapped;
    n.weightsConverted = weightsConverted;
    n.kvCache = 2 * uint64_t(nLayer) * uint64_t(nHeadKv) * kvRowBytes(shape.kvType, headDim) * uint64_t(shape.nCtx);
    const uint64_t m = uint64_t(std::clamp(shape.batch, 1, std::max(shape.nCtx, 1)));
    const uint64_t E = uint64_t(nEmbd), Q = uint64_t(nHead) * uint64_t(headDim), KV = uint64_t(nHeadKv) * uint64_t(headDim),
                   F = uint64_t(nFf);
    const uint64_t floats = m * (3 * E + 2 * Q + 2 * KV + 2 * F)                        // x, xn, tmp, q, att, k, v, gate, up
                            + uint64_t(nVocab)                                         // logits
                            + uint64_t(shape.nCtx) * uint64_t(nRot) * ropeTables       // RoPE tables
                            + (fusedOutputs ? m * std::max(Q + 2 * KV, 2 * F) : 0)     // fused outputs
                            + attentionScratchFloats(std::max(shape.threads, 1), nHead, std::max(nHeadKv, 1), headDim, shape.nCtx);
    n.buffers = floats * 4 + largestTemporary;
    return n;
}

MemoryNeed estimateLoadMemory(const GgufFile& file, const LlamaHParams& hp, const LoadShape& shape) {
    return loadFootprint(file, hp, shape.precision).need(shape);
}

int32_t largestFittingContext(const LoadFootprint& footprint, LoadShape shape, const MemoryFigures& have) {
    int32_t lo = 0, hi = shape.nCtx;  // lo fits (0 trivially), find the largest
    while (lo < hi) {
        const int32_t mid = lo + (hi - lo + 1) / 2;
        shape.nCtx = mid;
        if (findMemoryShortfall(footprint.need(shape), have)) hi = mid - 1;
        else lo = mid;
    }
    return lo;
}

int32_t largestFittingContext(const GgufFile& file, const LlamaHParams& hp, LoadShape shape, const MemoryFigures& have) {
    return largestFittingContext(loadFootprint(file, hp, shape.precision), shape, have);
}

FitAssessment assessFit(const LoadFootprint& footprint, const LoadShape& shape, const MemoryFigures& have) {
    FitAssessment fit;
    fit.need = footprint.need(shape);
    fit.shortfall = findMemoryShortfall(fit.need, have);
    if (!fit.shortfall) {
        fit.verdict = FitVerdict::Fits;
        fit.context = shape.nCtx;
        return fit;
    }
    fit.context = largestFittingContext(footprint, shape, have);
    if (fit.context == 0) return fit;  // DoesNotFit
    fit.verdict = FitVerdict::FitsSmallerContext;
    LoadShape smaller = shape;
    smaller.nCtx = fit.context;
    fit.need = footprint.need(smaller);
    return fit;
}

std::string fitVerdictText(const FitAssessment& fit) {
    switch (fit.verdict) {
        case FitVerdict::Fits: return "fits";
        case FitVerdict::FitsSmallerContext: return fmt::format("fits with a smaller context ({})", fit.context);
        case FitVerdict::DoesNotFit: return "does not fit";
    }
    return "?";
}

}  // namespace inferscope
