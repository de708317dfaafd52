#include "backend/gemm_q4k.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

#include "gguf/ggml_types.h"

namespace inferscope {
namespace {

constexpr int64_t kBlock = 256;       // weights per Q4_K block
constexpr int64_t kBlockBytes = 144;  // d, dmin (f16), scales[12], qs[128]
constexpr int64_t kSub = 32;          // weights per sub-block (one 6-bit scale and minimum)

}  // namespace

void quantizeRowsQ8(const float* x, int64_t m, int64_t k, Q8Rows& out) {
    const int64_t nb = k / kBlock;
    out.m = m;
    out.k = k;
    out.q.resize(size_t(m * k));
    out.d.resize(size_t(m * nb));
    out.sums.resize(size_t(m * k / kSub));
    for (int64_t t = 0; t < m; ++t)
        for (int64_t b = 0; b < nb; ++b) {
            const float* xb = x + t * k + b * kBlock;
            float amax = 0.0f;
            for (int64_t i = 0; i < kBlock; ++i) amax = std::max(amax, std::fabs(xb[i]));
            const float d = amax / 127.0f, inv = d > 0.0f ? 1.0f / d : 0.0f;
            int8_t* q = out.q.data() + t * k + b * kBlock;
            for (int64_t i = 0; i < kBlock; ++i) q[i] = int8_t(std::nearbyint(xb[i] * inv));
            out.d[size_t(t * nb + b)] = d;
            for (int64_t s = 0; s < kBlock / kSub; ++s) {
                int sum = 0;
                for (int64_t i = 0; i < kSub; ++i) sum += q[s * kSub + i];
                out.sums[size_t((t * nb + b) * (kBlock / kSub) + s)] = int16_t(sum);
            }
        }
}

#if defined(__AVX2__) && defined(__FMA__)
namespace {

// The 6-bit scales and minimums of a Q4_K block's 8 sub-blocks, packed in 12 bytes as ggml's
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

// One weight row's factors for the kernel, per block: the scales broadcast as 16-bit lanes (for
// vpmaddwd), d, and dmin·minimum per sub-block (the minimums' term is a separate small dot
// product with the activations' scaled sub-block sums).
struct Lanes16 {
    __m256i v;  // one 16-bit value in every lane
};
struct RowFactors {
    std::vector<Lanes16> scales;  // [nb][8]
    std::vector<float> d;         // [nb]
    std::vector<float> mins;      // [nb][8] dmin·m
    void prepare(const uint8_t* row, int64_t nb) {
        scales.resize(size_t(nb * 8));
        d.resize(size_t(nb));
        mins.resize(size_t(nb * 8));
        for (int64_t b = 0; b < nb; ++b) {
            const uint8_t* blk = row + b * kBlockBytes;
            uint16_t hd, hm;
            std::memcpy(&hd, blk, 2);
            std::memcpy(&hm, blk + 2, 2);
            const float dmin = fp16ToFp32(hm);
            int sc[8], mn[8];
            scalesMins(blk + 4, sc, mn);
            d[size_t(b)] = fp16ToFp32(hd);
            for (int s = 0; s < 8; ++s) {
                scales[size_t(b * 8 + s)].v = _mm256_set1_epi16(int16_t(sc[s]));
                mins[size_t(b * 8 + s)] = dmin * float(mn[s]);
            }
        }
    }
};

inline float hsum(__m256 v) {
    const __m128 q = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 h = _mm_add_ps(q, _mm_movehl_ps(q, q));
    return _mm_cvtss_f32(_mm_add_ss(h, _mm_movehdup_ps(h)));
}

// Σ_b Σ_s dmin·m[b][s] · d_x[b] · sum_x[b][s]: the minimums' share of one (row, token) product.
inline float minsTerm(const RowFactors& f, const Q8Rows& x, int64_t t, int64_t nb) {
    const float* dx = x.d.data() + t * nb;
    const int16_t* sums = x.sums.data() + t * nb * 8;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const __m256 s = _mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sums + b * 8))));
        acc = _mm256_fmadd_ps(_mm256_mul_ps(s, _mm256_set1_ps(dx[b])), _mm256_loadu_ps(f.mins.data() + b * 8), acc);
    }
    return hsum(acc);
}

