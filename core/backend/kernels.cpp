#include "backend/kernels.h"

#include <omp.h>

#include <cmath>

namespace inferscope {

void rmsNorm(const float* x, const float* w, int64_t m, int64_t n, float eps, float* out) {
#pragma omp parallel for schedule(static) if (m > 1)
    for (int64_t r = 0; r < m; ++r) {
        const float* xr = x + r * n;
        float* o = out + r * n;
        float ss = 0.0f;
#pragma omp simd reduction(+ : ss)
        for (int64_t i = 0; i < n; ++i) ss += xr[i] * xr[i];
        const float scale = 1.0f / std::sqrt(ss / float(n) + eps);
#pragma omp simd
        for (int64_t i = 0; i < n; ++i) o[i] = xr[i] * scale * w[i];
    }
}

void makeRopeTable(float* table, int32_t nCtx, int nRot, double freqBase, double freqScale, const float* freqFactors) {
    const int half = nRot / 2;
    for (int32_t pos = 0; pos < nCtx; ++pos) {
        for (int i = 0; i < half; ++i) {
            const double factor = freqFactors ? double(freqFactors[i]) : 1.0;
            const double theta = double(pos) * freqScale * std::pow(freqBase, -2.0 * i / nRot) / factor;
            table[(size_t(pos) * half + i) * 2 + 0] = float(std::cos(theta));
            table[(size_t(pos) * half + i) * 2 + 1] = float(std::sin(theta));
        }
    }
}

void ropeInPlace(float* x, int64_t m, int nHeads, int headDim, int nRot, int32_t position0, const float* table) {
    const int half = nRot / 2;
#pragma omp parallel for collapse(2) schedule(static) if (m > 1)
    for (int64_t r = 0; r < m; ++r) {
        for (int h = 0; h < nHeads; ++h) {
            float* v = x + (r * nHeads + h) * headDim;
            const float* cs = table + size_t(position0 + r) * half * 2;
            for (int i = 0; i < half; ++i) {
                const float c = cs[2 * i], s = cs[2 * i + 1];
                const float a = v[2 * i], b = v[2 * i + 1];
                v[2 * i] = a * c - b * s;
                v[2 * i + 1] = a * s + b * c;
            }
        }
    }
}

void swiGlu(const float* gate, const float* up, int64_t count, float* out) {
#pragma omp parallel for simd schedule(static) if (count > 4096)
    for (int64_t i = 0; i < count; ++i) {
        const float g = gate[i];
        out[i] = g / (1.0f + std::exp(-g)) * up[i];
    }
}

void attention(const float* q, const float* k, const float* v, int64_t m, int32_t position0, int nHead,
               int nHeadKv, int headDim, int32_t nCtx, float* out, float* scratch) {
    const int group = nHead / nHeadKv;
    const float scale = 1.0f / std::sqrt(float(headDim));
#pragma omp parallel for collapse(2) schedule(dynamic, 1)
    for (int64_t r = 0; r < m; ++r) {
        for (int h = 0; h < nHead; ++h) {
            float* scores = scratch + size_t(omp_get_thread_num()) * nCtx;
            const int32_t nKeys = position0 + int32_t(r) + 1;  // causal: keys 0 .. own position
            const float* qh = q + (r * nHead + h) * headDim;
            const float* kh = k + size_t(h / group) * nCtx * headDim;
            const float* vh = v + size_t(h / group) * nCtx * headDim;
            // scores[j] = q · k_j / sqrt(d)
            float maxScore = -INFINITY;
            for (int32_t j = 0; j < nKeys; ++j) {
                const float* kj = kh + size_t(j) * headDim;
                float s = 0.0f;
#pragma omp simd reduction(+ : s)
                for (int d = 0; d < headDim; ++d) s += qh[d] * kj[d];
                s *= scale;
                scores[j] = s;
                maxScore = std::fmax(maxScore, s);
            }
            // softmax over the keys
            float sum = 0.0f;
            for (int32_t j = 0; j < nKeys; ++j) {
                scores[j] = std::exp(scores[j] - maxScore);
                sum += scores[j];
            }
            const float inv = 1.0f / sum;
            // out = Σ_j p_j · v_j
            float* o = out + (r * nHead + h) * headDim;
            for (int d = 0; d < headDim; ++d) o[d] = 0.0f;
            for (int32_t j = 0; j < nKeys; ++j) {
                const float p = scores[j] * inv;
                const float* vj = vh + size_t(j) * headDim;
#pragma omp simd
                for (int d = 0; d < headDim; ++d) o[d] += p * vj[d];
            }
        }
    }
}

void referenceLinear(const float* w, int64_t n, int64_t k, const float* x, int64_t m, float* y) {
    for (int64_t r = 0; r < m; ++r)
        for (int64_t c = 0; c < n; ++c) {
            double acc = 0.0;
            for (int64_t i = 0; i < k; ++i) acc += double(x[r * k + i]) * double(w[c * k + i]);
            y[r * n + c] = float(acc);
        }
}

}  // namespace inferscope
