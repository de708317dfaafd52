#include "backend/gemm_kquants.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

namespace inferscope {
namespace {

constexpr int64_t kBlock = 256;  // weights per K-quant block

}  // namespace

void roundRows(const float* x, int64_t m, int64_t k, IntRows& out, int nThreads) {
    const int64_t nb = k / kBlock;
    out.m = m;
    out.k = k;
    out.q.resize(size_t(m * k));
    out.d.resize(size_t(m * nb));
    out.sums.resize(size_t(m * k / 16));
#pragma omp parallel for schedule(static) num_threads(nThreads) if (m * k >= 65536)
    for (int64_t t = 0; t < m; ++t)
        for (int64_t b = 0; b < nb; ++b) {
            const float* xb = x + t * k + b * kBlock;
            float amax = 0.0f;
            for (int64_t i = 0; i < kBlock; ++i) amax = std::max(amax, std::fabs(xb[i]));
            const float d = amax / float(IntRows::kMax), inv = d > 0.0f ? 1.0f / d : 0.0f;
            int16_t* q = out.q.data() + t * k + b * kBlock;
            for (int64_t i = 0; i < kBlock; ++i) q[i] = int16_t(std::nearbyint(xb[i] * inv));
            out.d[size_t(t * nb + b)] = d;
            for (int64_t s = 0; s < kBlock / 16; ++s) {
                int sum = 0;
                for (int64_t i = 0; i < 16; ++i) sum += q[s * 16 + i];
                out.sums[size_t((t * nb + b) * 16 + s)] = d * float(sum);
            }
        }
}

#if defined(__AVX2__) && defined(__FMA__)
namespace {

// Block layouts (ggml-common.h; see gguf/quant_blocks.h):
//   Q4_K 144 B: d, dmin (f16), scales[12] (6-bit scale and minimum per 32), qs[128] (nibbles)
//   Q5_K 176 B: as Q4_K, then qh[32] (the 5th bits) before qs
//   Q6_K 210 B: ql[128] (low nibbles), qh[64] (2 high bits), scales[16] (int8 per 16), d (f16)
constexpr int64_t blockBytes(GgmlType t) { return t == GgmlType::Q4_K ? 144 : t == GgmlType::Q5_K ? 176 : 210; }

inline float half(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return fp16ToFp32(h);
}

// The 6-bit scales and minimums of a Q4_K/Q5_K block's 8 sub-blocks, packed in 12 bytes as ggml's
// get_scale_min_k4 reads them.
inline void scalesMins(const uint8_t* s, int sc[8], int mn[8]) {
    for (int j = 0; j < 4; ++j) {
        sc[j] = s[j] & 63;
        mn[j] = s[j + 4] & 63;
    }
    for (int j = 4; j < 8; ++j) {
        sc[j] = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
        mn[j] = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

// One weight row's factors, per block: the integer scales of each chunk of 32 values (of its first
// and second 16: they differ in Q6_K only), d, and per 16 values the constant c the unsigned values
// leave out (weight = d·sc·q − c: Q4_K/Q5_K dmin·m, Q6_K 32·d·sc).
struct RowFactors {
    std::vector<int16_t> scales;  // [nb][8][2]
    std::vector<float> d;         // [nb]
    std::vector<float> offsets;   // [nb][16]
    template <GgmlType T>
    void prepare(const uint8_t* row, int64_t nb) {
        scales.resize(size_t(nb * 16));
        d.resize(size_t(nb));
        offsets.resize(size_t(nb * 16));
        for (int64_t b = 0; b < nb; ++b) {
            const uint8_t* blk = row + b * blockBytes(T);
            if constexpr (T == GgmlType::Q6_K) {
                const float dd = half(blk + 208);
                const auto* sc = reinterpret_cast<const int8_t*>(blk + 192);
                d[size_t(b)] = dd;
                // Chunk c = 4h + r covers sub-blocks 8h + 2r and 8h + 2r + 1 (see chunk<Q6_K>).
                for (int c = 0; c < 8; ++c)
                    for (int i = 0; i < 2; ++i) {
                        const int sub = 8 * (c / 4) + 2 * (c % 4) + i;
                        scales[size_t(b * 16 + 2 * c + i)] = sc[sub];
                        offsets[size_t(b * 16 + 2 * c + i)] = 32.0f * dd * float(sc[sub]);
                    }
            } else {
                const float dmin = half(blk + 2);
                int sc[8], mn[8];
                scalesMins(blk + 4, sc, mn);
                d[size_t(b)] = half(blk);
                for (int c = 0; c < 8; ++c)
                    for (int i = 0; i < 2; ++i) {
                        scales[size_t(b * 16 + 2 * c + i)] = int16_t(sc[c]);
                        offsets[size_t(b * 16 + 2 * c + i)] = dmin * float(mn[c]);
                    }
            }
        }
    }
};

// The unsigned values of chunk c (elements 32c .. 32c + 31) of a block, as 32 bytes.
template <GgmlType T, int C>
inline __m256i chunk(const uint8_t* blk) {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    if constexpr (T == GgmlType::Q6_K) {
        // Half h = C / 4 (128 values); within it r = C % 4 picks ql's first or second 32 bytes, their
        // low or high nibbles, and 2 bits of qh at 2r.
        constexpr int h = C / 4, r = C % 4;
        const __m256i ql = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 64 * h + 32 * (r & 1)));
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 128 + 32 * h));
        const __m256i lo = r < 2 ? _mm256_and_si256(ql, low4) : _mm256_and_si256(_mm256_srli_epi16(ql, 4), low4);
        const __m256i hi = _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(qh, 2 * r), 4), _mm256_set1_epi8(0x30));
        return _mm256_or_si256(lo, hi);
    } else {
        constexpr int64_t qsAt = T == GgmlType::Q4_K ? 16 : 48;
        const __m256i qs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + qsAt + 32 * (C / 2)));
        const __m256i lo = C % 2 == 0 ? _mm256_and_si256(qs, low4) : _mm256_and_si256(_mm256_srli_epi16(qs, 4), low4);
        if constexpr (T == GgmlType::Q4_K) return lo;
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 16));
        const __m256i hi = _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(qh, C), 4), _mm256_set1_epi8(0x10));
        return _mm256_or_si256(lo, hi);
    }
}

