// The public functions of kernels.h and gemv.h: each calls the active kernel set's
// (kernel_table.h, common/kernel_set.h). Compiled once, for any x86-64 CPU, with the two helpers
// that are not kernels (the RoPE table, computed once per context, and the matmul oracle).
#include "backend/kernel_table.h"

#include <cmath>

namespace inferscope {

const BackendKernels& backendKernels(KernelSet set) {
    static const BackendKernels* const tables[kKernelSetCount] = {
        &inferscope_backend_portable_kernels,
#if defined(INFERSCOPE_X86_KERNEL_SETS)
        &inferscope_backend_avx2_kernels,
        &inferscope_backend_avx512_kernels,
#endif
    };
    return *tables[int(set)];
}

void gemv(std::span<const GemvTask> tasks, const float* x, int64_t m, int nThreads) {
    activeBackendKernels().gemv(tasks, x, m, nThreads);
}

int gemvExactRows(const GemvTask& t) {
    const BackendKernels& set = activeBackendKernels();
    if (t.type == WeightFormat::Blocks && set.kquantKernelFor(t.blockType)) return set.kquantExactRows(t.blockType);
    return gemvMaxRows(t.type);
}

void rmsNorm(const float* x, const float* w, int64_t m, int64_t n, float eps, float* out) {
    activeBackendKernels().rmsNorm(x, w, m, n, eps, out);
}

void ropeInPlace(float* x, int64_t m, int nHeads, int headDim, int nRot, int32_t position0, const float* table) {
    activeBackendKernels().ropeInPlace(x, m, nHeads, headDim, nRot, position0, table);
}

void ropeNeoxInPlace(float* x, int64_t m, int nHeads, int headDim, int nRot, int32_t position0, const float* table) {
    activeBackendKernels().ropeNeoxInPlace(x, m, nHeads, headDim, nRot, position0, table);
}

void swiGlu(const float* gate, const float* up, int64_t count, float* out) { activeBackendKernels().swiGlu(gate, up, count, out); }

void geluTanhGate(const float* gate, const float* up, int64_t count, float* out) {
    activeBackendKernels().geluTanhGate(gate, up, count, out);
}

void softCapInPlace(float* x, int64_t count, float cap) { activeBackendKernels().softCapInPlace(x, count, cap); }

void addBias(float* x, const float* bias, int64_t m, int64_t n) { activeBackendKernels().addBias(x, bias, m, n); }

void scaleInPlace(float* x, int64_t count, float factor) { activeBackendKernels().scaleInPlace(x, count, factor); }

void attention(const float* q, const void* k, const void* v, KvType kvType, int64_t m, int32_t position0, int nHead,
               int nHeadKv, int headDim, int32_t nCtx, float* out, float* scratch, const AttentionOptions& options) {
    activeBackendKernels().attention(q, k, v, kvType, m, position0, nHead, nHeadKv, headDim, nCtx, out, scratch, options);
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

void referenceLinear(const float* w, int64_t n, int64_t k, const float* x, int64_t m, float* y) {
    for (int64_t r = 0; r < m; ++r)
        for (int64_t c = 0; c < n; ++c) {
            double acc = 0.0;
            for (int64_t i = 0; i < k; ++i) acc += double(x[r * k + i]) * double(w[c * k + i]);
            y[r * n + c] = float(acc);
        }
}

}  // namespace inferscope
