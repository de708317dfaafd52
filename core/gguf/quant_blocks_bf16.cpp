// Quantized blocks straight to bf16 (prefill's tiles, on a CPU with AVX512-BF16, chosen at run
// time) and f32 rows rounded to bf16: this kernel set's dequantizeRowBf16 and fp32ToBf16Row. The
// products are the f32 decoders' (quant_blocks.cpp), in the same order, and this file is compiled
// with -ffp-contract=off as that one is (core/CMakeLists.txt), so that each value rounds from
// ggml's f32 bits.

// Compiled once per kernel set (common/kernel_set.h): the AVX-512 part exists in the avx512 set
// only, the AVX2 part of fp32ToBf16Row in the avx2 and avx512 sets.

#include "gguf/decode_kernels.h"
#include "gguf/quant_block_fields.h"
#include "gguf/quant_blocks.h"

#if defined(__AVX__)
#include <immintrin.h>
#endif

namespace inferscope::INFERSCOPE_KERNELS_NS {

// Round to nearest even on the bits, as fp32ToBf16; a group holding a NaN takes the scalar path
// (which keeps it a quiet NaN).
#if defined(__AVX512BW__)
#pragma GCC push_options
#pragma GCC target("avx512bf16")
namespace {

// vcvtne2ps2bf16 rounds to nearest even and quiets a NaN as fp32ToBf16 does, but reads a subnormal
// as zero: 32 at a time, each group holding one (a dequantized weight never is one: ggml's values
// are multiples of 2^-24) converted by fp32ToBf16. Returns the elements done.
size_t fp32ToBf16RowHardware(const float* src, uint16_t* dst, size_t n) {
    if (!cpuHasAvx512Bf16()) return 0;
    const __m512i absMask = _mm512_set1_epi32(0x7fffffff), one = _mm512_set1_epi32(1), below = _mm512_set1_epi32(0x007fffff);
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        const __m512 a = _mm512_loadu_ps(src + i), b = _mm512_loadu_ps(src + i + 16);
        // 0 < |x| < 2^-126 <=> |x| - 1 < 0x7fffff as unsigned bits
        const __mmask16 subA = _mm512_cmplt_epu32_mask(_mm512_sub_epi32(_mm512_and_si512(_mm512_castps_si512(a), absMask), one), below);
        const __mmask16 subB = _mm512_cmplt_epu32_mask(_mm512_sub_epi32(_mm512_and_si512(_mm512_castps_si512(b), absMask), one), below);
        if ((subA | subB) != 0) {
            for (size_t j = i; j < i + 32; ++j) dst[j] = fp32ToBf16(src[j]);
            continue;
        }
        _mm512_storeu_si512(dst + i, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(b, a)));
    }
    return i;
}

// ---- straight to bf16 (prefill's tiles): the f32 decoders' products, in the same order, rounded
// by vcvtne2ps2bf16 (their values are multiples of 2^-24, never subnormal: fp32ToBf16's bits).

inline void storeBf16(uint16_t* dst, __m512 first, __m512 second) {
    _mm512_storeu_si512(dst, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(second, first)));
}

// 32 bytes (element order) as float, 16 per register: unsigned, or signed.
inline __m512 firstHalfPs(__m256i v) { return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm256_castsi256_si128(v))); }
inline __m512 secondHalfPs(__m256i v) { return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm256_extracti128_si256(v, 1))); }
inline __m512 firstHalfSignedPs(__m256i v) { return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_castsi256_si128(v))); }
inline __m512 secondHalfSignedPs(__m256i v) { return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_extracti128_si256(v, 1))); }

// 16 bytes of nibbles as 32 bytes 0..15 in element order (low nibbles 0..15, high 16..31).
inline __m256i nibbles32(const uint8_t* p) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), mask = _mm_set1_epi8(0x0F);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), mask), _mm_and_si128(v, mask));
}

