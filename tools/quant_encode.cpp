// Block quantizers in ggml's reference order (see quant_encode.h). Every float expression keeps
// ggml's association ((w·x)·l, not w·(x·l)) and this file is compiled with -ffp-contract=off
// (core/CMakeLists.txt): a fused multiply-add would change the last bit of a sum, and with it a
// candidate choice, and with that whole sub-blocks.
#include "tools/quant_encode.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

namespace inferscope {
namespace {

constexpr size_t kQK = 256;                  // K-quant super-block
constexpr float kGroupMaxEps = 1e-15f;       // below this a group is "all zero" (ggml GROUP_MAX_EPS)

void putHalf(uint8_t* dst, float f) {
    const uint16_t h = fp32ToFp16(f);
    std::memcpy(dst, &h, 2);
}
float getHalf(const uint8_t* src) {
    uint16_t h;
    std::memcpy(&h, src, 2);
    return fp16ToFp32(h);
}

// Round to nearest (ties to even) by the float magic-number trick ggml uses; valid for |f| < 2^22.
int nearestInt(float f) {
    const float shifted = f + 12582912.f;  // 1.5·2^23: the integer lands in the low mantissa bits
    int32_t bits;
    std::memcpy(&bits, &shifted, 4);
    return (bits & 0x007fffff) - 0x00400000;
}

// The signed value of largest magnitude (the first one on ties).
float signedAbsMax(const float* x, size_t n) {
    float amax = 0.0f, max = 0.0f;
    for (size_t j = 0; j < n; ++j)
        if (amax < std::fabs(x[j])) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    return max;
}

// ---- 32-element types: 18 / 22 / 24 / 34 bytes --------------------------------------------------

// Q4_0 [d][qs 16]: element j in the low nibble of byte j, element j+16 in the high nibble.
void q4_0(const float* x, uint8_t* y) {
    const float d = signedAbsMax(x, 32) / -8;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    putHalf(y, d);
    for (int j = 0; j < 16; ++j) {
        const int lo = std::min(15, int(int8_t(int(x[j] * id + 8.5f))));
        const int hi = std::min(15, int(int8_t(int(x[j + 16] * id + 8.5f))));
        y[2 + j] = uint8_t(lo | (hi << 4));
    }
}

// Q5_0 [d][qh 4][qs 16] and Q5_1 [d][m][qh 4][qs 16]: low nibbles as Q4_0, 5th bit of element j in
// bit j of qh.
void packQ5(const uint8_t q[32], uint8_t* qhOut, uint8_t* qs) {
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
        qs[j] = uint8_t((q[j] & 0x0F) | ((q[j + 16] & 0x0F) << 4));
        qh |= uint32_t((q[j] & 0x10u) >> 4) << j;
        qh |= uint32_t((q[j + 16] & 0x10u) >> 4) << (j + 16);
    }
    std::memcpy(qhOut, &qh, 4);
}

void q5_0(const float* x, uint8_t* y) {
    const float d = signedAbsMax(x, 32) / -16;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    putHalf(y, d);
    uint8_t q[32];
    for (int j = 0; j < 32; ++j) q[j] = uint8_t(std::min(31, int(int8_t(int(x[j] * id + 16.5f)))));
    packQ5(q, y + 2, y + 6);
}

void q5_1(const float* x, uint8_t* y) {
    float min = FLT_MAX, max = -FLT_MAX;
    for (int j = 0; j < 32; ++j) {
        if (x[j] < min) min = x[j];
        if (x[j] > max) max = x[j];
    }
    const float d = (max - min) / 31;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    putHalf(y, d);
    putHalf(y + 2, min);
    uint8_t q[32];
    for (int j = 0; j < 32; ++j) q[j] = uint8_t(int((x[j] - min) * id + 0.5f));
    packQ5(q, y + 4, y + 8);
}

// ---- K-quants -------------------------------------------------------------------------------------

// make_qkx2_quants: the (scale, min) of 32 values on the grid 0..nmax minimising the weighted
// squared error, trying the plain min/max grid and nstep+1 widened ones. Returns the scale; `minOut`
// is the positive offset subtracted (weight = scale·L - minOut).
float fitScaleMin(const float* x, const float* w, int nmax, uint8_t* L, float* minOut, float rmin, float rdelta, int nstep) {
    constexpr int n = 32;
    float min = x[0], max = x[0];
    float sumW = w[0], sumX = sumW * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sumW += w[i];
        sumX += w[i] * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        std::fill(L, L + n, uint8_t(0));
        *minOut = -min;
        return 0.0f;
    }
    float iscale = nmax / (max - min);
    float scale = 1 / iscale;
    float bestErr = 0;
    for (int i = 0; i < n; ++i) {
        L[i] = uint8_t(std::clamp(nearestInt(iscale * (x[i] - min)), 0, nmax));
        const float diff = scale * L[i] + min - x[i];
        bestErr += w[i] * (diff * diff);
    }
    uint8_t candidate[n];
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * is + nmax) / (max - min);
        float sumL = 0, sumL2 = 0, sumXL = 0;
        for (int i = 0; i < n; ++i) {
            const int l = std::clamp(nearestInt(iscale * (x[i] - min)), 0, nmax);
            candidate[i] = uint8_t(l);
            sumL += w[i] * l;
            sumL2 += w[i] * l * l;
            sumXL += w[i] * l * x[i];
        }
        const float D = sumW * sumL2 - sumL * sumL;
        if (D <= 0) continue;
        float thisScale = (sumW * sumXL - sumX * sumL) / D;
        float thisMin = (sumL2 * sumX - sumL * sumXL) / D;
        if (thisMin > 0) {
            thisMin = 0;
            thisScale = sumXL / sumL2;
        }
        float err = 0;
        for (int i = 0; i < n; ++i) {
            const float diff = thisScale * candidate[i] + thisMin - x[i];
            err += w[i] * (diff * diff);
        }
        if (err < bestErr) {
            std::copy(candidate, candidate + n, L);
            bestErr = err;
            scale = thisScale;
            min = thisMin;
        }
    }
    *minOut = -min;
    return scale;
}

