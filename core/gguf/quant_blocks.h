#pragma once
// The quantized block formats llama-quantize writes (without an importance matrix), decoded to f32
// exactly as ggml decodes them: the same float32 operations in the same order, so every value is
// bit-identical to ggml's `dequantize_row_*` (tests/core/test_quant_blocks.cpp memcmps goldens).
//
// A block holds `blockSize` consecutive weights of one row. Layouts (little-endian, packed, `half`
// = IEEE fp16), as in ggml-common.h:
//   Q4_0   32 / 18 B   d, qs[16]                       w = (q - 8)·d, low nibbles = 0..15
//   Q4_1   32 / 20 B   d, m, qs[16]                    w = q·d + m
//   Q5_0   32 / 22 B   d, qh[4], qs[16]                5th bit j of qh → element j; w = (q - 16)·d
//   Q5_1   32 / 24 B   d, m, qh[4], qs[16]             w = q·d + m
//   Q8_0   32 / 34 B   d, qs[32] (int8)                w = q·d
//   Q2_K  256 / 84 B   scales[16], qs[64], d, dmin     16 × 16: (d·sc)·q - dmin·m, 4-bit sc and m
//   Q3_K  256 / 110 B  hmask[32], qs[64], scales[12], d  16 × 16: (d·(sc - 32))·(q - 4·!hbit), 6-bit sc
//   Q4_K  256 / 144 B  d, dmin, scales[12], qs[128]    8 × 32: (d·sc)·q - dmin·m, 6-bit sc and m
//   Q5_K  256 / 176 B  d, dmin, scales[12], qh[32], qs[128]  as Q4_K with a 5th bit from qh
//   Q6_K  256 / 210 B  ql[128], qh[64], scales[16] (int8), d   16 × 16: (d·sc)·(q - 32)
//   IQ4_NL 32 / 18 B   d, qs[16]                       w = d·table[nibble]
//   IQ4_XS 256 / 136 B d, scales_h (u16), scales_l[4], qs[128]  8 × 32: (d·(sc - 32))·table[nibble]

#include <cstddef>
#include <cstdint>

#include "gguf/ggml_types.h"

namespace inferscope {

// True for the block types above (not F32/F16/BF16, which are plain element types).
bool isQuantizedBlockType(GgmlType type);

// Decodes `nBlocks` consecutive blocks of `type` at src (any alignment) into nBlocks × blockSize
// floats at dst. `type` must satisfy isQuantizedBlockType.
void dequantizeBlocks(GgmlType type, const uint8_t* src, float* dst, size_t nBlocks);

// A Q4_K / Q5_K super-block's 8 sub-block factors as the decoder computes them: dl[j] = d·scale_j,
// ml[j] = dmin·min_j (weight = dl·q - ml). `block` points at the block's start (d, dmin, scales).
void quantScaleMinsK4(const uint8_t* block, float dl[8], float ml[8]);

// The non-linear 4-bit code book of IQ4_NL and IQ4_XS.
inline constexpr int8_t kIq4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

}  // namespace inferscope

// In a kernel set's sources (common/kernel_set.h): the same set's decoders, called directly and
// qualified (INFERSCOPE_KERNELS_NS::dequantizeRow), since an unqualified call would also find the
// public dispatching one by argument-dependent lookup.
#ifdef INFERSCOPE_KERNELS_NS
namespace inferscope::INFERSCOPE_KERNELS_NS {
void dequantizeRow(GgmlType type, const void* src, float* dst, size_t n);
void dequantizeBlocks(GgmlType type, const uint8_t* src, float* dst, size_t nBlocks);
}  // namespace inferscope::INFERSCOPE_KERNELS_NS
#endif
