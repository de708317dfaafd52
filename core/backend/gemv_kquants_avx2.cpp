// AVX2 integer kernels for Q4_K, Q5_K and Q6_K (gemv_kquants.h): per 256-weight block, the stored
// unsigned integers (4, 5 or 6 bits) are multiplied with x's int8 values by `maddubs` (u8 × s8
// pairs summed into int16: at most 2·63·127 = 16002, no saturation) and widened to int32 by
// `madd` (with ones for Q4_K/Q5_K, whose 32-element sub-blocks match x's scales; with the two
// 16-element sub-blocks' integer scales for Q6_K), all exact. One f32 multiply-add per 32 elements
// then applies d_w·d_x (·sc for Q4_K/Q5_K); the mins (Q4_K, Q5_K) and the offset -32 (Q6_K) come
// from x's sub-block sums: Σ (sc·q - m)·x = Σ sc·(Σ q·x) - m·Σ x.
#include <array>

#include "backend/gemv_kquants_kernels.h"
#include "backend/prefetch_weights.h"

#if defined(__AVX2__)

namespace inferscope::INFERSCOPE_KERNELS_NS::kquants {
namespace {

// Q4_K / Q5_K: 8 six-bit scales and 8 six-bit mins in 12 bytes, unpacked one per byte. Sub-blocks
// 0..3 take the low 6 bits of bytes j (scale) and j + 4 (min); 4..7 a nibble of byte j + 4 plus
// the top 2 bits of bytes j - 4 (scale) and j (min).
struct ScalesMins {
    uint64_t scales, mins;
};
inline ScalesMins scalesMinsK4(const uint8_t* s) {
    uint32_t a, b, c;
    std::memcpy(&a, s, 4);
    std::memcpy(&b, s + 4, 4);
    std::memcpy(&c, s + 8, 4);
    constexpr uint32_t low6 = 0x3F3F3F3F, low4 = 0x0F0F0F0F, bits45 = 0x30303030;
    const uint32_t sc0 = a & low6, mn0 = b & low6;
    const uint32_t sc1 = (c & low4) | ((a >> 2) & bits45), mn1 = ((c >> 4) & low4) | ((b >> 2) & bits45);
    return {sc0 | uint64_t(sc1) << 32, mn0 | uint64_t(mn1) << 32};
}

// pshufb controls: kWordPair[p] broadcasts 16-bit word 2p over the low 128-bit lane and word
// 2p + 1 over the high lane (a 32-byte run of two 16-element sub-blocks: maddubs's low lane holds
// the first 16 elements).
alignas(32) constexpr auto kWordPair = [] {
    std::array<std::array<uint8_t, 32>, 4> c{};
    for (int p = 0; p < 4; ++p)
        for (int b = 0; b < 32; b += 2) {
            const int w = 2 * p + (b >= 16);
            c[p][b] = uint8_t(2 * w), c[p][b + 1] = uint8_t(2 * w + 1);
        }
    return c;
}();

inline __m256i load(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
inline __m256i wordPair(int p) { return _mm256_load_si256(reinterpret_cast<const __m256i*>(kWordPair[size_t(p)].data())); }

// Q4_K and Q5_K share everything but the 5th bit: Q4_K (144 B) = d, dmin, scales[12], qs[128];
// Q5_K (176 B) = d, dmin, scales[12], qh[32], qs[128]. qs holds 4 groups of 64 elements: 32 bytes,
// low nibbles = sub-block 2g, high = 2g + 1; Q5_K's 5th bit of sub-block s, element l is bit s of qh[l].
template <int M, bool FifthBit>
void q45Rows(const GemvTask& t, const XBlock256* xq, int64_t n0, int64_t n1) {
    constexpr int blockBytes = FifthBit ? 176 : 144, qsOffset = FifthBit ? 48 : 16;
    constexpr int exactRows = FifthBit ? kKQuantExactRows : kQ4KExactRows;  // kquantExactRows
    constexpr int A = M <= exactRows ? 4 : 2;  // accumulators per row: independent multiply-add chains
    const int64_t nb = t.k / 256;
    const auto* base = static_cast<const uint8_t*>(t.w);
    const __m256i low4 = _mm256_set1_epi8(0x0F), bit4 = _mm256_set1_epi8(0x10), ones16 = _mm256_set1_epi16(1);
    for (int64_t n = n0; n < n1; ++n) {
        const uint8_t* b = base + n * nb * blockBytes;
        __m256 acc[M][A], accMin[M];
        for (int i = 0; i < M; ++i) {
            accMin[i] = _mm256_setzero_ps();
            for (int a = 0; a < A; ++a) acc[i][a] = _mm256_setzero_ps();
        }
        for (int64_t blk = 0; blk < nb; ++blk, b += blockBytes) {
            prefetchWeightsAhead(b, blockBytes);
            const auto [scales, mins] = scalesMinsK4(b + 4);
            const __m256 d = _mm256_set1_ps(half(b)), dmin = _mm256_set1_ps(half(b + 2));
            const __m256 scF = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(int64_t(scales))));
            const __m256 minsF = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(int64_t(mins))));
            // d_w·sc_j·d_x,j of each sub-block j, broadcast from memory: a load instead of an ALU
            // shuffle per sub-block (the ALUs are what limits this loop).
            alignas(32) float f[M][8];
            for (int i = 0; i < M; ++i) {
                const XBlock256& x = xq[i * nb + blk];
                const __m256 dx = _mm256_load_ps(x.d);
                _mm256_store_ps(f[i], _mm256_mul_ps(_mm256_mul_ps(d, dx), scF));
                // Σ_j dmin·dx_j·(m_j·Σx_j); m_j·Σx_j is exact in f32 (63·4064 < 2^24).
                const __m256 sums = _mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(x.sum32))));
                accMin[i] = _mm256_fmadd_ps(_mm256_mul_ps(dmin, dx), _mm256_mul_ps(minsF, sums), accMin[i]);
            }
            __m256i high = FifthBit ? load(b + 16) : _mm256_setzero_si256();  // bits 2g, 2g + 1 shifted to bits 0, 1
            for (int g = 0; g < 4; ++g) {
                const __m256i bits = load(b + qsOffset + 32 * g);
                __m256i lo = _mm256_and_si256(bits, low4), hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), low4);
                if constexpr (FifthBit) {
                    // Bit 0 (1) of each byte to bit 4; a 16-bit shift moves nothing across bytes
                    // into bit 4. After 2g right shifts, bits 8 - 2g.. hold the next byte's: unread.
                    lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_slli_epi16(high, 4), bit4));
                    hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_slli_epi16(high, 3), bit4));
                    high = _mm256_srli_epi16(high, 2);
                }
                for (int i = 0; i < M; ++i) {
                    const int8_t* x = xq[i * nb + blk].q + 64 * g;
                    const __m256i pLo = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, load(x)), ones16);
                    const __m256i pHi = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, load(x + 32)), ones16);
                    acc[i][(2 * g) % A] = _mm256_fmadd_ps(_mm256_broadcast_ss(&f[i][2 * g]), _mm256_cvtepi32_ps(pLo), acc[i][(2 * g) % A]);
                    acc[i][(2 * g + 1) % A] = _mm256_fmadd_ps(_mm256_broadcast_ss(&f[i][2 * g + 1]), _mm256_cvtepi32_ps(pHi), acc[i][(2 * g + 1) % A]);
                }
            }
        }
        for (int i = 0; i < M; ++i) {
            __m256 total = acc[i][0];
            for (int a = 1; a < A; ++a) total = _mm256_add_ps(total, acc[i][a]);
            t.y[i * t.n + n] = hsum(_mm256_sub_ps(total, accMin[i]));
        }
    }
}