inline float hsum(__m256 v) {
    const __m128 q = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 h = _mm_add_ps(q, _mm_movehl_ps(q, q));
    return _mm_cvtss_f32(_mm_add_ss(h, _mm_movehdup_ps(h)));
}

// Σ_g c[g] · d_x · sum_x[g] over the row's 16-value groups: what the unsigned values left out.
inline float offsetTerm(const RowFactors& f, const IntRows& x, int64_t t) {
    const float* sums = x.sums.data() + t * (x.k / 16);
    const float* c = f.offsets.data();
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (int64_t g = 0; g < x.k / 16; g += 16) {  // k / 16 is a multiple of 16
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(c + g), _mm256_loadu_ps(sums + g), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(c + g + 8), _mm256_loadu_ps(sums + g + 8), acc1);
    }
    return hsum(_mm256_add_ps(acc0, acc1));
}

template <GgmlType T, int TX, int C>
inline void chunkTimesTokens(const uint8_t* blk, const RowFactors& f, const IntRows& x, int64_t t0, int64_t b, __m256i* acc) {
    // The 32 values times their scales as 16-bit lanes: q ≤ 63 × |sc| ≤ 128 fits. Products with
    // |x| ≤ 4095 summed over a block's 256 values stay below 2^31 in each int32 lane (32 products).
    const __m256i w = chunk<T, C>(blk);
    const int16_t* sc = f.scales.data() + b * 16 + 2 * C;
    const __m256i w0 = _mm256_mullo_epi16(_mm256_cvtepu8_epi16(_mm256_castsi256_si128(w)), _mm256_set1_epi16(sc[0]));
    const __m256i w1 = _mm256_mullo_epi16(_mm256_cvtepu8_epi16(_mm256_extracti128_si256(w, 1)), _mm256_set1_epi16(sc[1]));
    for (int t = 0; t < TX; ++t) {
        const int16_t* xq = x.q.data() + (t0 + t) * x.k + b * kBlock + 32 * C;
        const __m256i p0 = _mm256_madd_epi16(w0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq)));
        const __m256i p1 = _mm256_madd_epi16(w1, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + 16)));
        acc[t] = _mm256_add_epi32(acc[t], _mm256_add_epi32(p0, p1));
    }
}

template <GgmlType T, int TX, int... C>
inline void blockTimesTokens(const uint8_t* blk, const RowFactors& f, const IntRows& x, int64_t t0, int64_t b, __m256i* acc,
                             std::integer_sequence<int, C...>) {
    (chunkTimesTokens<T, TX, C>(blk, f, x, t0, b, acc), ...);
}

