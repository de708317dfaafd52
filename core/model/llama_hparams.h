#pragma once
// Hyperparameters of a Llama-family model (llama, qwen2, qwen3, gemma2, gemma3, phi3), read only
// from the GGUF metadata `<arch>.*` keys. What the architecture changes in the forward pass is `arch`.

#include <cstdint>
#include <string>

#include "common/error.h"
#include "gguf/gguf_file.h"
#include "model/arch_options.h"

namespace inferscope {

struct LlamaHParams {
    std::string architecture;     // general.architecture ("llama", "qwen2", ...)
    ArchOptions arch;             // what that architecture changes (arch_options.h)
    int32_t nVocab = 0;           // rows of token_embd
    int32_t nCtxTrain = 0;        // {arch}.context_length
    int32_t nEmbd = 0;            // {arch}.embedding_length
    int32_t nLayer = 0;           // {arch}.block_count
    int32_t nHead = 0;            // {arch}.attention.head_count
    int32_t nHeadKv = 0;          // {arch}.attention.head_count_kv (defaults to nHead)
    int32_t nFf = 0;              // {arch}.feed_forward_length
    int32_t headDim = 0;          // {arch}.attention.key_length (= value_length), else nEmbd / nHead
    int32_t nRot = 0;             // {arch}.rope.dimension_count (defaults to headDim)
    double ropeFreqBase = 10000;  // {arch}.rope.freq_base
    double ropeFreqScale = 1;     // 1 / {arch}.rope.scaling.factor for linear scaling
    float rmsEps = 1e-5f;         // {arch}.attention.layer_norm_rms_epsilon
    // Sliding-window layers (arch.isSlidingLayer) may use their own RoPE: gemma3's local layers
    // use base 10000 without scaling; otherwise these equal ropeFreqBase / ropeFreqScale.
    double ropeFreqBaseSliding = 10000;
    double ropeFreqScaleSliding = 1;
    int32_t slidingWindow = 0;    // {arch}.attention.sliding_window: key j visible from query i iff i - j < window; 0 = none
    float attnSoftCap = 0;        // {arch}.attn_logit_softcapping: scores → cap·tanh(scores / cap); 0 = off
    float finalSoftCap = 0;       // {arch}.final_logit_softcapping: logits → cap·tanh(logits / cap); 0 = off
    float attentionScale = 0;     // scores = q·k · this; 0 = 1/√head_dim. Gemma 2/3 27B: 1/√(n_embd / n_head)

    int32_t qDim() const { return nHead * headDim; }
    int32_t kvDim() const { return nHeadKv * headDim; }
    int32_t gqaGroup() const { return nHead / nHeadKv; }  // query heads per KV head
    // True when layer il attends only to the last slidingWindow positions.
    bool isSlidingLayer(int32_t il) const { return slidingWindow > 0 && arch.isSlidingLayer(il); }
};

// Reads and validates the hyperparameters (a supported architecture; divisibility and sane bounds).
// nVocab is taken from token_embd.weight.
Result<LlamaHParams> readLlamaHParams(const GgufFile& file);

}  // namespace inferscope