// Q4_K [d][dmin][scales 12][qs 128] and Q5_K [d][dmin][scales 12][qh 32][qs 128]. nmax 15 or 31.
// Returns the 256 levels in L (0..nmax) after writing d, dmin and the packed 6-bit scales.
void fitK4(const float* x, uint8_t* y, int nmax, float rmin, int nstep, uint8_t L[kQK]) {
    float scales[8], mins[8], weights[32];
    float maxScale = 0, maxMin = 0;
    for (int j = 0; j < 8; ++j) {
        const float* xs = x + 32 * j;
        float sumX2 = 0;
        for (int l = 0; l < 32; ++l) sumX2 += xs[l] * xs[l];
        const float avX = std::sqrt(sumX2 / 32);
        for (int l = 0; l < 32; ++l) weights[l] = avX + std::fabs(xs[l]);
        scales[j] = fitScaleMin(xs, weights, nmax, L + 32 * j, &mins[j], rmin, 0.1f, nstep);
        if (scales[j] > maxScale) maxScale = scales[j];
        if (mins[j] > maxMin) maxMin = mins[j];
    }
    const float invScale = maxScale > 0 ? 63.f / maxScale : 0.f;
    const float invMin = maxMin > 0 ? 63.f / maxMin : 0.f;
    uint8_t* sc = y + 4;
    std::memset(sc, 0, 12);
    for (int j = 0; j < 8; ++j) {
        // Truncated to a byte as ggml's uint8_t does, then capped.
        const uint8_t ls = std::min<uint8_t>(63, uint8_t(nearestInt(invScale * scales[j])));
        const uint8_t lm = std::min<uint8_t>(63, uint8_t(nearestInt(invMin * mins[j])));
        if (j < 4) {  // bytes 0..3 scales, 4..7 mins (6 bits each); top 2 bits carry sub-blocks 4..7
            sc[j] = ls;
            sc[j + 4] = lm;
        } else {  // bytes 8..11: low nibbles of scale | min
            sc[j + 4] = uint8_t((ls & 0xF) | ((lm & 0xF) << 4));
            sc[j - 4] |= uint8_t((ls >> 4) << 6);
            sc[j] |= uint8_t((lm >> 4) << 6);
        }
    }
    putHalf(y, maxScale / 63.f);
    putHalf(y + 2, maxMin / 63.f);
    // Re-round every value against the factors a decoder will use.
    const float d = getHalf(y), dmin = getHalf(y + 2);
    for (int j = 0; j < 8; ++j) {
        const uint8_t s = j < 4 ? sc[j] & 63 : uint8_t((sc[j + 4] & 0xF) | ((sc[j - 4] >> 6) << 4));
        const uint8_t m = j < 4 ? sc[j + 4] & 63 : uint8_t((sc[j + 4] >> 4) | ((sc[j] >> 6) << 4));
        const float dl = d * s;
        if (dl == 0.0f) continue;
        const float ml = dmin * m;
        for (int i = 0; i < 32; ++i) L[32 * j + i] = uint8_t(std::clamp(nearestInt((x[32 * j + i] + ml) / dl), 0, nmax));
    }
}

