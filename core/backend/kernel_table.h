#pragma once
// One kernel set's backend entry points (common/kernel_set.h). Each set's sources
// (core/CMakeLists.txt: kernels.cpp, gemv*.cpp) define these functions in their own namespace and
// fill one table (kernel_table.cpp, compiled per set); kernel_sets.cpp defines the public
// functions of kernels.h and gemv.h, each one indirect call into the active set's table. Tests
// reach the GEMV's internal steps (x's rounding, one kernel on a range of rows) through the table.

#include <cstdint>
#include <span>

#include "backend/gemv.h"
#include "backend/gemv_kquants.h"
#include "backend/gemv_q8blocks.h"
#include "backend/kernels.h"
#include "common/kernel_set.h"

namespace inferscope {

struct BackendKernels {
    void (*gemv)(std::span<const GemvTask> tasks, const float* x, int64_t m, int nThreads);
    void (*rmsNorm)(const float* x, const float* w, int64_t m, int64_t n, float eps, float* out);
    void (*ropeInPlace)(float* x, int64_t m, int nHeads, int headDim, int nRot, int32_t position0, const float* table);
    void (*ropeNeoxInPlace)(float* x, int64_t m, int nHeads, int headDim, int nRot, int32_t position0, const float* table);
    void (*swiGlu)(const float* gate, const float* up, int64_t count, float* out);
    void (*geluTanhGate)(const float* gate, const float* up, int64_t count, float* out);
    void (*softCapInPlace)(float* x, int64_t count, float cap);
    void (*addBias)(float* x, const float* bias, int64_t m, int64_t n);
    void (*scaleInPlace)(float* x, int64_t count, float factor);
    void (*attention)(const float* q, const void* k, const void* v, KvType kvType, int64_t m, int32_t position0, int nHead,
                      int nHeadKv, int headDim, int32_t nCtx, float* out, float* scratch, const AttentionOptions& options);
    // The GEMV's steps (gemv_kquants.h, gemv_q8blocks.h), for the tests.
    bool (*kquantKernelFor)(uint32_t blockType);
    void (*quantizeX256)(const float* x, int64_t m, int64_t k, XBlock256* out);
    void (*gemvKQuantRows)(const GemvTask& t, const XBlock256* xq, int64_t m, int64_t n0, int64_t n1);
    bool (*hasInt8BlockKernel)(GgmlType type);
    ActivationBlocks32 (*quantizeActivations32)(const float* x, int64_t m, int64_t k);
    void (*gemvInt8BlockRows)(const GemvTask& t, const ActivationBlocks32& xq, int64_t n0, int64_t n1);
    int (*kquantExactRows)(uint32_t blockType);  // rows of x a call takes, each row's bits its alone ones
};

// The table of a built set (kernelSetBuilt(set)).
const BackendKernels& backendKernels(KernelSet set);
inline const BackendKernels& activeBackendKernels() { return backendKernels(activeKernelSet()); }

}  // namespace inferscope

// Each set's table, one C symbol per set (the only global symbol of a set's object: see
// core/CMakeLists.txt). Defined for the sets this build compiles.
extern "C" {
extern const inferscope::BackendKernels inferscope_backend_portable_kernels;
extern const inferscope::BackendKernels inferscope_backend_avx2_kernels;
extern const inferscope::BackendKernels inferscope_backend_avx512_kernels;
}
