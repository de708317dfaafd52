#pragma once
// What a GGUF model is, read from its header alone (no weights loaded): for `inferscope-cli info`,
// the app's model panel and the status bar.

#include <cstdint>
#include <map>
#include <string>

#include "common/error.h"
#include "gguf/gguf_file.h"
#include "model/llama_hparams.h"

namespace inferscope {

struct ModelInfo {
    std::string name;                        // general.name, or the file name when that is missing or generic
    LlamaHParams hparams;
    uint32_t ggufVersion = 0;
    uint64_t fileBytes = 0;
    uint64_t nParams = 0;                    // elements of all tensors
    uint64_t weightBytes = 0;                // bytes of all tensors as stored
    std::map<std::string, int> tensorTypes;  // "F32" -> number of tensors
    // What one decode step reads of the weights as stored: every matrix and norm, one row of the
    // token embedding (the whole embedding again when it is the tied LM head).
    uint64_t decodeBytesPerToken = 0;
    double bitsPerWeight = 0;                // 8 × weightBytes / nParams
    bool tiedOutput = false;                 // no output.weight: the LM head reuses token_embd
    std::string tokenizerModel;              // tokenizer.ggml.model
    std::string chatTemplate;                // tokenizer.chat_template, when present
    uint64_t kvBytesPerTokenF32 = 0;         // 2 × layers × KV heads × head dim × 4
    uint64_t kvBytesPerTokenF16 = 0;
};

Result<ModelInfo> describeModel(const GgufFile& file, const std::string& fallbackName);

// "Q4_K ×155, Q6_K ×23, F32 ×45": the types present, most tensors first.
std::string tensorTypesSummary(const ModelInfo& info);

}  // namespace inferscope
