// Exact decoders of ggml's quantized blocks to f32 (layouts in quant_blocks.h), and this kernel
// set's decode table. Every product and sum is written in ggml's order and this file is compiled
// with -ffp-contract=off (core/CMakeLists.txt): a fused multiply-add rounds once where ggml rounds
// twice and would change the last bit. The same blocks straight to bf16 (prefill's tiles) and
// fp32ToBf16Row are in quant_blocks_bf16.cpp; the block fields both read, in quant_block_fields.h.

// Compiled once per kernel set (common/kernel_set.h): the AVX2 paths below exist in the avx2 and
// avx512 sets.

#include "gguf/quant_blocks.h"

#include <cstring>
#include <type_traits>

#include "gguf/decode_kernels.h"
#include "gguf/quant_block_fields.h"
#include "gguf/quant_blocks_avx2.h"

#if defined(__AVX__)
#include <immintrin.h>
#endif

namespace inferscope::INFERSCOPE_KERNELS_NS {
namespace {

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
