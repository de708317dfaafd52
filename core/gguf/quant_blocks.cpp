// Exact decoders of ggml's quantized blocks (layouts in quant_blocks.h). Every product and sum is
// written in ggml's order and this file is compiled with -ffp-contract=off (core/CMakeLists.txt):
// a fused multiply-add rounds once where ggml rounds twice and would change the last bit.

// Compiled once per kernel set (common/kernel_set.h): the AVX2 paths below exist in the avx2 and
// avx512 sets.

#include "gguf/quant_blocks.h"

#include <cstring>
#include <type_traits>

#include "gguf/decode_kernels.h"
#include "gguf/quant_blocks_avx2.h"

#if defined(__AVX__)
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

// ---- 32-element blocks ---------------------------------------------------------------------------
// Byte j of qs holds element j (low nibble) and element j + 16 (high nibble).

void q4_0(const uint8_t* b, float* y) {  // d, qs[16]
    const float d = half(b);
#if defined(__AVX2__)
    return avx2::q4_0(b, y, d);
#endif
    const uint8_t* qs = b + 2;
    for (int j = 0; j < 16; ++j) {
        y[j] = float((qs[j] & 0x0F) - 8) * d;
        y[j + 16] = float((qs[j] >> 4) - 8) * d;
    }
}

void q4_1(const uint8_t* b, float* y) {  // d, m, qs[16]
    const float d = half(b), m = half(b + 2);
    const uint8_t* qs = b + 4;
    for (int j = 0; j < 16; ++j) {
        y[j] = float(qs[j] & 0x0F) * d + m;
        y[j + 16] = float(qs[j] >> 4) * d + m;
    }
}

// The 5th bits of a Q5 block: bit j of qh belongs to element j (0..31).
inline uint32_t highBits(const uint8_t* qh) {
    uint32_t v;
    std::memcpy(&v, qh, 4);
    return v;
}

void q5_0(const uint8_t* b, float* y) {  // d, qh[4], qs[16]
    const float d = half(b);
    const uint32_t qh = highBits(b + 2);
    const uint8_t* qs = b + 6;
    for (int j = 0; j < 16; ++j) {
        const int lo = (qs[j] & 0x0F) | int((qh >> j) & 1) << 4;
        const int hi = (qs[j] >> 4) | int((qh >> (j + 16)) & 1) << 4;
        y[j] = float(lo - 16) * d;
        y[j + 16] = float(hi - 16) * d;
    }
}

void q5_1(const uint8_t* b, float* y) {  // d, m, qh[4], qs[16]
    const float d = half(b), m = half(b + 2);
    const uint32_t qh = highBits(b + 4);
    const uint8_t* qs = b + 8;
    for (int j = 0; j < 16; ++j) {
        const int lo = (qs[j] & 0x0F) | int((qh >> j) & 1) << 4;
        const int hi = (qs[j] >> 4) | int((qh >> (j + 16)) & 1) << 4;
        y[j] = float(lo) * d + m;
        y[j + 16] = float(hi) * d + m;
    }
}

void q8_0(const uint8_t* b, float* y) {  // d, qs[32]
    const float d = half(b);
#if defined(__AVX2__)
    return avx2::q8_0(b, y, d);
#endif
    const auto* qs = reinterpret_cast<const int8_t*>(b + 2);
    for (int j = 0; j < 32; ++j) y[j] = float(qs[j]) * d;
}

void iq4_nl(const uint8_t* b, float* y) {  // d, qs[16]
    const float d = half(b);
    const uint8_t* qs = b + 2;
    for (int j = 0; j < 16; ++j) {
        y[j] = d * float(kIq4Values[qs[j] & 0x0F]);
        y[j + 16] = d * float(kIq4Values[qs[j] >> 4]);
    }
}

// ---- 256-element super-blocks --------------------------------------------------------------------

