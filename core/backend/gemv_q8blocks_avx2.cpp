// x rounded to int16 blocks of 32 (quantizeActivations32) and the AVX2 integer kernel of the
// 32-element block formats (gemv_q8blocks.h), with the dispatch per format and rows of x; the
// formats' weights and the terms both kernels apply are in gemv_q8blocks_kernels.h, the
// AVX512-VNNI kernel in gemv_q8blocks_vnni.cpp.
#include "backend/gemv_q8blocks.h"

#include <cmath>

#include "backend/gemv_q8blocks_kernels.h"
#include "backend/prefetch_weights.h"
#include "common/aligned_buffer.h"
#include "common/kernel_set.h"

namespace inferscope::INFERSCOPE_KERNELS_NS {
namespace {

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
            for (int i = 0; i < M; ++i) _mm256_store_ps(scale[i], _mm256_mul_ps(dw, _mm256_loadu_ps(xq.d + i * nb + b)));
            minTerms8<F, M>(blk, dw, b, xq, minAcc);
            for (int j = 0; j < 8; ++j) block(blk + j * F::bytes, b + j, &scale[0][j]);
        }
        for (; b < nb; ++b) lastBlock<F, M>(row + b * F::bytes, b, xq, acc, minAcc);  // the last nb % 8 blocks
        for (int i = 0; i < M; ++i) t.y[i * t.n + n] = hsum(_mm256_add_ps(_mm256_add_ps(acc[i][0], acc[i][1]), minTerm<F>(minAcc[i])));
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
    ActivationBlocks32 out{q.data(), d, sum, m, k};
#ifdef INFERSCOPE_Q8BLOCKS_VNNI
    if (cpuHasAvx512Vnni()) {
        thread_local AlignedBuffer<int8_t> hi;
        thread_local AlignedBuffer<uint8_t> lo;
        thread_local AlignedBuffer<int32_t> hiBias;
        if (hi.size() < size_t(m * k)) hi.allocate(size_t(m * k)), lo.allocate(size_t(m * k)), hiBias.allocate(size_t(m * k / 4));
        splitBytes(q.data(), m * k, hi.data(), lo.data(), hiBias.data());
        out.hi = hi.data(), out.lo = lo.data(), out.hiBias = hiBias.data();
    }
#endif
    return out;
}

void gemvInt8BlockRows(const GemvTask& t, const ActivationBlocks32& xq, int64_t n0, int64_t n1) {
#ifdef INFERSCOPE_Q8BLOCKS_VNNI
    // The VNNI kernel where quantizeActivations32 split x for it.
    if (xq.hi) return gemvInt8BlockRowsVnni(t, xq, n0, n1);
#endif
#ifdef INFERSCOPE_Q8BLOCKS_AVX2
    withFormat(GgmlType(t.blockType), [&](auto format) {
        using F = decltype(format);
        withRows(xq.m, [&](auto m) { rowsOf<F, m()>(t, xq, n0, n1); });
    });
#endif
    (void)t, (void)xq, (void)n0, (void)n1;  // a type without a kernel: unreachable, callers ask hasInt8BlockKernel first
}

}  // namespace inferscope::INFERSCOPE_KERNELS_NS
