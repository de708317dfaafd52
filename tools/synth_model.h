#pragma once
// Random-weight Llama models of real shapes, for benchmarks: speed does not depend on the weight
// values, so a file of TinyLlama's shape measures TinyLlama's speed without a download.
//
// Weights are N(0, 0.02²) from a seeded counter-based generator (the same seed gives the same
// file), norms are 1.0, the vocabulary (tokenizer.* metadata) is copied from a GGUF that has one,
// so the file tokenizes and loads anywhere GGUF loads. Tensors are streamed to disk through
// GgufWriter producers: memory stays constant whatever the model size.

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

#include "common/error.h"
#include "gguf/ggml_types.h"

namespace inferscope {

struct SynthShape {
    std::string_view name;
    int32_t nEmbd, nLayer, nHead, nHeadKv, nFf, nVocab, nCtx;
    int32_t headDim = 0;           // 0: nEmbd / nHead; else written as attention.key_length/value_length
    bool tiedEmbeddings = false;   // no output.weight: the LM head is the token embedding
    bool ropeFreqs = false;        // rope_freqs.weight: Llama 3.1's per-frequency divisors (factor 8)
    float ropeBase = 10000.0f;
    // The vocabulary copied by default: "llama-spm" (tests/data, Llama 2's 32000 tokens) or the name
    // of a file ../shared/models/tokenizer/ggml-vocab-<name>.gguf ("llama-bpe", "qwen2", "phi-3").
    std::string_view vocab = "llama-spm";
};

// tinyllama-1.1b (2048, 22 layers, 32/4 heads, FFN 5632, vocab 32000), llama-110m (768, 12, 12/12,
// 2048, 32000), stories260k (64, 5, 8/4, 172, 512: the bundled model's shape) and stories260k-wide
// (256, 5, 8/4, 256, 512: its zero-padded twin in ../shared/models/quant, whose rows are whole
// K-quant blocks); and the shapes users run, every matrix as the real model has it (all written as
// architecture "llama": what the others add — Qwen's Q/K/V biases, Gemma's extra norms and sliding
// window, Phi-3's fused QKV and gate|up — is < 0.1% of the bytes a token reads):
//   llama-3.2-1b (2048, 16, 32/8, 8192, vocab 128256, tied, rope_freqs, base 5e5),
//   llama-3.2-3b (3072, 28, 24/8, 8192, 128256, tied, rope_freqs), llama-3.1-8b (4096, 32, 32/8,
//   14336, 128256, rope_freqs), qwen2.5-1.5b (1536, 28, 12/2, 8960, 151936, tied, base 1e6),
//   qwen2.5-7b (3584, 28, 28/4, 18944, 152064), gemma-3-4b (2560, 34, 8/4 of head dim 256, 10240,
//   262144, tied, base 1e6), phi-3-mini (3072, 32, 32/32, 8192, 32064).
std::span<const SynthShape> synthShapes();
Result<SynthShape> findSynthShape(std::string_view name);
// "f32" | "f16" | "bf16" | "q8_0" | "q4_0" | "q6_k" | "q4_k_m" (→ Q4_K) | "q5_k_m" (→ Q5_K)
Result<GgmlType> parseSynthType(std::string_view text);

struct SynthOptions {
    SynthShape shape;
    GgmlType type = GgmlType::F32;   // the file's type; norms stay F32. F32/F16/BF16/Q8_0: every
                                     // matrix (Q8_0 keeps rows that are not whole blocks in F32);
                                     // Q4_0, Q6_K, and Q4_K / Q5_K as the Q4_K_M / Q5_K_M mixes:
                                     // llama-quantize's choice per tensor (quant_mix.h)
    uint64_t seed = 1;
    std::filesystem::path vocabFrom;  // a GGUF whose tokenizer.* metadata is copied; its token count
                                      // must be at most shape.nVocab: the rest are padded with unused
                                      // pieces "[PAD<id>]" (as Qwen's and Gemma's files pad theirs)
};

// Bytes the file will have (for messages before a multi-GB write).
uint64_t synthModelBytes(const SynthOptions& options);
Result<void> writeSynthModel(const SynthOptions& options, const std::filesystem::path& out);

}  // namespace inferscope
