#include "backend/gemv_q8blocks.h"

#include <cmath>
#include <cstring>

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>
#define INFERSCOPE_Q8BLOCKS_AVX2 1
#endif

#include "backend/prefetch_weights.h"
#include "common/aligned_buffer.h"
#include "gguf/quant_blocks.h"

namespace inferscope::INFERSCOPE_KERNELS_NS {
namespace {

constexpr int64_t kBlock = 32;

// One row of x: the portable rule of the header, the oracle the AVX2 version equals bit for bit
// (one f32 multiply per element, round half to even as vcvtps2dq does under the default MXCSR).
[[maybe_unused]] void quantizeRowPortable(const float* x, int64_t k, int16_t* q, float* d, float* sum) {
    for (int64_t b = 0; b < k / kBlock; ++b) {
        const float* xb = x + b * kBlock;
        float amax = 0.0f;
        for (int j = 0; j < kBlock; ++j) amax = std::fmax(amax, std::fabs(xb[j]));
        const float db = amax / float(kActivationLevels), id = db != 0.0f ? 1.0f / db : 0.0f;
        int s = 0;
        for (int j = 0; j < kBlock; ++j) {
            q[b * kBlock + j] = int16_t(std::nearbyint(xb[j] * id));
            s += q[b * kBlock + j];
        }
        d[b] = db;
        sum[b] = db * float(s);
    }
}

#ifdef INFERSCOPE_Q8BLOCKS_AVX2

inline int hsumI32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
}

inline float hmax(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_max_ss(s, _mm_movehdup_ps(s)));
}

inline float hsum(__m256 s) {
    const __m128 q = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    const __m128 d = _mm_add_ps(q, _mm_movehl_ps(q, q));
    return _mm_cvtss_f32(_mm_add_ss(d, _mm_movehdup_ps(d)));
}

// The same rule as quantizeRowPortable, 32 elements per step.
void quantizeRow(const float* x, int64_t k, int16_t* q, float* d, float* sum) {
    const __m256 signBit = _mm256_set1_ps(-0.0f);
    for (int64_t b = 0; b < k / kBlock; ++b) {
        const float* xb = x + b * kBlock;
        __m256 v[4];
        for (int j = 0; j < 4; ++j) v[j] = _mm256_loadu_ps(xb + 8 * j);
        const __m256 m01 = _mm256_max_ps(_mm256_andnot_ps(signBit, v[0]), _mm256_andnot_ps(signBit, v[1]));
        const __m256 m23 = _mm256_max_ps(_mm256_andnot_ps(signBit, v[2]), _mm256_andnot_ps(signBit, v[3]));
        const float db = hmax(_mm256_max_ps(m01, m23)) / float(kActivationLevels), id = db != 0.0f ? 1.0f / db : 0.0f;
        const __m256 idv = _mm256_set1_ps(id);
        __m256i i32[4];
        for (int j = 0; j < 4; ++j) i32[j] = _mm256_cvtps_epi32(_mm256_mul_ps(v[j], idv));
        // vpackssdw packs within 128-bit lanes (a0-3 b0-3 a4-7 b4-7); the permute restores the order.
        const __m256i lo = _mm256_permute4x64_epi64(_mm256_packs_epi32(i32[0], i32[1]), _MM_SHUFFLE(3, 1, 2, 0));
        const __m256i hi = _mm256_permute4x64_epi64(_mm256_packs_epi32(i32[2], i32[3]), _MM_SHUFFLE(3, 1, 2, 0));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + b * kBlock), lo);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + b * kBlock + 16), hi);
        d[b] = db;
        sum[b] = db * float(hsumI32(_mm256_add_epi32(_mm256_add_epi32(i32[0], i32[1]), _mm256_add_epi32(i32[2], i32[3]))));
    }
}

inline float halfAt(const uint8_t* p) { return _cvtsh_ss(uint16_t(p[0] | p[1] << 8)); }

