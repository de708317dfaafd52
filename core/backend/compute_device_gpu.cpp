// ComputeDevice on oneDNN's GPU engine. Debian's oneDNN 2.6 is built with the OpenCL GPU runtime
// (dnnl_config.h: DNNL_GPU_RUNTIME = DNNL_RUNTIME_OCL), which runs on Intel GPUs with an OpenCL
// driver (intel-opencl-icd). There every matrix is widened to f32 (or kept bf16) and copied to the
// device once; each call copies x in and y out around one runtime-M matmul. No GEMV, Blocks or
// Int8 path: the GPU is a fallback for machines where it exists, not the tuned path.
// test_backend's Device.GpuLinearMatchesTheReference runs this where oneDNN finds a GPU.
#include <cstring>

#include "backend/compute_device_impl.h"

namespace inferscope {

using namespace onednn;

void ComputeDevice::Impl::uploadToGpu(LinearState& st, int64_t rows, int64_t cols, bool bf16) {
    const dt act = bf16 ? dt::bf16 : dt::f32;
    const memory::desc wd({cols, rows}, act, {1, cols});
    st.gpuWeights = memory(wd, engine);
    void* dst = st.gpuWeights.map_data();
    std::memcpy(dst, st.plain, wd.get_size());
    st.gpuWeights.unmap_data(dst);
    st.owned = {};
    st.plain = nullptr;
    auto key = std::make_tuple(cols, rows, act);
    if (auto it = gpuPrims.find(key); it != gpuPrims.end()) {
        st.gpuPrim = it->second;
        return;
    }
    const memory::dim M = DNNL_RUNTIME_DIM_VAL;
    memory::desc src({M, cols}, act, {cols, 1}), out({M, rows}, dt::f32, {rows, 1});
    st.gpuPrim = dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wd, out), engine));
    gpuPrims.emplace(key, st.gpuPrim);
}

void ComputeDevice::Impl::linearGpu(const LinearState& st, int64_t n, int64_t k, bool bf16, const float* x, int64_t m,
                                    float* y) {
    const void* src = x;
    if (bf16) {
        const size_t count = size_t(m) * size_t(k);
        if (srcBf16.size() < count) srcBf16.allocate(count);
        fp32ToBf16Row(x, srcBf16.data(), count);
        src = srcBf16.data();
    }
    const memory::desc srcMd({m, k}, bf16 ? dt::bf16 : dt::f32, {k, 1});
    const memory::desc dstMd({m, n}, dt::f32, {n, 1});
    memory srcMem(srcMd, engine), dstMem(dstMd, engine);
    void* p = srcMem.map_data();
    std::memcpy(p, src, srcMd.get_size());
    srcMem.unmap_data(p);
    st.gpuPrim.execute(stream, {{DNNL_ARG_SRC, srcMem}, {DNNL_ARG_WEIGHTS, st.gpuWeights}, {DNNL_ARG_DST, dstMem}});
    stream.wait();
    p = dstMem.map_data();
    std::memcpy(y, p, dstMd.get_size());
    dstMem.unmap_data(p);
}

}  // namespace inferscope
