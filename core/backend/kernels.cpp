// Compiled once per kernel set (common/kernel_set.h): the element-wise kernels (RMSNorm, RoPE,
// gates, soft-cap, bias, scale), whose loops the compiler vectorises at each set's vector width,
// and the set's table of kernels (attention() is in attention_kernel.cpp, gemv() in gemv.cpp).
#include "backend/kernels.h"

#include <omp.h>

#include <algorithm>
#include <cmath>

#include "backend/kernel_table.h"
#include "gguf/ggml_types.h"
#include "gguf/quant_blocks.h"
#include "common/exp_nonpositive.h"

namespace inferscope::INFERSCOPE_KERNELS_NS {

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

void geluTanhGate(const float* gate, const float* up, int64_t count, float* out) {
    // gelu(g) = g/2 · (1 + tanh(√(2/π) · (g + 0.044715 g³))), in double like tanhValue.
    constexpr double kSqrt2OverPi = 0.7978845608028654;
#pragma omp parallel for simd schedule(static) if (count > 65536)
    for (int64_t i = 0; i < count; ++i) {
        const double g = gate[i];
        out[i] = float(0.5 * g * (1.0 + tanhValue(kSqrt2OverPi * (g + 0.044715 * g * g * g))) * double(up[i]));
    }
}

void ropeNeoxInPlace(float* x, int64_t m, int nHeads, int headDim, int nRot, int32_t position0, const float* table) {
    const int half = nRot / 2;
#pragma omp parallel for collapse(2) schedule(static) if (m > 1)
    for (int64_t r = 0; r < m; ++r) {
        for (int h = 0; h < nHeads; ++h) {
            float* v = x + (r * nHeads + h) * headDim;
            const float* cs = table + size_t(position0 + r) * half * 2;
            for (int i = 0; i < half; ++i) {
                const float c = cs[2 * i], s = cs[2 * i + 1];
                const float a = v[i], b = v[i + half];
                v[i] = a * c - b * s;
                v[i + half] = a * s + b * c;
            }
        }
    }
}

void softCapInPlace(float* x, int64_t count, float cap) {
#pragma omp parallel for simd schedule(static) if (count > 65536)
    for (int64_t i = 0; i < count; ++i) x[i] = softCapValue(x[i], cap);
}

void addBias(float* x, const float* bias, int64_t m, int64_t n) {
    for (int64_t r = 0; r < m; ++r) {
#pragma omp simd
        for (int64_t i = 0; i < n; ++i) x[r * n + i] += bias[i];
    }
}

void scaleInPlace(float* x, int64_t count, float factor) {
#pragma omp parallel for simd schedule(static) if (count > 65536)
    for (int64_t i = 0; i < count; ++i) x[i] *= factor;
}

}  // namespace inferscope::INFERSCOPE_KERNELS_NS

extern "C" const inferscope::BackendKernels INFERSCOPE_BACKEND_TABLE = {
    &inferscope::INFERSCOPE_KERNELS_NS::gemv,
    &inferscope::INFERSCOPE_KERNELS_NS::rmsNorm,
    &inferscope::INFERSCOPE_KERNELS_NS::ropeInPlace,
    &inferscope::INFERSCOPE_KERNELS_NS::ropeNeoxInPlace,
    &inferscope::INFERSCOPE_KERNELS_NS::swiGlu,
    &inferscope::INFERSCOPE_KERNELS_NS::geluTanhGate,
    &inferscope::INFERSCOPE_KERNELS_NS::softCapInPlace,
    &inferscope::INFERSCOPE_KERNELS_NS::addBias,
    &inferscope::INFERSCOPE_KERNELS_NS::scaleInPlace,
    &inferscope::INFERSCOPE_KERNELS_NS::attention,
    &inferscope::INFERSCOPE_KERNELS_NS::kquantKernelFor,
    &inferscope::INFERSCOPE_KERNELS_NS::quantizeX256,
    &inferscope::INFERSCOPE_KERNELS_NS::gemvKQuantRows,
    &inferscope::INFERSCOPE_KERNELS_NS::hasInt8BlockKernel,
    &inferscope::INFERSCOPE_KERNELS_NS::quantizeActivations32,
    &inferscope::INFERSCOPE_KERNELS_NS::gemvInt8BlockRows,
    &inferscope::INFERSCOPE_KERNELS_NS::kquantExactRows,
};