// Bit j of `bits` as byte j: 0xFF where set, 0 where clear.
inline __m256i bitsToBytes(uint32_t bits) {
    const __m256i spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32(int(bits)),
        _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
    const __m256i select = _mm256_set1_epi64x(int64_t(0x8040201008040201ull));
    return _mm256_cmpeq_epi8(_mm256_and_si256(spread, select), select);
}

// 16 bytes of nibbles as 32 bytes 0..15 in element order: low nibbles are elements 0..15, high
// nibbles 16..31 (ggml's layout of Q4_0, Q4_1, Q5_*, IQ4_NL).
inline __m256i nibbles(const uint8_t* p) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(v, 4), v), _mm256_set1_epi8(0x0F));
}

inline uint32_t u32At(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24; }

// Each format as its 32 integer weights q (element order), w = d·(q + offset) or d·q + m. A
// constant offset (Q4_0's -8, Q5_0's -16) is not subtracted per weight but once per 8 blocks, as
// offset·d_w·Σx̂ beside the min term. Weights come as two registers of 16 int16 (elements 0..15,
// 16..31): Q8_0 widened straight from memory (vpmovsxbw with a memory operand), plain nibbles from
// one 128-bit load, the others from a register of 32 int8.
struct Q8_0 {
    static constexpr int64_t bytes = 34;
    static constexpr bool hasMin = false;
    static constexpr float offset = 0;
    static void weights16(const uint8_t* b, __m256i& lo, __m256i& hi) {
        lo = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2)));
        hi = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 18)));
    }
};
inline void nibbles16(const uint8_t* p, __m256i& lo, __m256i& hi) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), mask = _mm_set1_epi8(0x0F);
    lo = _mm256_cvtepu8_epi16(_mm_and_si128(v, mask));
    hi = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(v, 4), mask));
}
struct Q4_0 {
    static constexpr int64_t bytes = 18;
    static constexpr bool hasMin = false;
    static constexpr float offset = -8;
    static void weights16(const uint8_t* b, __m256i& lo, __m256i& hi) { nibbles16(b + 2, lo, hi); }
};
struct Q4_1 {
    static constexpr int64_t bytes = 20;
    static constexpr bool hasMin = true;
    static constexpr float offset = 0;
    static void weights16(const uint8_t* b, __m256i& lo, __m256i& hi) { nibbles16(b + 4, lo, hi); }
};
struct Q5_0 {  // nibble | bit4 << 4, then -16
    static constexpr int64_t bytes = 22;
    static constexpr bool hasMin = false;
    static constexpr float offset = -16;
    static __m256i weights(const uint8_t* b) {
        return _mm256_or_si256(nibbles(b + 6), _mm256_and_si256(bitsToBytes(u32At(b + 2)), _mm256_set1_epi8(0x10)));
    }
};
struct Q5_1 {  // nibble | bit4 << 4
    static constexpr int64_t bytes = 24;
    static constexpr bool hasMin = true;
    static constexpr float offset = 0;
    static __m256i weights(const uint8_t* b) {
        return _mm256_or_si256(nibbles(b + 8), _mm256_and_si256(bitsToBytes(u32At(b + 4)), _mm256_set1_epi8(0x10)));
    }
};
struct IQ4_NL {  // the code book looked up by nibble (vpshufb indexes within each 128-bit lane)
    static constexpr int64_t bytes = 18;
    static constexpr bool hasMin = false;
    static constexpr float offset = 0;
    static __m256i weights(const uint8_t* b) {
        const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4Values));
        return _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(table), nibbles(b + 2));
    }
};

template <class F>
inline void weights16(const uint8_t* b, __m256i& lo, __m256i& hi) {
    if constexpr (requires { F::weights16(b, lo, hi); }) {
        F::weights16(b, lo, hi);
    } else {
        const __m256i w = F::weights(b);
        lo = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(w));
        hi = _mm256_cvtepi8_epi16(_mm256_extracti128_si256(w, 1));
    }
}