// One weight row × TX tokens over blocks [b0, b1), added into part[t] (TX = 8: the row's values
// are unpacked and scaled once for 8 tokens, and 8 int32 accumulators leave registers for the
// operands). Per block the integer sums stay in int32 lanes; one conversion and FMA per block
// applies d·d_x.
template <GgmlType T, int TX>
void tile(const uint8_t* row, const RowFactors& f, const IntRows& x, int64_t t0, int64_t b0, int64_t b1, float* part) {
    const int64_t nb = x.k / kBlock;
    __m256 out[TX];
    for (int t = 0; t < TX; ++t) out[t] = _mm256_setzero_ps();
    for (int64_t b = b0; b < b1; ++b) {
        __m256i acc[TX];
        for (int t = 0; t < TX; ++t) acc[t] = _mm256_setzero_si256();
        blockTimesTokens<T, TX>(row + b * blockBytes(T), f, x, t0, b, acc, std::make_integer_sequence<int, 8>{});
        const float d = f.d[size_t(b)];
        for (int t = 0; t < TX; ++t)
            out[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[t]), _mm256_set1_ps(d * x.d[size_t((t0 + t) * nb + b)]), out[t]);
    }
    for (int t = 0; t < TX; ++t) part[t] += hsum(out[t]);
}

// Cache blocking. A thread takes 16 rows at a time (their factors prepared once) and 32 tokens;
// k is walked 4 blocks (1024 values) at a time, so that 8 tokens' share of x (16 KiB of 16-bit
// values) stays in L1 while the 16 rows pass over it: without the k slices each row streamed all
// its tokens' x from L2, which was the bound (twice the bytes of 8-bit x per multiply-add).
constexpr int64_t kRowTile = 16;
constexpr int64_t kTokenTile = 32;
constexpr int64_t kSliceBlocks = 4;

template <GgmlType T>
void gemm(const void* w, int64_t n, int64_t k, const IntRows& x, float* y, int64_t ldy, int nThreads) {
    const int64_t nb = k / kBlock, rowBytes = nb * blockBytes(T), m = x.m;
    const auto* base = static_cast<const uint8_t*>(w);
    const int64_t tiles = (n + kRowTile - 1) / kRowTile;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nThreads)
    for (int64_t tileIndex = 0; tileIndex < tiles; ++tileIndex) {
        thread_local RowFactors f[kRowTile];
        const int64_t r0 = tileIndex * kRowTile, rows = std::min(n, r0 + kRowTile) - r0;
        for (int64_t r = 0; r < rows; ++r) f[r].prepare<T>(base + (r0 + r) * rowBytes, nb);
        for (int64_t t0 = 0; t0 < m; t0 += kTokenTile) {
            const int64_t tokens = std::min(m - t0, kTokenTile);
            float part[kRowTile][kTokenTile] = {};
            for (int64_t b0 = 0; b0 < nb; b0 += kSliceBlocks) {
                const int64_t b1 = std::min(nb, b0 + kSliceBlocks);
                int64_t t = 0;
                for (; t + 8 <= tokens; t += 8)
                    for (int64_t r = 0; r < rows; ++r) tile<T, 8>(base + (r0 + r) * rowBytes, f[r], x, t0 + t, b0, b1, part[r] + t);
                for (; t + 2 <= tokens; t += 2)
                    for (int64_t r = 0; r < rows; ++r) tile<T, 2>(base + (r0 + r) * rowBytes, f[r], x, t0 + t, b0, b1, part[r] + t);
                for (; t < tokens; ++t)
                    for (int64_t r = 0; r < rows; ++r) tile<T, 1>(base + (r0 + r) * rowBytes, f[r], x, t0 + t, b0, b1, part[r] + t);
            }
            for (int64_t r = 0; r < rows; ++r)
                for (int64_t t = 0; t < tokens; ++t) y[(t0 + t) * ldy + r0 + r] = part[r][t] - offsetTerm(f[r], x, t0 + t);
        }
    }
}

}  // namespace

bool haveGemmKQuant(GgmlType type) { return type == GgmlType::Q4_K || type == GgmlType::Q5_K || type == GgmlType::Q6_K; }

void gemmKQuant(GgmlType type, const void* w, int64_t n, int64_t k, const IntRows& x, float* y, int64_t ldy, int nThreads) {
    switch (type) {
        case GgmlType::Q4_K: return gemm<GgmlType::Q4_K>(w, n, k, x, y, ldy, nThreads);
        case GgmlType::Q5_K: return gemm<GgmlType::Q5_K>(w, n, k, x, y, ldy, nThreads);
        case GgmlType::Q6_K: return gemm<GgmlType::Q6_K>(w, n, k, x, y, ldy, nThreads);
        default: return;
    }
}

#else

bool haveGemmKQuant(GgmlType) { return false; }
void gemmKQuant(GgmlType, const void*, int64_t, int64_t, const IntRows&, float*, int64_t, int) {}

#endif

}  // namespace inferscope
