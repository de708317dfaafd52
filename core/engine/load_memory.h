#pragma once
// What loading a model will hold in memory, computed from the file's header before anything is
// allocated, and whether that fits the machine now. One set of functions for every question of
// the kind: Engine::load's check, its default context, `inferscope-cli models list`'s fit column
// and the hub client's fit for a file not yet downloaded (header read by HTTP range requests).

#include <cstdint>
#include <optional>

#include "common/memory_budget.h"
#include "gguf/gguf_file.h"
#include "kv_cache/kv_cache.h"
#include "model/llama_hparams.h"
#include "model/llama_model.h"

namespace inferscope {

struct LoadShape {
    ComputePrecision precision = ComputePrecision::Auto;
    int32_t nCtx = 0;       // the context the cache is made for (after capping)
    int32_t batch = 512;    // most tokens per forward pass (capped to nCtx)
    KvType kvType = KvType::F32;
    int threads = 1;        // compute threads (attention scratch is per thread)
};

// Everything of a model's header that its memory need depends on, for one compute precision:
// plain numbers, so that a catalog can keep them with its header cache and answer "does it fit"
// again (another context, another KV type, memory freed meanwhile) without reading the file.
struct LoadFootprint {
    ComputePrecision precision = ComputePrecision::Auto;
    uint64_t weightsMapped = 0;      // used in place from the mapping
    uint64_t weightsConverted = 0;   // copies made at load for this precision
    uint64_t largestTemporary = 0;   // the biggest conversion temporary (Int8's plain s8 copy)
    // The shape the cache and the buffers follow.
    int32_t nLayer = 0, nHead = 0, nHeadKv = 0, headDim = 0, nEmbd = 0, nFf = 0, nVocab = 0, nRot = 0;
    int32_t nCtxTrain = 0;
    bool fusedOutputs = false;       // a fused QKV or gate|up matrix: one more activation of its width
    uint32_t ropeTables = 1;         // gemma3's sliding layers have a second RoPE table

    // What a load of this shape will hold. shape.precision must be the footprint's.
    MemoryNeed need(const LoadShape& shape) const;
};

// Weights as ComputeDevice::makeLinear will hold them: a matrix whose stored type the compute type
// reads directly stays mapped (F32 and F16 for F32 compute, BF16 for BF16, any block type for
// Auto), any other is converted (to f32, bf16, or s8 + per-row scales for Int8); token_embd is read
// row by row from the mapping. Only the tensors' table is read: a header fetched without its data
// (GgufFile::parseHeader) will do.
LoadFootprint loadFootprint(const GgufFile& file, const LlamaHParams& hp, ComputePrecision precision);

// KV cache: 2 × layers × KV heads × head dim × element size × nCtx. Buffers: the context's
// activations, RoPE table, attention scratch and logits, plus the largest conversion temporary.
MemoryNeed estimateLoadMemory(const GgufFile& file, const LlamaHParams& hp, const LoadShape& shape);

// The largest context (<= shape.nCtx) whose need fits `have`, or 0 when not even one position does.
int32_t largestFittingContext(const LoadFootprint& footprint, LoadShape shape, const MemoryFigures& have);
int32_t largestFittingContext(const GgufFile& file, const LlamaHParams& hp, LoadShape shape, const MemoryFigures& have);

// Fit, before loading: the shape as asked (shape.nCtx: the context wanted) against the memory
// available now.
enum class FitVerdict {
    Fits,                // as asked
    FitsSmallerContext,  // only with a context of `context` tokens (< the one asked)
    DoesNotFit,          // not even one position: the weights alone are too much
};
struct FitAssessment {
    FitVerdict verdict = FitVerdict::DoesNotFit;
    int32_t context = 0;                      // the context that fits: as asked, smaller, or 0
    MemoryNeed need;                          // at `context` when it fits, else at the context asked
    std::optional<MemoryShortfall> shortfall; // at the context asked (none when it fits)
};
FitAssessment assessFit(const LoadFootprint& footprint, const LoadShape& shape, const MemoryFigures& have);
// "fits", "fits with a smaller context (1024)", "does not fit"
std::string fitVerdictText(const FitAssessment& fit);

}  // namespace inferscope