// One weight row × TX tokens over the whole of k (TX = 8 measured fastest here: the row's nibbles
// are unpacked once for 8 tokens, and 8 int32 accumulators leave registers for the operands).
// Per block, the integer sums of the 8 sub-blocks (each scaled by its 6-bit scale with vpmaddwd)
// stay in int32 lanes; one conversion and FMA per block applies d·d_x.
template <int TX>
void tile(const uint8_t* row, const RowFactors& f, const Q8Rows& x, int64_t t0, int64_t nb, float* y, int64_t ldy, int64_t n0) {
    const __m256i low = _mm256_set1_epi8(0x0F);
    const int64_t k = x.k;
    __m256 out[TX];
    for (int t = 0; t < TX; ++t) out[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        __m256i acc[TX];
        for (int t = 0; t < TX; ++t) acc[t] = _mm256_setzero_si256();
        for (int j = 0; j < 4; ++j) {  // 64 weights: low nibbles sub-block 2j, high nibbles 2j + 1
            const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + b * kBlockBytes + 16 + 32 * j));
            const __m256i wl = _mm256_and_si256(v, low), wh = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
            const __m256i sl = f.scales[size_t(b * 8 + 2 * j)].v, sh = f.scales[size_t(b * 8 + 2 * j + 1)].v;
            for (int t = 0; t < TX; ++t) {
                const int8_t* xq = x.q.data() + (t0 + t) * k + b * kBlock + 64 * j;
                // u8 weights ≤ 15 × s8 ≤ 127, pairs ≤ 3810: no int16 saturation.
                const __m256i pl = _mm256_madd_epi16(_mm256_maddubs_epi16(wl, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq))), sl);
                const __m256i ph = _mm256_madd_epi16(_mm256_maddubs_epi16(wh, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + 32))), sh);
                acc[t] = _mm256_add_epi32(acc[t], _mm256_add_epi32(pl, ph));
            }
        }
        const float d = f.d[size_t(b)];
        for (int t = 0; t < TX; ++t)
            out[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[t]), _mm256_set1_ps(d * x.d[size_t((t0 + t) * nb + b)]), out[t]);
    }
    for (int t = 0; t < TX; ++t) y[(t0 + t) * ldy + n0] = hsum(out[t]) - minsTerm(f, x, t0 + t, nb);
}

constexpr int64_t kRowTile = 16;    // rows a thread takes at a time
constexpr int64_t kTokenTile = 64;  // tokens whose 8-bit rows stay in L2 while a row tile runs

}  // namespace

bool haveGemmQ4K() { return true; }

void gemmQ4K(const void* w, int64_t n, int64_t k, const Q8Rows& x, float* y, int64_t ldy, int nThreads) {
    const int64_t nb = k / kBlock, rowBytes = nb * kBlockBytes, m = x.m;
    const auto* base = static_cast<const uint8_t*>(w);
    const int64_t tiles = (n + kRowTile - 1) / kRowTile;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nThreads)
    for (int64_t tileIndex = 0; tileIndex < tiles; ++tileIndex) {
        thread_local RowFactors f;
        const int64_t r0 = tileIndex * kRowTile, r1 = std::min(n, r0 + kRowTile);
        for (int64_t t0 = 0; t0 < m; t0 += kTokenTile) {
            const int64_t t1 = std::min(m, t0 + kTokenTile);
            for (int64_t r = r0; r < r1; ++r) {
                const uint8_t* row = base + r * rowBytes;
                f.prepare(row, nb);
                int64_t t = t0;
                for (; t + 8 <= t1; t += 8) tile<8>(row, f, x, t, nb, y, ldy, r);
                for (; t + 2 <= t1; t += 2) tile<2>(row, f, x, t, nb, y, ldy, r);
                if (t < t1) tile<1>(row, f, x, t, nb, y, ldy, r);
            }
        }
    }
}

#else

bool haveGemmQ4K() { return false; }
void gemmQ4K(const void*, int64_t, int64_t, const Q8Rows&, float*, int64_t, int) {}

#endif

}  // namespace inferscope
