#pragma once
// The fields of ggml's quantized blocks as both decoders read them: quant_blocks.cpp (to f32) and
// quant_blocks_bf16.cpp (straight to bf16) unpack every scale the same way, so that both give
// ggml's values. Private to gguf/'s kernel-set sources (compiled once per set, common/kernel_set.h):
// internal linkage here, as when they were one file.

#include <cstdint>
#include <cstring>

#include "gguf/ggml_types.h"

#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace inferscope::INFERSCOPE_KERNELS_NS {
namespace {

inline float half(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
#if defined(__F16C__)
    return _cvtsh_ss(h);  // exact for every half, subnormals included: fp16ToFp32's value, inline
#else
    return fp16ToFp32(h);
#endif
}

// The 5th bits of a Q5 block: bit j of qh belongs to element j (0..31).
inline uint32_t highBits(const uint8_t* qh) {
    uint32_t v;
    std::memcpy(&v, qh, 4);
    return v;
}

// Q3_K's 16 six-bit scales in 12 bytes: the low 4 bits of scale i are the low (i < 8) or high
// (i >= 8) nibble of byte i % 8; its high 2 bits are bits 2·(i / 4) of byte 8 + i % 4.
inline int q3Scale(const uint8_t* s, int i) {
    const int low = i < 8 ? s[i] & 0x0F : s[i - 8] >> 4;
    const int high = (s[8 + i % 4] >> (2 * (i / 4))) & 3;
    return (low | high << 4) - 32;
}

// Q4_K / Q5_K: 8 six-bit scales and 8 six-bit mins in 12 bytes. Sub-blocks 0..3 take the low 6 bits
// of bytes j (scale) and j + 4 (min); sub-blocks 4..7 a nibble of byte j + 4 plus the top 2 bits of
// bytes j - 4 (scale) and j (min).
inline void scaleMinK4(const uint8_t* s, int j, int& scale, int& min) {
    if (j < 4) {
        scale = s[j] & 63;
        min = s[j + 4] & 63;
    } else {
        scale = (s[j + 4] & 0x0F) | (s[j - 4] >> 6) << 4;
        min = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
    }
}

// IQ4_XS's 6-bit scale of sub-block ib, less 32: 4 low bits from scales_l, 2 high from scales_h.
inline int iq4_xsScale(const uint8_t* b, int ib) {
    uint16_t scalesH;
    std::memcpy(&scalesH, b + 2, 2);
    const uint8_t* scalesL = b + 4;
    return (((scalesL[ib / 2] >> (4 * (ib % 2))) & 0x0F) | ((scalesH >> (2 * ib)) & 3) << 4) - 32;
}

}  // namespace

// quant_blocks_bf16.cpp's entries of this set's decode table (gguf/decode_kernels.h), which
// quant_blocks.cpp fills.
bool dequantizeRowBf16(GgmlType type, const void* src, uint16_t* dst, size_t n);
void fp32ToBf16Row(const float* src, uint16_t* dst, size_t n);

}  // namespace inferscope::INFERSCOPE_KERNELS_NS