void q4_K(const float* x, uint8_t* y) {
    uint8_t L[kQK];
    fitK4(x, y, 15, -1.f, 20, L);
    // Each 64 values → 32 bytes: value j in the low nibble, value j+32 in the high one.
    uint8_t* q = y + 16;
    for (size_t j = 0; j < kQK; j += 64, q += 32)
        for (int l = 0; l < 32; ++l) q[l] = uint8_t(L[j + l] | (L[j + l + 32] << 4));
}

void q5_K(const float* x, uint8_t* y) {
    uint8_t L[kQK];
    fitK4(x, y, 31, -0.5f, 15, L);
    uint8_t* qh = y + 16;
    uint8_t* ql = y + 48;
    std::memset(qh, 0, 32);
    // As Q4_K's nibbles; the 5th bits of 64-value group g go to bits 2g, 2g+1 of qh[l].
    uint8_t m1 = 1, m2 = 2;
    for (size_t n = 0; n < kQK; n += 64, ql += 32, m1 <<= 2, m2 <<= 2)
        for (int j = 0; j < 32; ++j) {
            int l1 = L[n + j], l2 = L[n + j + 32];
            if (l1 > 15) l1 -= 16, qh[j] |= m1;
            if (l2 > 15) l2 -= 16, qh[j] |= m2;
            ql[j] = uint8_t(l1 | (l2 << 4));
        }
}

// make_qx_quants with rmse_type 1: the symmetric scale of 16 values on -nmax..nmax-1, the best of
// 19 grids by the x²-weighted fit. L gets level + nmax.
float fitScaleSymmetric(const float* x, int nmax, int8_t* L) {
    constexpr int n = 16;
    float amax = 0, max = 0;
    for (int i = 0; i < n; ++i)
        if (std::fabs(x[i]) > amax) {
            amax = std::fabs(x[i]);
            max = x[i];
        }
    if (amax < kGroupMaxEps) {
        std::fill(L, L + n, int8_t(0));
        return 0.f;
    }
    auto level = [&](float iscale, int i) { return std::clamp(nearestInt(iscale * x[i]), -nmax, nmax - 1); };
    float iscale = -nmax / max;
    float sumLX = 0, sumL2 = 0;
    for (int i = 0; i < n; ++i) {
        const int l = level(iscale, i);
        L[i] = int8_t(l + nmax);
        const float w = x[i] * x[i];
        sumLX += w * x[i] * l;
        sumL2 += w * l * l;
    }
    float scale = sumL2 != 0.0f ? sumLX / sumL2 : 0.0f;
    float best = scale * sumLX;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        iscale = -(nmax + 0.1f * is) / max;
        sumLX = sumL2 = 0;
        for (int i = 0; i < n; ++i) {
            const int l = level(iscale, i);
            const float w = x[i] * x[i];
            sumLX += w * x[i] * l;
            sumL2 += w * l * l;
        }
        if (sumL2 > 0 && sumLX * sumLX > best * sumL2) {
            for (int i = 0; i < n; ++i) L[i] = int8_t(nmax + level(iscale, i));
            scale = sumLX / sumL2;
            best = scale * sumLX;
        }
    }
    return scale;
}

