#include "backend/kernels.h"

#include <omp.h>

#include <algorithm>
#include <cmath>

#include "gguf/ggml_types.h"
#include "sampler/exp_nonpositive.h"

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
    // silu(g) = g · sigmoid(g), with e^-|g| <= 1 so the exponent never overflows.
#pragma omp parallel for simd schedule(static) if (count > 65536)
    for (int64_t i = 0; i < count; ++i) {
        const float g = gate[i];
        const float t = float(expNonPositive(-double(std::fabs(g))));
        const float sigmoid = g >= 0.0f ? 1.0f / (1.0f + t) : t / (1.0f + t);
        out[i] = g * sigmoid * up[i];
    }
}

namespace {

// One KV head's row `j` as f32: the cache row itself, or widened from half into `buf`.
inline const float* kvRow(const void* base, bool half, size_t index, int headDim, float* buf) {
    if (!half) return static_cast<const float*>(base) + index * size_t(headDim);
    dequantizeRow(GgmlType::F16, static_cast<const uint16_t*>(base) + index * size_t(headDim), buf, size_t(headDim));
    return buf;
}

// Query row r's heads h0 .. h0 + group - 1, all reading KV head kvh.
void attendGroup(const float* q, const void* k, const void* v, bool half, int64_t r, int32_t nKeys, int kvh, int group,
                 int nHead, int headDim, int32_t nCtx, float scale, float* out, float* scratch) {
    const size_t stride = size_t(nCtx) + 16;
    float* kbuf = scratch + size_t(group) * stride;
    float* vbuf = kbuf + headDim;
    const size_t head0 = size_t(kvh) * size_t(nCtx);
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
        float maxScore = -INFINITY;
#pragma omp simd reduction(max : maxScore)
        for (int32_t j = 0; j < nKeys; ++j) maxScore = std::max(maxScore, sc[j]);
        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (int32_t j = 0; j < nKeys; ++j) {
            sc[j] = float(expNonPositive(double(sc[j] - maxScore)));
            sum += sc[j];
        }
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

}  // namespace

void attention(const float* q, const void* k, const void* v, bool kvHalf, int64_t m, int32_t position0, int nHead,
               int nHeadKv, int headDim, int32_t nCtx, float* out, float* scratch) {
    const int group = nHead / nHeadKv;
    const float scale = 1.0f / std::sqrt(float(headDim));
    const size_t perThread = size_t(group) * (size_t(nCtx) + 16) + size_t(headDim) * 2;
    // Work in multiply-adds: below ~64k one thread is done before a fork/join would pay off.
    const int64_t work = m * int64_t(nHead) * int64_t(position0 + m) * headDim;
#pragma omp parallel for collapse(2) schedule(dynamic, 1) if (work > 65536)
    for (int64_t r = 0; r < m; ++r)
        for (int kvh = 0; kvh < nHeadKv; ++kvh)
            attendGroup(q, k, v, kvHalf, r, position0 + int32_t(r) + 1, kvh, group, nHead, headDim, nCtx, scale, out,
                        scratch + size_t(omp_get_thread_num()) * perThread);
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