void q8_0Bf16(const uint8_t* b, uint16_t* y) {  // float(q) * d
    const __m512 d = _mm512_set1_ps(half(b));
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 2));
    storeBf16(y, _mm512_mul_ps(firstHalfSignedPs(q), d), _mm512_mul_ps(secondHalfSignedPs(q), d));
}

void q4_0Bf16(const uint8_t* b, uint16_t* y) {  // float(q - 8) * d
    const __m512 d = _mm512_set1_ps(half(b)), eight = _mm512_set1_ps(8.0f);
    const __m256i q = nibbles32(b + 2);  // q - 8 below is exact: small integers
    storeBf16(y, _mm512_mul_ps(_mm512_sub_ps(firstHalfPs(q), eight), d), _mm512_mul_ps(_mm512_sub_ps(secondHalfPs(q), eight), d));
}

// 32 unsigned bytes as d·float(q) - m (q4_K, q5_K).
inline void scaleMinToBf16(__m256i q, __m512 d, __m512 m, uint16_t* y) {
    storeBf16(y, _mm512_sub_ps(_mm512_mul_ps(d, firstHalfPs(q)), m), _mm512_sub_ps(_mm512_mul_ps(d, secondHalfPs(q)), m));
}

// Q4_K/Q5_K group g (sub-blocks 2g and 2g + 1): their scales d·sc and mins dmin·m, as q4_K computes them.
struct GroupScales {
    __m512 d1, m1, d2, m2;
};
inline GroupScales groupScalesK4(const uint8_t* scales, float d, float dmin, int g) {
    int sc1, m1, sc2, m2;
    scaleMinK4(scales, 2 * g, sc1, m1);
    scaleMinK4(scales, 2 * g + 1, sc2, m2);
    return {_mm512_set1_ps(d * float(sc1)), _mm512_set1_ps(dmin * float(m1)), _mm512_set1_ps(d * float(sc2)), _mm512_set1_ps(dmin * float(m2))};
}

void q4_KBf16(const uint8_t* b, uint16_t* y) {  // d1 * float(q) - m1, as q4_K
    const float d = half(b), dmin = half(b + 2);
    const uint8_t* q = b + 16;
    const __m256i mask = _mm256_set1_epi8(0x0F);
    for (int g = 0; g < 4; ++g, q += 32, y += 64) {
        const GroupScales s = groupScalesK4(b + 4, d, dmin, g);
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
        scaleMinToBf16(_mm256_and_si256(v, mask), s.d1, s.m1, y);
        scaleMinToBf16(_mm256_and_si256(_mm256_srli_epi16(v, 4), mask), s.d2, s.m2, y + 32);
    }
}

void q5_KBf16(const uint8_t* b, uint16_t* y) {  // d1 * float(q + 16·bit) - m1, as q5_K
    const float d = half(b), dmin = half(b + 2);
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 16));
    const uint8_t* q = b + 48;
    const __m256i mask = _mm256_set1_epi8(0x0F), bit = _mm256_set1_epi8(0x10);
    for (int g = 0; g < 4; ++g, q += 32, y += 64) {
        const GroupScales s = groupScalesK4(b + 4, d, dmin, g);
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
        // bit 2g (2g + 1) of qh[l] moved to bit 4: 16-bit shifts, right first so that neither byte's
        // bit leaves its word, then masked per byte
        const __m256i shifted = _mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * g));
        const __m256i h1g = _mm256_and_si256(_mm256_slli_epi16(shifted, 4), bit);
        const __m256i h2g = _mm256_and_si256(_mm256_slli_epi16(shifted, 3), bit);
        scaleMinToBf16(_mm256_or_si256(_mm256_and_si256(v, mask), h1g), s.d1, s.m1, y);
        scaleMinToBf16(_mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), mask), h2g), s.d2, s.m2, y + 32);
    }
}