// Q6_K [ql 128][qh 64][scales 16 int8][d].
void q6_K(const float* x, uint8_t* y) {
    int8_t L[kQK];
    float scales[16];
    float maxScale = 0, maxAbsScale = 0;
    for (int ib = 0; ib < 16; ++ib) {
        scales[ib] = fitScaleSymmetric(x + 16 * ib, 32, L + 16 * ib);
        if (std::fabs(scales[ib]) > maxAbsScale) {
            maxAbsScale = std::fabs(scales[ib]);
            maxScale = scales[ib];
        }
    }
    std::memset(y, 0, 210);
    if (maxAbsScale < kGroupMaxEps) return;  // all zero, d = +0
    auto* sc = reinterpret_cast<int8_t*>(y + 192);
    const float iscale = -128.f / maxScale;
    putHalf(y + 208, 1 / iscale);
    for (int ib = 0; ib < 16; ++ib) sc[ib] = int8_t(std::min(127, nearestInt(iscale * scales[ib])));
    const float d0 = getHalf(y + 208);
    for (int j = 0; j < 16; ++j) {
        const float d = d0 * sc[j];
        if (d == 0.0f) continue;
        for (int i = 0; i < 16; ++i) L[16 * j + i] = int8_t(std::clamp(nearestInt(x[16 * j + i] / d), -32, 31) + 32);
    }
    // Per 128 values: low nibbles of j and j+64 share ql[j], of j+32 and j+96 ql[j+32]; the 2 high
    // bits of j, j+32, j+64, j+96 are qh[j]'s bit pairs 0..3.
    uint8_t* ql = y;
    uint8_t* qh = y + 128;
    for (size_t j = 0; j < kQK; j += 128, ql += 64, qh += 32)
        for (int l = 0; l < 32; ++l) {
            const auto* q = reinterpret_cast<const uint8_t*>(L) + j + l;
            ql[l] = uint8_t((q[0] & 0xF) | ((q[64] & 0xF) << 4));
            ql[l + 32] = uint8_t((q[32] & 0xF) | ((q[96] & 0xF) << 4));
            qh[l] = uint8_t((q[0] >> 4) | ((q[32] >> 4) << 2) | ((q[64] >> 4) << 4) | ((q[96] >> 4) << 6));
        }
}

}  // namespace

bool canQuantizeBlocks(GgmlType type) {
    switch (type) {
        case GgmlType::Q4_0: case GgmlType::Q5_0: case GgmlType::Q5_1: case GgmlType::Q8_0:
        case GgmlType::Q4_K: case GgmlType::Q5_K: case GgmlType::Q6_K: return true;
        default: return false;
    }
}

void quantizeBlocks(GgmlType type, const float* src, uint8_t* dst, size_t n) {
    if (type == GgmlType::Q8_0) return quantizeRowQ8_0(src, dst, n);
    void (*block)(const float*, uint8_t*) = nullptr;
    size_t elems = 32, bytes = 0;
    switch (type) {
        case GgmlType::Q4_0: block = q4_0, bytes = 18; break;
        case GgmlType::Q5_0: block = q5_0, bytes = 22; break;
        case GgmlType::Q5_1: block = q5_1, bytes = 24; break;
        case GgmlType::Q4_K: block = q4_K, elems = kQK, bytes = 144; break;
        case GgmlType::Q5_K: block = q5_K, elems = kQK, bytes = 176; break;
        case GgmlType::Q6_K: block = q6_K, elems = kQK, bytes = 210; break;
        default: __builtin_trap();  // callers check canQuantizeBlocks
    }
    for (size_t b = 0; b < n / elems; ++b) block(src + b * elems, dst + b * bytes);
}

}  // namespace inferscope
