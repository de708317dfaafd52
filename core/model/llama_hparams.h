#pragma once
// Hyperparameters of a Llama-family model, read only from the GGUF metadata.

#include <cstdint>
#include <string>

#include "common/error.h"
#include "gguf/gguf_file.h"

namespace inferscope {

struct LlamaHParams {
    std::string architecture;     // general.architecture ("llama")
    int32_t nVocab = 0;           // rows of token_embd
    int32_t nCtxTrain = 0;        // {arch}.context_length
    int32_t nEmbd = 0;            // {arch}.embedding_length
    int32_t nLayer = 0;           // {arch}.block_count
    int32_t nHead = 0;            // {arch}.attention.head_count
    int32_t nHeadKv = 0;          // {arch}.attention.head_count_kv (defaults to nHead)
    int32_t nFf = 0;              // {arch}.feed_forward_length
    int32_t headDim = 0;          // nEmbd / nHead
    int32_t nRot = 0;             // {arch}.rope.dimension_count (defaults to headDim)
    double ropeFreqBase = 10000;  // {arch}.rope.freq_base
    double ropeFreqScale = 1;     // 1 / {arch}.rope.scaling.factor for linear scaling
    float rmsEps = 1e-5f;         // {arch}.attention.layer_norm_rms_epsilon

    int32_t qDim() const { return nHead * headDim; }
    int32_t kvDim() const { return nHeadKv * headDim; }
    int32_t gqaGroup() const { return nHead / nHeadKv; }  // query heads per KV head
};

// Reads and validates the hyperparameters (architecture llama; divisibility and sane bounds).
// nVocab is taken from token_embd.weight.
Result<LlamaHParams> readLlamaHParams(const GgufFile& file);

}  // namespace inferscope
