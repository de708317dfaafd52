#pragma once
// Quantizers for the block formats synth writes, the reference algorithms ggml uses when no importance
// matrix is given (ggml-quants.c `quantize_row_*_ref`): the same float32 operations in the same order,
// so the blocks are byte-identical to llama-quantize's (tests/core/test_quant_encode.cpp memcmps the dense
// goldens ggml_quantize_chunk made). This file is compiled with -ffp-contract=off, as ggml's reference
// rounds every product separately.
//
//   Q4_0, Q5_0   per 32: d = (signed max) / -8 (-16); q = trunc(x/d + 8.5 (16.5)), clamped
//   Q5_1         per 32: d = (max - min) / 31, m = min; q = trunc((x - m)/d + 0.5)
//   Q8_0         per 32: d = max|x| / 127; q = round(x/d)
//   Q4_K, Q5_K   per 256: 8 sub-blocks of 32, each a (scale, min) fitted by weighted least squares
//                over 21 (16) candidate grids (make_qkx2_quants), both quantized to 6 bits
//                against the block's largest, then every value re-rounded with the stored factors
//   Q6_K         per 256: 16 sub-blocks of 16, each scale the best of 19 candidate grids weighted by
//                x² (make_qx_quants), scales to int8 against the largest, values re-rounded

#include <cstddef>
#include <cstdint>

#include "gguf/ggml_types.h"

namespace inferscope {

// True for the types quantizeBlocks writes.
bool canQuantizeBlocks(GgmlType type);

// Quantizes n floats (a multiple of the type's block size) at src into n / blockSize blocks at dst.
// `type` must satisfy canQuantizeBlocks.
void quantizeBlocks(GgmlType type, const float* src, uint8_t* dst, size_t n);

}  // namespace inferscope