void q2_K(const uint8_t* b, float* y) {  // scales[16], qs[64], d, dmin
    const uint8_t* scales = b;
    const uint8_t* q = b + 16;
    const float d = half(b + 80), dmin = half(b + 82);
    // Two halves of 128: 32 bytes of qs each, read four times (2 bits at shifts 0, 2, 4, 6); each
    // pass covers two sub-blocks of 16 (bytes 0..15 and 16..31) with their own scale and min.
    int sub = 0;
    for (int half128 = 0; half128 < 2; ++half128, q += 32)
        for (int shift = 0; shift < 8; shift += 2)
            for (int part = 0; part < 2; ++part, ++sub) {
                const float dl = d * float(scales[sub] & 0x0F), ml = dmin * float(scales[sub] >> 4);
                for (int l = 0; l < 16; ++l) *y++ = dl * float((q[16 * part + l] >> shift) & 3) - ml;
            }
}

// Q3_K's 16 six-bit scales in 12 bytes: the low 4 bits of scale i are the low (i < 8) or high
// (i >= 8) nibble of byte i % 8; its high 2 bits are bits 2·(i / 4) of byte 8 + i % 4.
inline int q3Scale(const uint8_t* s, int i) {
    const int low = i < 8 ? s[i] & 0x0F : s[i - 8] >> 4;
    const int high = (s[8 + i % 4] >> (2 * (i / 4))) & 3;
    return (low | high << 4) - 32;
}