// Σ w[j]·x[j] over 32 pairs (w widened from int8, x int16) as 8 int32 lanes (|w|·|x| ≤ 128·32767:
// no lane can overflow).
inline __m256i dot32(__m256i wLo, __m256i wHi, const int16_t* x) {
    const __m256i lo = _mm256_madd_epi16(wLo, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x)));
    const __m256i hi = _mm256_madd_epi16(wHi, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 16)));
    return _mm256_add_epi32(lo, hi);
}

// The f16 at offset `at` of 8 consecutive blocks, as 8 floats (one vcvtph2ps for 8 scales).
template <class F>
inline __m256 halves8(const uint8_t* blk, int at) {
    auto h = [&](int j) {
        uint16_t v;
        std::memcpy(&v, blk + j * F::bytes + at, 2);
        return short(v);
    };
    return _mm256_cvtph_ps(_mm_setr_epi16(h(0), h(1), h(2), h(3), h(4), h(5), h(6), h(7)));
}

// y[i, n] = Σ_b d_w[b]·d_x[i][b]·Σ_j q_w·q_x (+ m_w[b]·sum_x[i][b]). Blocks go 8 at a time so that
// their scales are converted and multiplied as one vector (per block alone that scalar work was a
// third of the instructions); two accumulators per row of x so consecutive FMAs do not wait on
// each other.
template <class F, int M>
void rowsOf(const GemvTask& t, const ActivationBlocks32& xq, int64_t n0, int64_t n1) {
    const int64_t nb = t.k / kBlock, rowBytes = nb * F::bytes;
    const auto* base = static_cast<const uint8_t*>(t.w);
    for (int64_t n = n0; n < n1; ++n) {
        const uint8_t* row = base + n * rowBytes;
        __m256 acc[M][2], minAcc[M];
        for (int i = 0; i < M; ++i) acc[i][0] = acc[i][1] = minAcc[i] = _mm256_setzero_ps();
        auto block = [&](const uint8_t* blk, int64_t b, const float* scale /* [M], stride 8 */) {
            __m256i wLo, wHi;
            weights16<F>(blk, wLo, wHi);
            for (int i = 0; i < M; ++i) {
                const __m256 s = _mm256_cvtepi32_ps(dot32(wLo, wHi, xq.q + (i * nb + b) * kBlock));
                acc[i][b & 1] = _mm256_fmadd_ps(s, _mm256_broadcast_ss(scale + 8 * i), acc[i][b & 1]);
            }
        };
        int64_t b = 0;
        for (; b + 8 <= nb; b += 8) {
            const uint8_t* blk = row + b * F::bytes;
            prefetchWeightsAhead(blk, 8 * F::bytes);
            const __m256 dw = halves8<F>(blk, 0);
            alignas(32) float scale[M][8];
            for (int i = 0; i < M; ++i) {
                _mm256_store_ps(scale[i], _mm256_mul_ps(dw, _mm256_loadu_ps(xq.d + i * nb + b)));
                if constexpr (F::hasMin) minAcc[i] = _mm256_fmadd_ps(halves8<F>(blk, 2), _mm256_loadu_ps(xq.sum + i * nb + b), minAcc[i]);
                if constexpr (F::offset != 0) minAcc[i] = _mm256_fmadd_ps(dw, _mm256_loadu_ps(xq.sum + i * nb + b), minAcc[i]);
            }
            for (int j = 0; j < 8; ++j) block(blk + j * F::bytes, b + j, &scale[0][j]);
        }
        for (; b < nb; ++b) {  // the last nb % 8 blocks
            const uint8_t* blk = row + b * F::bytes;
            float scale[M][8];
            for (int i = 0; i < M; ++i) {
                scale[i][0] = halfAt(blk) * xq.d[i * nb + b];
                if constexpr (F::hasMin) minAcc[i] = _mm256_add_ps(minAcc[i], _mm256_setr_ps(halfAt(blk + 2) * xq.sum[i * nb + b], 0, 0, 0, 0, 0, 0, 0));
                if constexpr (F::offset != 0) minAcc[i] = _mm256_add_ps(minAcc[i], _mm256_setr_ps(halfAt(blk) * xq.sum[i * nb + b], 0, 0, 0, 0, 0, 0, 0));
            }
            block(blk, b, &scale[0][0]);
        }
        // minAcc: Σ m_w·Σx̂ (min formats) or Σ d_w·Σx̂, times the offset (offset formats)
        for (int i = 0; i < M; ++i) {
            const __m256 extra = F::offset != 0 ? _mm256_mul_ps(minAcc[i], _mm256_set1_ps(F::offset)) : minAcc[i];
            t.y[i * t.n + n] = hsum(_mm256_add_ps(_mm256_add_ps(acc[i][0], acc[i][1]), extra));
        }
    }
}