void q6_KBf16(const uint8_t* b, uint16_t* y) {  // d * float(sc) * float(q - 32), as q6_K
    const uint8_t* ql = b;
    const uint8_t* qh = b + 128;
    const auto* sc = reinterpret_cast<const int8_t*>(b + 192);
    const float d = half(b + 208);
    const __m256i m4 = _mm256_set1_epi8(0x0F), two = _mm256_set1_epi8(0x30), k32 = _mm256_set1_epi8(32);
    for (int h = 0; h < 2; ++h, y += 128, ql += 64, qh += 32, sc += 8) {
        const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql));
        const __m256i lo32 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 32));
        const __m256i hb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh));
        // bits 2k..2k+1 of qh moved to bits 4..5
        const __m256i high[4] = {_mm256_and_si256(_mm256_slli_epi16(hb, 4), two), _mm256_and_si256(_mm256_slli_epi16(hb, 2), two),
                                 _mm256_and_si256(hb, two), _mm256_and_si256(_mm256_srli_epi16(hb, 2), two)};
        const __m256i low[4] = {_mm256_and_si256(lo, m4), _mm256_and_si256(lo32, m4), _mm256_and_si256(_mm256_srli_epi16(lo, 4), m4),
                                _mm256_and_si256(_mm256_srli_epi16(lo32, 4), m4)};
        for (int k = 0; k < 4; ++k) {
            const __m256i q = _mm256_sub_epi8(_mm256_or_si256(low[k], high[k]), k32);  // -32..31
            const __m512 s0 = _mm512_set1_ps(d * float(sc[2 * k])), s1 = _mm512_set1_ps(d * float(sc[2 * k + 1]));
            storeBf16(y + 32 * k, _mm512_mul_ps(s0, firstHalfSignedPs(q)), _mm512_mul_ps(s1, secondHalfSignedPs(q)));
        }
    }
}

// Q5_0/Q5_1's 5th bit: bit j of qh is element j.
inline __m256i withBit4(__m256i q, const uint8_t* qh) {
    return _mm256_or_si256(q, _mm256_maskz_mov_epi8(_cvtu32_mask32(highBits(qh)), _mm256_set1_epi8(0x10)));
}

void q4_1Bf16(const uint8_t* b, uint16_t* y) {  // float(q) * d + m
    const __m512 d = _mm512_set1_ps(half(b)), m = _mm512_set1_ps(half(b + 2));
    const __m256i q = nibbles32(b + 4);
    storeBf16(y, _mm512_add_ps(_mm512_mul_ps(firstHalfPs(q), d), m), _mm512_add_ps(_mm512_mul_ps(secondHalfPs(q), d), m));
}

void q5_0Bf16(const uint8_t* b, uint16_t* y) {  // float(q - 16) * d
    const __m512 d = _mm512_set1_ps(half(b)), sixteen = _mm512_set1_ps(16.0f);
    const __m256i q = withBit4(nibbles32(b + 6), b + 2);
    storeBf16(y, _mm512_mul_ps(_mm512_sub_ps(firstHalfPs(q), sixteen), d), _mm512_mul_ps(_mm512_sub_ps(secondHalfPs(q), sixteen), d));
}

void q5_1Bf16(const uint8_t* b, uint16_t* y) {  // float(q) * d + m
    const __m512 d = _mm512_set1_ps(half(b)), m = _mm512_set1_ps(half(b + 2));
    const __m256i q = withBit4(nibbles32(b + 8), b + 4);
    storeBf16(y, _mm512_add_ps(_mm512_mul_ps(firstHalfPs(q), d), m), _mm512_add_ps(_mm512_mul_ps(secondHalfPs(q), d), m));
}

// The IQ4 code book looked up by nibble, as signed bytes.
inline __m256i iq4Values(__m256i nibbles) {
    const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4Values));
    return _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(table), nibbles);
}

void iq4_nlBf16(const uint8_t* b, uint16_t* y) {  // d * float(value)
    const __m512 d = _mm512_set1_ps(half(b));
    const __m256i v = iq4Values(nibbles32(b + 2));
    storeBf16(y, _mm512_mul_ps(d, firstHalfSignedPs(v)), _mm512_mul_ps(d, secondHalfSignedPs(v)));
}

