// attention(): causal grouped-query attention over one layer's KV cache (f32, f16, Q8_0 or Q4_0
// rows), with the sliding window, score soft-cap and scale of AttentionOptions, and the softmax
// weights kept for the logit lens when asked. Compiled once per kernel set (common/kernel_set.h):
// the AVX-512 kernels of the head dims 64 and 128 exist in the avx512 set, the block-row kernels
// use AVX2 where the set has it; the table that publishes attention() is in kernels.cpp.
#include "backend/kernels.h"

#include <omp.h>

#include <algorithm>
#include <cmath>

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "backend/hsum_avx512.h"
#include "gguf/ggml_types.h"
#include "gguf/quant_blocks.h"
#include "common/exp_nonpositive.h"

namespace inferscope::INFERSCOPE_KERNELS_NS {

namespace {

// Attention scores to exp(score - max) in place; returns their sum (the softmax's denominator).
// Gemma 2's attention soft-cap on the scaled scores: cap · tanh(score / cap) (softCap 0: off).
inline void softCapScores(float* sc, int32_t n, float softCap) {
    if (softCap <= 0.0f) return;
    for (int32_t j = 0; j < n; ++j) sc[j] = softCapValue(sc[j], softCap);
}

inline float softmaxUnnormalized(float* sc, int32_t n) {
    // The maximum in 16 lanes (`a > b ? a : b` is one vmaxps; std::max in an omp simd reduction
    // stayed a scalar chain of vmaxss, a 4-cycle wait per key).
    float lane[16];
    for (float& l : lane) l = -INFINITY;
    int32_t j0 = 0;
    for (; j0 + 16 <= n; j0 += 16)
        for (int l = 0; l < 16; ++l) lane[l] = sc[j0 + l] > lane[l] ? sc[j0 + l] : lane[l];
    float maxScore = -INFINITY;
    for (float l : lane) maxScore = std::max(maxScore, l);
    for (; j0 < n; ++j0) maxScore = std::max(maxScore, sc[j0]);
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int32_t j = 0; j < n; ++j) {
        sc[j] = float(expNonPositive(double(sc[j] - maxScore)));
        sum += sc[j];
    }
    return sum;
}

// One head group's attention for one query row (attendGroupVec, attendGroup).
// Keys firstKey .. firstKey + nKeys - 1 are attended (a sliding window starts past 0). On return
// with keepWeights, scratch row g (stride nCtx + 16) holds head g's softmax weights, normalised.
using AttendFn = void (*)(const float*, const void*, const void*, int64_t, int32_t, int32_t, int, int, int, int32_t, float,
                          float, float*, float*, bool keepWeights);

// One KV head's row `j` as f32 (F32, F16 caches): the cache row itself, or widened from half into `buf`.
inline const float* kvRow(const void* base, bool half, size_t index, int headDim, float* buf) {
    if (!half) return static_cast<const float*>(base) + index * size_t(headDim);
    INFERSCOPE_KERNELS_NS::dequantizeRow(GgmlType::F16, static_cast<const uint16_t*>(base) + index * size_t(headDim), buf, size_t(headDim));
    return buf;
}

// Rows of ggml blocks (Q8_0: d, qs[32] int8; Q4_0: d, qs[16], element i < 16 the low nibble of
// qs[i], element i >= 16 the high nibble of qs[i - 16], value (nibble − 8)·d), read a block at a
// time: its 32 integers widened to float in registers and the block's scale applied once per block
// (d·Σ x_i·q_i), never a widened copy of the row.
template <KvType T>
constexpr size_t kBlockBytes = T == KvType::Q8_0 ? 34 : 18;

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
inline float blockScale(const uint8_t* block) { return _cvtsh_ss(uint16_t(block[0] | block[1] << 8)); }

// A block's 32 integers as four 8-lane float vectors (elements 0-7, 8-15, 16-23, 24-31).
template <KvType T>
inline void blockInts(const uint8_t* qs, __m256 w[4]) {
    if constexpr (T == KvType::Q8_0) {
        for (int c = 0; c < 4; ++c)
            w[c] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs + 8 * c))));
    } else {
        const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
        const __m128i mask = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
        const __m128i lo = _mm_sub_epi8(_mm_and_si128(bytes, mask), eight);
        const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(bytes, 4), mask), eight);
        w[0] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo));
        w[1] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8)));
        w[2] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi));
        w[3] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8)));
    }
}

