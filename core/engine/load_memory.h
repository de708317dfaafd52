#pragma once
// What loading a model will hold in memory, computed from the file's header before anything is
// allocated (Engine::load compares it with the machine: common/memory_budget.h).

#include <cstdint>

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

// Weights as ComputeDevice::makeLinear will hold them: a matrix whose stored type the compute type
// reads directly stays mapped (F32 and F16 for F32 compute, BF16 for BF16), any other is converted
// (to f32, bf16, or s8 + per-row scales for Int8); token_embd is read row by row from the mapping.
// KV cache: 2 × layers × KV heads × head dim × element size × nCtx. Buffers: the context's
// activations, RoPE table, attention scratch and logits, plus the largest conversion temporary.
MemoryNeed estimateLoadMemory(const GgufFile& file, const LlamaHParams& hp, const LoadShape& shape);

// The largest context (<= shape.nCtx) whose need fits `have`, or 0 when not even one position does.
int32_t largestFittingContext(const GgufFile& file, const LlamaHParams& hp, LoadShape shape, const MemoryFigures& have);

}  // namespace inferscope