// Q6_K (210 B) = ql[128], qh[64], scales[16] (int8), d. Two halves of 128 elements (64 bytes of ql,
// 32 of qh, 8 scales): element l + 32·k (l < 32, k < 4) is a nibble of ql[l] (k even) or
// ql[l + 32] (k odd), low for k < 2, with bits 2k, 2k + 1 of qh[l] above it; its scale is
// sc[l / 16 + 2k]. The stored q is 0..63 for q - 32: Σ sc·(q - 32)·x = Σ sc·q·x - 32·Σ sc·Σx.
// x is read in its 16 bits (XBlock256: q, then the residue byte r at a 254th of q's step).
template <int M>
void q6Rows(const GemvTask& t, const XBlock256* xq, int64_t n0, int64_t n1) {
    constexpr int blockBytes = 210;
    constexpr int A = M <= kKQuantExactRows ? 4 : 2;  // accumulators per row: independent multiply-add chains
    const int64_t nb = t.k / 256;
    const auto* base = static_cast<const uint8_t*>(t.w);
    const __m256i low4 = _mm256_set1_epi8(0x0F), bits45 = _mm256_set1_epi8(0x30);
    const __m256 minus32 = _mm256_set1_ps(-32.0f), residueStep = _mm256_set1_ps(1.0f / kXResidueSteps);
    for (int64_t n = n0; n < n1; ++n) {
        const uint8_t* b = base + n * nb * blockBytes;
        __m256 acc[M][A];
        for (int i = 0; i < M; ++i)
            for (int a = 0; a < A; ++a) acc[i][a] = _mm256_setzero_ps();
        for (int64_t blk = 0; blk < nb; ++blk, b += blockBytes) {
            prefetchWeightsAhead(b, blockBytes);
            const __m256i sc = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 192)));  // 16 × int16
            const __m256 d = _mm256_set1_ps(half(b + 208));
            alignas(32) float f[M][8], fr[M][8];  // d_w·d_x of each 32 elements (fr: of x's residue byte)
            for (int i = 0; i < M; ++i) {
                const XBlock256& x = xq[i * nb + blk];
                const __m256 dd = _mm256_mul_ps(d, _mm256_load_ps(x.d)), ddr = _mm256_mul_ps(dd, residueStep);
                _mm256_store_ps(f[i], dd);
                _mm256_store_ps(fr[i], ddr);
                // The offset, per 32 elements j: -32·(sc_2j·Σx_2j + sc_2j+1·Σx_2j+1), for q and for r.
                const __m256i offset = _mm256_madd_epi16(sc, _mm256_load_si256(reinterpret_cast<const __m256i*>(x.sum16)));
                const __m256i offsetR = _mm256_madd_epi16(sc, _mm256_load_si256(reinterpret_cast<const __m256i*>(x.rsum16)));
                acc[i][0] = _mm256_fmadd_ps(_mm256_mul_ps(dd, minus32), _mm256_cvtepi32_ps(offset), acc[i][0]);
                acc[i][1 % A] = _mm256_fmadd_ps(_mm256_mul_ps(ddr, minus32), _mm256_cvtepi32_ps(offsetR), acc[i][1 % A]);
            }
            for (int h = 0; h < 2; ++h) {
                const uint8_t* ql = b + 64 * h;
                const __m256i a = load(ql), c = load(ql + 32), hb = load(b + 128 + 32 * h);
                const __m256i q[4] = {
                    _mm256_or_si256(_mm256_and_si256(a, low4), _mm256_and_si256(_mm256_slli_epi16(hb, 4), bits45)),
                    _mm256_or_si256(_mm256_and_si256(c, low4), _mm256_and_si256(_mm256_slli_epi16(hb, 2), bits45)),
                    _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(a, 4), low4), _mm256_and_si256(hb, bits45)),
                    _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(c, 4), low4), _mm256_and_si256(_mm256_srli_epi16(hb, 2), bits45)),
                };
                const __m256i scHalf = h == 0 ? _mm256_permute2x128_si256(sc, sc, 0x00) : _mm256_permute2x128_si256(sc, sc, 0x11);
                for (int k = 0; k < 4; ++k) {
                    const int j = 4 * h + k;  // x's block of 32
                    const __m256i s = _mm256_shuffle_epi8(scHalf, wordPair(k));
                    for (int i = 0; i < M; ++i) {
                        const XBlock256& x = xq[i * nb + blk];
                        const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(q[k], load(x.q + 32 * j)), s);
                        const __m256i pr = _mm256_madd_epi16(_mm256_maddubs_epi16(q[k], load(x.r + 32 * j)), s);
                        acc[i][j % A] = _mm256_fmadd_ps(_mm256_broadcast_ss(&f[i][j]), _mm256_cvtepi32_ps(p), acc[i][j % A]);
                        acc[i][(j + 1) % A] = _mm256_fmadd_ps(_mm256_broadcast_ss(&fr[i][j]), _mm256_cvtepi32_ps(pr), acc[i][(j + 1) % A]);
                    }
                }
            }
        }
        for (int i = 0; i < M; ++i) {
            __m256 total = acc[i][0];
            for (int a = 1; a < A; ++a) total = _mm256_add_ps(total, acc[i][a]);
            t.y[i * t.n + n] = hsum(total);
        }
    }
}

}  // namespace

void q4_KRows(const GemvTask& t, const XBlock256* xq, int64_t m, int64_t n0, int64_t n1) {
    forRows(m, [&]<int M>() { q45Rows<M, false>(t, xq, n0, n1); });
}

void q5_KRows(const GemvTask& t, const XBlock256* xq, int64_t m, int64_t n0, int64_t n1) {
    forRows(m, [&]<int M>() { q45Rows<M, true>(t, xq, n0, n1); });
}

void q6_KRows(const GemvTask& t, const XBlock256* xq, int64_t m, int64_t n0, int64_t n1) {
    forRows(m, [&]<int M>() { q6Rows<M>(t, xq, n0, n1); });
}

}  // namespace inferscope::INFERSCOPE_KERNELS_NS::kquants
#endif  // __AVX2__