void iq4_xsBf16(const uint8_t* b, uint16_t* y) {  // dl * float(value), as iq4_xs
    const float d = half(b);
    const uint8_t* qs = b + 8;
    for (int ib = 0; ib < 8; ++ib, y += 32, qs += 16) {
        const __m512 dl = _mm512_set1_ps(d * float(iq4_xsScale(b, ib)));
        const __m256i v = iq4Values(nibbles32(qs));
        storeBf16(y, _mm512_mul_ps(dl, firstHalfSignedPs(v)), _mm512_mul_ps(dl, secondHalfSignedPs(v)));
    }
}

void q2_KBf16(const uint8_t* b, uint16_t* y) {  // dl * float(q) - ml per 16, as q2_K
    const uint8_t* scales = b;
    const float d = half(b + 80), dmin = half(b + 82);
    const __m256i three = _mm256_set1_epi8(3);
    int sub = 0;
    for (int half128 = 0; half128 < 2; ++half128) {
        const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 16 + 32 * half128));
        for (int shift = 0; shift < 8; shift += 2, sub += 2, y += 32) {
            const __m256i v = _mm256_and_si256(_mm256_srl_epi16(q, _mm_cvtsi32_si128(shift)), three);  // bits of other bytes masked off
            const __m512 dl0 = _mm512_set1_ps(d * float(scales[sub] & 0x0F)), ml0 = _mm512_set1_ps(dmin * float(scales[sub] >> 4));
            const __m512 dl1 = _mm512_set1_ps(d * float(scales[sub + 1] & 0x0F)), ml1 = _mm512_set1_ps(dmin * float(scales[sub + 1] >> 4));
            storeBf16(y, _mm512_sub_ps(_mm512_mul_ps(dl0, firstHalfPs(v)), ml0), _mm512_sub_ps(_mm512_mul_ps(dl1, secondHalfPs(v)), ml1));
        }
    }
}

void q3_KBf16(const uint8_t* b, uint16_t* y) {  // dl * float(q - 4·(hmask bit clear)) per 16, as q3_K
    const __m256i hmask = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
    const uint8_t* scales = b + 96;
    const float d = half(b + 108);
    const __m256i three = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1), four = _mm256_set1_epi8(4);
    int sub = 0, pass = 0;
    for (int half128 = 0; half128 < 2; ++half128) {
        const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 32 + 32 * half128));
        for (int shift = 0; shift < 8; shift += 2, ++pass, sub += 2, y += 32) {
            const __m256i low = _mm256_and_si256(_mm256_srl_epi16(q, _mm_cvtsi32_si128(shift)), three);
            const __m256i bit = _mm256_and_si256(_mm256_srl_epi16(hmask, _mm_cvtsi32_si128(pass)), one);
            const __m256i v = _mm256_sub_epi8(_mm256_or_si256(low, _mm256_slli_epi16(bit, 2)), four);  // -4..3
            const __m512 dl0 = _mm512_set1_ps(d * float(q3Scale(scales, sub))), dl1 = _mm512_set1_ps(d * float(q3Scale(scales, sub + 1)));
            storeBf16(y, _mm512_mul_ps(dl0, firstHalfSignedPs(v)), _mm512_mul_ps(dl1, secondHalfSignedPs(v)));
        }
    }
}

using Bf16Decoder = void (*)(const uint8_t*, uint16_t*);

// The weights come from memory once per prefill call, a stream the hardware prefetchers alone
// left stalled (as in decode, backend/prefetch_weights.h): each block's bytes are asked for 8 KiB
// ahead into L2 and 1 KiB ahead into L1.
template <Bf16Decoder Decode>
void decodeEachBf16(const uint8_t* src, uint16_t* dst, size_t nBlocks, size_t typeSize, size_t blockSize) {
    for (size_t i = 0; i < nBlocks; ++i) {
        const uint8_t* b = src + i * typeSize;
        _mm_prefetch(reinterpret_cast<const char*>(b) + 8192, _MM_HINT_T1);
        _mm_prefetch(reinterpret_cast<const char*>(b) + 1024, _MM_HINT_T0);
        Decode(b, dst + i * blockSize);
    }
}

