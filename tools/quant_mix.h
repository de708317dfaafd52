#pragma once
// Which type llama-quantize gives each tensor of a Llama model for a file type, without an
// importance matrix (llama.cpp src/llama-quant.cpp, llama_tensor_get_type), so a synthesized
// Q4_K_M has the same tensors in Q6_K as a downloaded one:
//   - output.weight: Q6_K (Q8_0 for a Q8_0 file, or when its rows are not whole blocks of the base);
//   - Q4_K_M, Q5_K_M: attn_v and ffn_down in Q6_K on the "more bits" layers, i.e. layer i of n with
//     i < n/8, i >= 7n/8 or (i - n/8) % 3 == 2 (the first and last eighth and every third between);
//   - every other matrix (token_embd included) in the base type;
//   - a row length that is not a multiple of the chosen type's block falls back as llama-quantize
//     does: Q4_K → Q5_0, Q5_K → Q5_1, Q6_K → Q8_0, and to F16 when that still does not divide it
//     (llama-quantize refuses a Q4_0 or Q8_0 tensor of such rows; we write F16 there too, except that
//     a plain Q8_0 synth keeps F32 as it always has).
// Norms (1-D) are never quantized; callers keep them F32.

#include <cstdint>

#include "gguf/ggml_types.h"

namespace inferscope {

enum class MatrixRole { TokenEmbedding, Output, AttnV, FfnDown, Other };

// `base` is the file's type: F32, F16, BF16, Q8_0, Q4_0, Q6_K, or Q4_K / Q5_K meaning the
// Q4_K_M / Q5_K_M mixes. `rowLength` = ne[0].
GgmlType quantMixType(GgmlType base, MatrixRole role, int layer, int nLayer, uint64_t rowLength);

// general.file_type (llama_ftype) of a file of that base: 0 F32, 1 F16, 2 Q4_0, 7 Q8_0,
// 15 Q4_K_M, 17 Q5_K_M, 18 Q6_K, 32 BF16.
uint32_t quantMixFileType(GgmlType base);

}  // namespace inferscope