inline float hsum8(__m256 v) {
    const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

// x · row for one row of nBlocks blocks.
template <KvType T>
inline float blockRowDot(const float* x, const uint8_t* row, int nBlocks) {
    __m256 acc = _mm256_setzero_ps();
    for (int b = 0; b < nBlocks; ++b, row += kBlockBytes<T>, x += 32) {
        __m256 w[4];
        blockInts<T>(row + 2, w);
        __m256 s = _mm256_mul_ps(_mm256_loadu_ps(x), w[0]);
        for (int c = 1; c < 4; ++c) s = _mm256_fmadd_ps(_mm256_loadu_ps(x + 8 * c), w[c], s);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(blockScale(row)), s, acc);
    }
    return hsum8(acc);
}

// o += p · row.
template <KvType T>
inline void blockRowAxpy(float p, const uint8_t* row, int nBlocks, float* o) {
    for (int b = 0; b < nBlocks; ++b, row += kBlockBytes<T>, o += 32) {
        __m256 w[4];
        blockInts<T>(row + 2, w);
        const __m256 pd = _mm256_set1_ps(p * blockScale(row));
        for (int c = 0; c < 4; ++c) _mm256_storeu_ps(o + 8 * c, _mm256_fmadd_ps(pd, w[c], _mm256_loadu_ps(o + 8 * c)));
    }
}
#else
// A block's 32 integers (the compiler keeps them in vector registers at this set's width).
template <KvType T>
inline void blockInts(const uint8_t* qs, float w[32]) {
    for (int i = 0; i < 32; ++i) {
        if constexpr (T == KvType::Q8_0)
            w[i] = float(int8_t(qs[i]));
        else
            w[i] = float(int((i < 16 ? qs[i] : qs[i - 16] >> 4) & 0x0F) - 8);
    }
}

template <KvType T>
inline float blockRowDot(const float* x, const uint8_t* row, int nBlocks) {
    float acc = 0.0f;
    for (int b = 0; b < nBlocks; ++b, row += kBlockBytes<T>, x += 32) {
        float w[32];
        blockInts<T>(row + 2, w);
        float s = 0.0f;
#pragma omp simd reduction(+ : s)
        for (int i = 0; i < 32; ++i) s += x[i] * w[i];
        acc += fp16ToFp32(uint16_t(row[0] | row[1] << 8)) * s;
    }
    return acc;
}

template <KvType T>
inline void blockRowAxpy(float p, const uint8_t* row, int nBlocks, float* o) {
    for (int b = 0; b < nBlocks; ++b, row += kBlockBytes<T>, o += 32) {
        float w[32];
        blockInts<T>(row + 2, w);
        const float pd = p * fp16ToFp32(uint16_t(row[0] | row[1] << 8));
#pragma omp simd
        for (int i = 0; i < 32; ++i) o[i] += pd * w[i];
    }
}
#endif

#if defined(__AVX512F__) && defined(__AVX512DQ__)
// 16 elements of a cache row as f32.
template <bool Half>
inline __m512 kvLoad16(const void* base, size_t element) {
    if constexpr (Half)
        return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(base) + element)));
    else
        return _mm512_loadu_ps(static_cast<const float*>(base) + element);
}

// attendGroup for headDim = 16·C: the query (or output) row stays in C registers while the keys
// (values) stream past; the group's later heads re-read the KV head's rows from L2, not memory.
constexpr int32_t kPrefetchRows = 16;  // rows ahead (2 KiB at head dim 64 in f16)