void q3_K(const uint8_t* b, float* y) {  // hmask[32], qs[64], scales[12], d
    const uint8_t* hmask = b;
    const uint8_t* q = b + 32;
    const uint8_t* scales = b + 96;
    const float d = half(b + 108);
    // As Q2_K; the third bit of element (pass p, byte l) is bit p of hmask[l]: clear means -4.
    int sub = 0, pass = 0;
    for (int half128 = 0; half128 < 2; ++half128, q += 32)
        for (int shift = 0; shift < 8; shift += 2, ++pass)
            for (int part = 0; part < 2; ++part, ++sub) {
                const float dl = d * float(q3Scale(scales, sub));
                for (int l = 0; l < 16; ++l) {
                    const int idx = 16 * part + l;
                    const int v = ((q[idx] >> shift) & 3) - ((hmask[idx] >> pass) & 1 ? 0 : 4);
                    *y++ = dl * float(v);
                }
            }
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

void q4_K(const uint8_t* b, float* y) {  // d, dmin, scales[12], qs[128]
    const float d = half(b), dmin = half(b + 2);
    const uint8_t* scales = b + 4;
    const uint8_t* q = b + 16;
    // Four groups of 64: 32 bytes, low nibbles = sub-block 2g, high nibbles = 2g + 1.
    for (int g = 0; g < 4; ++g, q += 32) {
        int sc, m;
        scaleMinK4(scales, 2 * g, sc, m);
        const float d1 = d * float(sc), m1 = dmin * float(m);
        scaleMinK4(scales, 2 * g + 1, sc, m);
        const float d2 = d * float(sc), m2 = dmin * float(m);
#if defined(__AVX2__)
        avx2::q4_KGroup(q, d1, m1, d2, m2, y);
        y += 64;
        continue;
#endif
        for (int l = 0; l < 32; ++l) *y++ = d1 * float(q[l] & 0x0F) - m1;
        for (int l = 0; l < 32; ++l) *y++ = d2 * float(q[l] >> 4) - m2;
    }
}

void q5_K(const uint8_t* b, float* y) {  // d, dmin, scales[12], qh[32], qs[128]
    const float d = half(b), dmin = half(b + 2);
    const uint8_t* scales = b + 4;
    const uint8_t* qh = b + 16;
    const uint8_t* q = b + 48;
    // As Q4_K; the 5th bit of sub-block s's element l is bit s of qh[l].
    for (int g = 0; g < 4; ++g, q += 32) {
        int sc, m;
        scaleMinK4(scales, 2 * g, sc, m);
        const float d1 = d * float(sc), m1 = dmin * float(m);
        scaleMinK4(scales, 2 * g + 1, sc, m);
        const float d2 = d * float(sc), m2 = dmin * float(m);
        for (int l = 0; l < 32; ++l) *y++ = d1 * float((q[l] & 0x0F) + ((qh[l] >> (2 * g)) & 1) * 16) - m1;
        for (int l = 0; l < 32; ++l) *y++ = d2 * float((q[l] >> 4) + ((qh[l] >> (2 * g + 1)) & 1) * 16) - m2;
    }
}

void q6_K(const uint8_t* b, float* y) {  // ql[128], qh[64], scales[16], d
    const uint8_t* ql = b;
    const uint8_t* qh = b + 128;
    const auto* sc = reinterpret_cast<const int8_t*>(b + 192);
    const float d = half(b + 208);
    // Two halves of 128 (64 bytes of ql, 32 of qh, 8 scales each). In a half, element l + 32·k
    // (k = 0..3) takes a nibble of ql[l] (k even) or ql[l + 32] (k odd), low for k < 2, and bits
    // 2k of qh[l]; its scale is sc[l / 16 + 2k].
    for (int h = 0; h < 2; ++h, y += 128, ql += 64, qh += 32, sc += 8) {
#if defined(__AVX2__)
        avx2::q6_KHalf(ql, qh, sc, d, y);
        continue;
#endif
        for (int l = 0; l < 32; ++l) {
            const int is = l / 16;
            const int q1 = ((ql[l] & 0x0F) | ((qh[l] >> 0) & 3) << 4) - 32;
            const int q2 = ((ql[l + 32] & 0x0F) | ((qh[l] >> 2) & 3) << 4) - 32;
            const int q3 = ((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
            const int q4 = ((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;
            y[l] = d * float(sc[is]) * float(q1);
            y[l + 32] = d * float(sc[is + 2]) * float(q2);
            y[l + 64] = d * float(sc[is + 4]) * float(q3);
            y[l + 96] = d * float(sc[is + 6]) * float(q4);
        }
    }
}

// IQ4_XS's 6-bit scale of sub-block ib, less 32: 4 low bits from scales_l, 2 high from scales_h.
inline int iq4_xsScale(const uint8_t* b, int ib) {
    uint16_t scalesH;
    std::memcpy(&scalesH, b + 2, 2);
    const uint8_t* scalesL = b + 4;
    return (((scalesL[ib / 2] >> (4 * (ib % 2))) & 0x0F) | ((scalesH >> (2 * ib)) & 3) << 4) - 32;
}

void iq4_xs(const uint8_t* b, float* y) {  // d, scales_h, scales_l[4], qs[128]
    const float d = half(b);
    const uint8_t* qs = b + 8;
    for (int ib = 0; ib < 8; ++ib, y += 32, qs += 16) {
        const float dl = d * float(iq4_xsScale(b, ib));
        for (int j = 0; j < 16; ++j) {
            y[j] = dl * float(kIq4Values[qs[j] & 0x0F]);
            y[j + 16] = dl * float(kIq4Values[qs[j] >> 4]);
        }
    }
}

using BlockDecoder = void (*)(const uint8_t*, float*);

// fn(std::integral_constant<BlockDecoder, the type's decoder>) for a block type; false for others.
template <class Fn>
bool withDecoder(GgmlType type, Fn&& fn) {
    auto call = [&]<BlockDecoder D>() {
        fn(std::integral_constant<BlockDecoder, D>{});
        return true;
    };
    switch (type) {
        case GgmlType::Q4_0: return call.template operator()<q4_0>();
        case GgmlType::Q4_1: return call.template operator()<q4_1>();
        case GgmlType::Q5_0: return call.template operator()<q5_0>();
        case GgmlType::Q5_1: return call.template operator()<q5_1>();
        case GgmlType::Q8_0: return call.template operator()<q8_0>();
        case GgmlType::Q2_K: return call.template operator()<q2_K>();
        case GgmlType::Q3_K: return call.template operator()<q3_K>();
        case GgmlType::Q4_K: return call.template operator()<q4_K>();
        case GgmlType::Q5_K: return call.template operator()<q5_K>();
        case GgmlType::Q6_K: return call.template operator()<q6_K>();
        case GgmlType::IQ4_NL: return call.template operator()<iq4_nl>();
        case GgmlType::IQ4_XS: return call.template operator()<iq4_xs>();
        default: return false;
    }
}

bool hasDecoder(GgmlType type) {
    return withDecoder(type, [](auto) {});
}

}  // namespace

void quantScaleMinsK4(const uint8_t* block, float dl[8], float ml[8]) {
    const float d = half(block), dmin = half(block + 2);
    for (int j = 0; j < 8; ++j) {
        int sc, m;
        scaleMinK4(block + 4, j, sc, m);
        dl[j] = d * float(sc);
        ml[j] = dmin * float(m);
    }
}

bool isQuantizedBlockType(GgmlType type) { return hasDecoder(type); }

namespace {

// The blocks of one type in a loop the decoder is inlined into (prefill decodes every weight of a
// quantized file through here per tile: a call per block, each with its own frame, was most of the
// time for Q8_0).
template <BlockDecoder Decode>
void decodeEach(const uint8_t* src, float* dst, size_t nBlocks, size_t typeSize, size_t blockSize) {
    for (size_t i = 0; i < nBlocks; ++i) Decode(src + i * typeSize, dst + i * blockSize);
}

}  // namespace

void dequantizeBlocks(GgmlType type, const uint8_t* src, float* dst, size_t nBlocks) {
    if (!hasDecoder(type)) __builtin_trap();  // callers check isQuantizedBlockType: a programmer error
    const auto info = *ggmlTypeInfo(uint32_t(type));
    withDecoder(type, [&](auto decoder) { decodeEach<decltype(decoder)::value>(src, dst, nBlocks, info.typeSize, info.blockSize); });
}

void dequantizeRow(GgmlType type, const void* src, float* dst, size_t n) {
    const auto* bytes = static_cast<const uint8_t*>(src);
    switch (type) {
        case GgmlType::F32:
            std::memcpy(dst, src, n * sizeof(float));
            return;
        case GgmlType::F16: {
            size_t i = 0;
#if defined(__F16C__) && defined(__AVX__)
            // vcvtph2ps is exact for every half, subnormals included: the same values as below, 8 at a time
            // (prefill widens F16 weights with this).
            for (; i + 8 <= n; i += 8)
                _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes + 2 * i))));
#endif
            for (; i < n; ++i) {
                uint16_t h;
                std::memcpy(&h, bytes + 2 * i, 2);
                dst[i] = fp16ToFp32(h);
            }
            return;
        }
        case GgmlType::BF16: {
            size_t i = 0;
#if defined(__AVX2__)
            for (; i + 8 <= n; i += 8) {
                const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes + 2 * i));
                _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
            }
#endif
            for (; i < n; ++i) {
                uint16_t b;
                std::memcpy(&b, bytes + 2 * i, 2);
                dst[i] = bf16ToFp32(b);
            }
            return;
        }
        default:
            if (hasDecoder(type)) {
                INFERSCOPE_KERNELS_NS::dequantizeBlocks(type, bytes, dst, n / ggmlTypeInfo(uint32_t(type))->blockSize);
                return;
            }
            break;
    }
    // Callers check isSupportedWeightType first; reaching here is a programmer error.
    __builtin_trap();
}