bool dequantizeRowBf16Hardware(GgmlType type, const void* src, uint16_t* dst, size_t n) {
    if (!cpuHasAvx512Bf16()) return false;
    const auto* bytes = static_cast<const uint8_t*>(src);
    const auto info = *ggmlTypeInfo(uint32_t(type));
    const size_t blocks = n / info.blockSize;
    switch (type) {
        case GgmlType::Q8_0: decodeEachBf16<q8_0Bf16>(bytes, dst, blocks, info.typeSize, info.blockSize); return true;
        case GgmlType::Q4_0: decodeEachBf16<q4_0Bf16>(bytes, dst, blocks, info.typeSize, info.blockSize); return true;
        case GgmlType::Q4_K: decodeEachBf16<q4_KBf16>(bytes, dst, blocks, info.typeSize, info.blockSize); return true;
        case GgmlType::Q5_K: decodeEachBf16<q5_KBf16>(bytes, dst, blocks, info.typeSize, info.blockSize); return true;
        case GgmlType::Q6_K: decodeEachBf16<q6_KBf16>(bytes, dst, blocks, info.typeSize, info.blockSize); return true;
        case GgmlType::Q4_1: decodeEachBf16<q4_1Bf16>(bytes, dst, blocks, info.typeSize, info.blockSize); return true;
        case GgmlType::Q5_0: decodeEachBf16<q5_0Bf16>(bytes, dst, blocks, info.typeSize, info.blockSize); return true;
        case GgmlType::Q5_1: decodeEachBf16<q5_1Bf16>(bytes, dst, blocks, info.typeSize, info.blockSize); return true;
        case GgmlType::IQ4_NL: decodeEachBf16<iq4_nlBf16>(bytes, dst, blocks, info.typeSize, info.blockSize); return true;
        case GgmlType::IQ4_XS: decodeEachBf16<iq4_xsBf16>(bytes, dst, blocks, info.typeSize, info.blockSize); return true;
        case GgmlType::Q2_K: decodeEachBf16<q2_KBf16>(bytes, dst, blocks, info.typeSize, info.blockSize); return true;
        case GgmlType::Q3_K: decodeEachBf16<q3_KBf16>(bytes, dst, blocks, info.typeSize, info.blockSize); return true;
        default: return false;
    }
}

}  // namespace
#pragma GCC pop_options
#endif

bool dequantizeRowBf16(GgmlType type, const void* src, uint16_t* dst, size_t n) {
#if defined(__AVX512BW__)
    return dequantizeRowBf16Hardware(type, src, dst, n);
#else
    (void)type, (void)src, (void)dst, (void)n;
    return false;
#endif
}

void fp32ToBf16Row(const float* src, uint16_t* dst, size_t n) {
    size_t i = 0;
#if defined(__AVX512BW__)
    i = fp32ToBf16RowHardware(src, dst, n);
#endif
#if defined(__AVX2__)
    const __m256i absMask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
    const __m256i half = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1);
    for (; i + 8 <= n; i += 8) {
        const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
        if (_mm256_movemask_epi8(_mm256_cmpgt_epi32(_mm256_and_si256(x, absMask), inf)) != 0) {
            for (size_t j = i; j < i + 8; ++j) dst[j] = fp32ToBf16(src[j]);
            continue;
        }
        const __m256i bias = _mm256_add_epi32(half, _mm256_and_si256(_mm256_srli_epi32(x, 16), one));
        const __m256i r = _mm256_srli_epi32(_mm256_add_epi32(x, bias), 16);  // 0..0xffff
        const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);  // lanes 0 and 2: the 8 results in order
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm256_castsi256_si128(packed));
    }
#endif
    for (; i < n; ++i) dst[i] = fp32ToBf16(src[i]);
}

}  // namespace inferscope::INFERSCOPE_KERNELS_NS