template <bool Half, int C>
void attendGroupVec(const float* q, const void* k, const void* v, int64_t r, int32_t firstKey, int32_t nKeys, int kvh, int group,
                    int nHead, int32_t nCtx, float scale, float softCap, float* out, float* scratch, bool keepWeights) {
    constexpr int hd = 16 * C;
    const size_t stride = size_t(nCtx) + 16;
    const size_t row0 = (size_t(kvh) * size_t(nCtx) + size_t(firstKey)) * hd;
    const float* qg = q + (size_t(r) * nHead + size_t(kvh) * group) * hd;
    float* og = out + (size_t(r) * nHead + size_t(kvh) * group) * hd;
    for (int g = 0; g < group; ++g) {
        float* sc = scratch + size_t(g) * stride;
        // scores[j] = q · k_j / sqrt(d)
        __m512 qv[C];
        for (int c = 0; c < C; ++c) qv[c] = _mm512_mul_ps(_mm512_loadu_ps(qg + size_t(g) * hd + 16 * c), _mm512_set1_ps(scale));
        auto dot = [&](int32_t j) {
            __m512 acc = _mm512_mul_ps(qv[0], kvLoad16<Half>(k, row0 + size_t(j) * hd));
            for (int c = 1; c < C; ++c) acc = _mm512_fmadd_ps(qv[c], kvLoad16<Half>(k, row0 + size_t(j) * hd + 16 * c), acc);
            return acc;
        };
        const char* kBytes = static_cast<const char*>(k);
        int32_t j = 0;
        // Four keys at a time, their four 16-lane sums reduced together (one horizontal sum per
        // key would cost more than the dot product itself at head dim 64). The prefetch keeps one
        // stream per thread at DRAM speed: the weights evict the cache from L3 between tokens.
        for (; j + 4 <= nKeys; j += 4) {
            _mm_prefetch(kBytes + (row0 + size_t(j + kPrefetchRows) * hd) * (Half ? 2 : 4), _MM_HINT_T0);
            _mm_prefetch(kBytes + (row0 + size_t(j + kPrefetchRows + 2) * hd) * (Half ? 2 : 4), _MM_HINT_T0);
            const __m512 a0 = dot(j), a1 = dot(j + 1), a2 = dot(j + 2), a3 = dot(j + 3);
            // lanes of x: a0/a1 partial sums interleaved; of y: a2/a3; then [s0 s1 s2 s3] per 128-bit lane
            const __m512 x = _mm512_add_ps(_mm512_unpacklo_ps(a0, a1), _mm512_unpackhi_ps(a0, a1));
            const __m512 y = _mm512_add_ps(_mm512_unpacklo_ps(a2, a3), _mm512_unpackhi_ps(a2, a3));
            const __m512 z = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(x), _mm512_castps_pd(y))),
                                           _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(x), _mm512_castps_pd(y))));
            const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(z), _mm512_extractf32x8_ps(z, 1));
            _mm_storeu_ps(sc + j, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
        }
        for (; j < nKeys; ++j) sc[j] = hsum(dot(j));
        softCapScores(sc, nKeys, softCap);
        const float sum = softmaxUnnormalized(sc, nKeys);
        // out = Σ_j p_j · v_j / Σ_j p_j
        __m512 o[C];
        for (int c = 0; c < C; ++c) o[c] = _mm512_setzero_ps();
        for (int32_t j = 0; j < nKeys; ++j) {
            _mm_prefetch(static_cast<const char*>(v) + (row0 + size_t(j + kPrefetchRows) * hd) * (Half ? 2 : 4), _MM_HINT_T0);
            const __m512 p = _mm512_set1_ps(sc[j]);
            for (int c = 0; c < C; ++c) o[c] = _mm512_fmadd_ps(p, kvLoad16<Half>(v, row0 + size_t(j) * hd + 16 * c), o[c]);
        }
        const __m512 inv = _mm512_set1_ps(1.0f / sum);
        for (int c = 0; c < C; ++c) _mm512_storeu_ps(og + size_t(g) * hd + 16 * c, _mm512_mul_ps(o[c], inv));
        if (keepWeights)  // the weights as used: p_j · (1 / Σ p)
            for (int32_t j = 0; j < nKeys; ++j) sc[j] *= 1.0f / sum;
    }
}

AttendFn vectorKernel(KvType type, int headDim) {
    if (isBlockKvType(type)) return nullptr;
    const bool half = type == KvType::F16;
    switch (headDim) {
        case 32: return half ? attendGroupVec<true, 2> : attendGroupVec<false, 2>;
        case 64: return half ? attendGroupVec<true, 4> : attendGroupVec<false, 4>;
        case 80: return half ? attendGroupVec<true, 5> : attendGroupVec<false, 5>;
        case 96: return half ? attendGroupVec<true, 6> : attendGroupVec<false, 6>;
        case 128: return half ? attendGroupVec<true, 8> : attendGroupVec<false, 8>;
        default: return nullptr;
    }
}
#else
AttendFn vectorKernel(KvType, int) { return nullptr; }
#endif