template <class F>
void rowsFor(const GemvTask& t, const ActivationBlocks32& xq, int64_t n0, int64_t n1) {
    switch (xq.m) {
        case 1: return rowsOf<F, 1>(t, xq, n0, n1);
        case 2: return rowsOf<F, 2>(t, xq, n0, n1);
        case 3: return rowsOf<F, 3>(t, xq, n0, n1);
        default: return rowsOf<F, 4>(t, xq, n0, n1);
    }
}

#endif

}  // namespace

bool hasInt8BlockKernel(GgmlType type) {
#ifdef INFERSCOPE_Q8BLOCKS_AVX2
    switch (type) {
        case GgmlType::Q8_0:
        case GgmlType::Q4_0:
        case GgmlType::Q4_1:
        case GgmlType::Q5_0:
        case GgmlType::Q5_1:
        case GgmlType::IQ4_NL: return true;
        default: return false;
    }
#else
    (void)type;
    return false;
#endif
}

ActivationBlocks32 quantizeActivations32(const float* x, int64_t m, int64_t k) {
    thread_local AlignedBuffer<int16_t> q;
    thread_local AlignedBuffer<float> scales;  // [m][k/32] d, then [m][k/32] sum
    const int64_t nb = k / kBlock;
    if (q.size() < size_t(m * k)) q.allocate(size_t(m * k));
    if (scales.size() < size_t(2 * m * nb)) scales.allocate(size_t(2 * m * nb));
    float* d = scales.data();
    float* sum = d + m * nb;
    for (int64_t i = 0; i < m; ++i) {
#ifdef INFERSCOPE_Q8BLOCKS_AVX2
        quantizeRow(x + i * k, k, q.data() + i * k, d + i * nb, sum + i * nb);
#else
        quantizeRowPortable(x + i * k, k, q.data() + i * k, d + i * nb, sum + i * nb);
#endif
    }
    return {q.data(), d, sum, m, k};
}

void gemvInt8BlockRows(const GemvTask& t, const ActivationBlocks32& xq, int64_t n0, int64_t n1) {
#ifdef INFERSCOPE_Q8BLOCKS_AVX2
    switch (GgmlType(t.blockType)) {
        case GgmlType::Q8_0: return rowsFor<Q8_0>(t, xq, n0, n1);
        case GgmlType::Q4_0: return rowsFor<Q4_0>(t, xq, n0, n1);
        case GgmlType::Q4_1: return rowsFor<Q4_1>(t, xq, n0, n1);
        case GgmlType::Q5_0: return rowsFor<Q5_0>(t, xq, n0, n1);
        case GgmlType::Q5_1: return rowsFor<Q5_1>(t, xq, n0, n1);
        case GgmlType::IQ4_NL: return rowsFor<IQ4_NL>(t, xq, n0, n1);
        default: break;
    }
#endif
    (void)t, (void)xq, (void)n0, (void)n1;  // unreachable: callers ask hasInt8BlockKernel first
}

}  // namespace inferscope::INFERSCOPE_KERNELS_NS