// The F16 KV cache's store (every key and value of every layer, prefill included): vcvtps2ph
// rounds to nearest even, subnormals and overflow to infinity included, as fp32ToFp16 does; only
// a NaN's payload differs (the hardware keeps its top bits), so a group holding a NaN takes the
// scalar path.
void fp32ToFp16Row(const float* src, uint16_t* dst, size_t n) {
    size_t i = 0;
#if defined(__F16C__) && defined(__AVX__)
    for (; i + 8 <= n; i += 8) {
        const __m256 x = _mm256_loadu_ps(src + i);
        if (_mm256_movemask_ps(_mm256_cmp_ps(x, x, _CMP_UNORD_Q)) != 0) {
            for (size_t j = i; j < i + 8; ++j) dst[j] = fp32ToFp16(src[j]);
            continue;
        }
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
    }
#endif
    for (; i < n; ++i) dst[i] = fp32ToFp16(src[i]);
}

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

extern "C" const inferscope::DecodeKernels INFERSCOPE_DECODE_TABLE = {
    &inferscope::INFERSCOPE_KERNELS_NS::dequantizeRow,
    &inferscope::INFERSCOPE_KERNELS_NS::dequantizeBlocks,
    &inferscope::INFERSCOPE_KERNELS_NS::isQuantizedBlockType,
    &inferscope::INFERSCOPE_KERNELS_NS::quantScaleMinsK4,
    &inferscope::INFERSCOPE_KERNELS_NS::fp32ToFp16Row,
    &inferscope::INFERSCOPE_KERNELS_NS::fp32ToBf16Row,
    &inferscope::INFERSCOPE_KERNELS_NS::dequantizeRowBf16,
};