// attendGroup for a Q8_0 / Q4_0 cache (head dim a multiple of 32): each key (value) row read once
// for the group, its blocks widened in registers for every head of the group (the row stays in L1).
template <KvType T>
void attendGroupBlocks(const float* q, const void* k, const void* v, int64_t r, int32_t firstKey, int32_t nKeys, int kvh,
                       int group, int nHead, int headDim, int32_t nCtx, float scale, float softCap, float* out, float* scratch) {
    const size_t stride = size_t(nCtx) + 16;
    const int nBlocks = headDim / 32;
    const size_t rowBytes = size_t(nBlocks) * kBlockBytes<T>;
    const size_t head0 = size_t(kvh) * size_t(nCtx) + size_t(firstKey);
    const uint8_t* kRows = static_cast<const uint8_t*>(k) + head0 * rowBytes;
    const uint8_t* vRows = static_cast<const uint8_t*>(v) + head0 * rowBytes;
    const float* qg = q + (size_t(r) * nHead + size_t(kvh) * group) * headDim;
    float* og = out + (size_t(r) * nHead + size_t(kvh) * group) * headDim;
    // scores[g][j] = q_g · k_j / sqrt(d)
    for (int32_t j = 0; j < nKeys; ++j)
        for (int g = 0; g < group; ++g)
            scratch[size_t(g) * stride + size_t(j)] = blockRowDot<T>(qg + size_t(g) * headDim, kRows + size_t(j) * rowBytes, nBlocks) * scale;
    for (int g = 0; g < group; ++g) {
        float* sc = scratch + size_t(g) * stride;
        softCapScores(sc, nKeys, softCap);
        const float inv = 1.0f / softmaxUnnormalized(sc, nKeys);
#pragma omp simd
        for (int32_t j = 0; j < nKeys; ++j) sc[j] *= inv;
        float* o = og + size_t(g) * headDim;
        for (int d = 0; d < headDim; ++d) o[d] = 0.0f;
    }
    // out_g = Σ_j p_gj · v_j
    for (int32_t j = 0; j < nKeys; ++j)
        for (int g = 0; g < group; ++g)
            blockRowAxpy<T>(scratch[size_t(g) * stride + size_t(j)], vRows + size_t(j) * rowBytes, nBlocks, og + size_t(g) * headDim);
}

// Any head dimension: query row r's heads h0 .. h0 + group - 1, all reading KV head kvh, one key
// (value) row at a time. Leaves the normalised weights in scratch (what weightsOut copies).
void attendGroup(const float* q, const void* k, const void* v, bool half, int64_t r, int32_t firstKey, int32_t nKeys, int kvh,
                 int group, int nHead, int headDim, int32_t nCtx, float scale, float softCap, float* out, float* scratch) {
    const size_t stride = size_t(nCtx) + 16;
    float* kbuf = scratch + size_t(group) * stride;
    float* vbuf = kbuf + headDim;
    const size_t head0 = size_t(kvh) * size_t(nCtx) + size_t(firstKey);
    const float* qg = q + (size_t(r) * nHead + size_t(kvh) * group) * headDim;
    float* og = out + (size_t(r) * nHead + size_t(kvh) * group) * headDim;
    // scores[g][j] = q_g · k_j / sqrt(d): each key row read once for the whole group
    for (int32_t j = 0; j < nKeys; ++j) {
        const float* kj = kvRow(k, half, head0 + size_t(j), headDim, kbuf);
        for (int g = 0; g < group; ++g) {
            const float* qh = qg + size_t(g) * headDim;
            float s = 0.0f;
#pragma omp simd reduction(+ : s)
            for (int d = 0; d < headDim; ++d) s += qh[d] * kj[d];
            scratch[size_t(g) * stride + size_t(j)] = s * scale;
        }
    }
    // softmax over the keys, per head
    for (int g = 0; g < group; ++g) {
        float* sc = scratch + size_t(g) * stride;
        softCapScores(sc, nKeys, softCap);
        const float sum = softmaxUnnormalized(sc, nKeys);
        const float inv = 1.0f / sum;
#pragma omp simd
        for (int32_t j = 0; j < nKeys; ++j) sc[j] *= inv;
        float* o = og + size_t(g) * headDim;
        for (int d = 0; d < headDim; ++d) o[d] = 0.0f;
    }
    // out_g = Σ_j p_gj · v_j: each value row read once for the whole group
    for (int32_t j = 0; j < nKeys; ++j) {
        const float* vj = kvRow(v, half, head0 + size_t(j), headDim, vbuf);
        for (int g = 0; g < group; ++g) {
            const float p = scratch[size_t(g) * stride + size_t(j)];
            float* o = og + size_t(g) * headDim;
#pragma omp simd
            for (int d = 0; d < headDim; ++d) o[d] += p * vj[d];
        }
    }
}

// The group's weights from its scratch rows into weightsOut [nHead][firstKey + nKeys] (the last
// query row's keys 0 .. P), zero before the window.
void keepGroupWeights(const float* scratch, int32_t nCtx, int32_t firstKey, int32_t nKeys, int kvh, int group, float* weightsOut) {
    const size_t stride = size_t(nCtx) + 16, rowLength = size_t(firstKey) + size_t(nKeys);
    for (int g = 0; g < group; ++g) {
        float* row = weightsOut + (size_t(kvh) * size_t(group) + size_t(g)) * rowLength;
        std::fill(row, row + firstKey, 0.0f);
        std::copy(scratch + size_t(g) * stride, scratch + size_t(g) * stride + nKeys, row + firstKey);
    }
}

}  // namespace

void attention(const float* q, const void* k, const void* v, KvType kvType, int64_t m, int32_t position0, int nHead,
               int nHeadKv, int headDim, int32_t nCtx, float* out, float* scratch, const AttentionOptions& options) {
    const int group = nHead / nHeadKv;
    const float scale = options.scale > 0.0f ? options.scale : 1.0f / std::sqrt(float(headDim));
    const size_t perThread = size_t(group) * (size_t(nCtx) + 16) + size_t(headDim) * 2;
    // Work in multiply-adds: below ~64k one thread is done before a fork/join would pay off.
    const int64_t work = m * int64_t(nHead) * int64_t(position0 + m) * headDim;
    const AttendFn fast = vectorKernel(kvType, headDim);
#pragma omp parallel for collapse(2) schedule(dynamic, 1) if (work > 65536)
    for (int64_t r = 0; r < m; ++r)
        for (int kvh = 0; kvh < nHeadKv; ++kvh) {
            float* threadScratch = scratch + size_t(omp_get_thread_num()) * perThread;
            // query at position p sees keys 0..p, or p - window + 1 .. p through a sliding window
            const int32_t pos = position0 + int32_t(r);
            const int32_t firstKey = options.window > 0 ? std::max(0, pos - options.window + 1) : 0;
            const int32_t nKeys = pos + 1 - firstKey;
            const bool keepWeights = options.weightsOut && r == m - 1;
            if (kvType == KvType::Q8_0)
                attendGroupBlocks<KvType::Q8_0>(q, k, v, r, firstKey, nKeys, kvh, group, nHead, headDim, nCtx, scale,
                                                options.softCap, out, threadScratch);
            else if (kvType == KvType::Q4_0)
                attendGroupBlocks<KvType::Q4_0>(q, k, v, r, firstKey, nKeys, kvh, group, nHead, headDim, nCtx, scale,
                                                options.softCap, out, threadScratch);
            else if (fast)
                fast(q, k, v, r, firstKey, nKeys, kvh, group, nHead, nCtx, scale, options.softCap, out, threadScratch, keepWeights);
            else
                attendGroup(q, k, v, kvType == KvType::F16, r, firstKey, nKeys, kvh, group, nHead, headDim, nCtx, scale, options.softCap, out,
                            threadScratch);
            if (keepWeights) keepGroupWeights(threadScratch, nCtx, firstKey, nKeys, kvh, group, options.weightsOut);
        }
}

}  // namespace inferscope::INFERSCOPE_KERNELS_NS
