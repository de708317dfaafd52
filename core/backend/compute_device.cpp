#include "backend/compute_device.h"

#include <omp.h>

#include <cstring>
#include <dnnl.hpp>
#include <fmt/format.h>
#include <thread>

namespace inferscope {
namespace {

using dnnl::memory;
using dt = memory::data_type;

std::string cpuIsaName(dnnl::cpu_isa isa) {
    switch (isa) {
        case dnnl::cpu_isa::sse41: return "sse41";
        case dnnl::cpu_isa::avx: return "avx";
        case dnnl::cpu_isa::avx2: return "avx2";
        case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
        case dnnl::cpu_isa::avx512_core: return "avx512_core";
        case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
        case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
        case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
        default: return "generic";
    }
}

// What a Linear holds on the device: its primitive and its weights.
struct LinearState {
    dnnl::matmul prim;
    memory weights;
    AlignedBuffer<float> ownedF32;     // converted weights (CPU), when not mapped
    AlignedBuffer<uint16_t> ownedBf16;
};

}  // namespace

struct ComputeDevice::Impl {
    dnnl::engine engine;
    dnnl::stream stream;
    // Runtime-M matmul primitives by (K, N, compute type): every layer of a model shares a handful.
    std::map<std::tuple<int64_t, int64_t, ComputeType>, dnnl::matmul> primitives;
    AlignedBuffer<uint16_t> srcBf16;  // activations converted to bf16, grown on demand

    dnnl::matmul primitive(int64_t k, int64_t n, ComputeType ct) {
        auto key = std::make_tuple(k, n, ct);
        if (auto it = primitives.find(key); it != primitives.end()) return it->second;
        const dt act = ct == ComputeType::BF16 ? dt::bf16 : dt::f32;
        const memory::dim M = DNNL_RUNTIME_DIM_VAL;
        memory::desc src({M, k}, act, {k, 1});
        memory::desc wei({k, n}, act, {1, k});  // "ba": the GGUF row-major [N][K] matrix
        memory::desc dst({M, n}, dt::f32, {n, 1});
        dnnl::matmul prim(dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wei, dst), engine));
        primitives.emplace(key, prim);
        return prim;
    }
};

Result<DeviceKind> parseDeviceKind(std::string_view text) {
    if (text == "auto") return DeviceKind::Auto;
    if (text == "cpu") return DeviceKind::Cpu;
    if (text == "gpu") return DeviceKind::Gpu;
    return fail(ErrorKind::InvalidArgument, fmt::format("device must be auto, cpu or gpu, got '{}'", text));
}

std::string_view deviceKindName(DeviceKind kind) {
    switch (kind) {
        case DeviceKind::Auto: return "auto";
        case DeviceKind::Cpu: return "cpu";
        case DeviceKind::Gpu: return "gpu";
    }
    return "?";
}

Result<std::unique_ptr<ComputeDevice>> ComputeDevice::create(DeviceKind requested, int nThreads) {
    if (nThreads < 0 || nThreads > 1024)
        return fail(ErrorKind::InvalidArgument, fmt::format("threads must be between 1 and 1024 (0 = all cores), got {}", nThreads));
    std::unique_ptr<ComputeDevice> dev(new ComputeDevice());
    dev->impl_ = std::make_unique<Impl>();
    dev->nThreads_ = nThreads > 0 ? nThreads : int(std::max(1u, std::thread::hardware_concurrency()));
    dev->isa_ = cpuIsaName(dnnl::get_effective_cpu_isa());

    size_t gpus = 0;
    try {
        gpus = dnnl::engine::get_count(dnnl::engine::kind::gpu);
    } catch (const dnnl::error&) {
        gpus = 0;  // a build without GPU runtime reports none
    }
    const bool useGpu = requested == DeviceKind::Gpu || (requested == DeviceKind::Auto && gpus > 0);
    if (requested == DeviceKind::Gpu && gpus == 0)
        return fail(ErrorKind::Device, "no GPU found by oneDNN (its GPU runtime is OpenCL, for Intel GPUs); use --device cpu or auto");
    try {
        if (useGpu) {
            dev->impl_->engine = dnnl::engine(dnnl::engine::kind::gpu, 0);
            dev->isGpu_ = true;
            dev->description_ = "GPU 0 (oneDNN OpenCL)";
        } else {
            dev->impl_->engine = dnnl::engine(dnnl::engine::kind::cpu, 0);
            dev->description_ = fmt::format("CPU {}, {} thread{}", dev->isa_, dev->nThreads_, dev->nThreads_ == 1 ? "" : "s");
            if (requested == DeviceKind::Auto) dev->notice_ = "no GPU found by oneDNN; computing on the CPU";
        }
        dev->impl_->stream = dnnl::stream(dev->impl_->engine);
    } catch (const dnnl::error& e) {
        return fail(ErrorKind::Device, fmt::format("oneDNN could not create the {} engine: {}", useGpu ? "GPU" : "CPU", e.what()));
    }
    return dev;
}

ComputeDevice::~ComputeDevice() = default;

void ComputeDevice::bindThreads() const { omp_set_num_threads(nThreads_); }

Result<void> ComputeDevice::setThreads(int nThreads) {
    if (nThreads < 0 || nThreads > 1024)
        return fail(ErrorKind::InvalidArgument, fmt::format("threads must be between 1 and 1024 (0 = all cores), got {}", nThreads));
    nThreads_ = nThreads > 0 ? nThreads : int(std::max(1u, std::thread::hardware_concurrency()));
    if (!isGpu_) description_ = fmt::format("CPU {}, {} thread{}", isa_, nThreads_, nThreads_ == 1 ? "" : "s");
    return {};
}

Result<Linear> ComputeDevice::makeLinear(GgmlType type, std::span<const uint8_t> data, int64_t rows, int64_t cols,
                                         ComputeType compute) {
    if (!isSupportedWeightType(type))
        return fail(ErrorKind::Unsupported, fmt::format("unsupported weight type {}", ggmlTypeName(uint32_t(type))));
    auto info = ggmlTypeInfo(uint32_t(type));
    if (uint64_t(rows) * uint64_t(cols) / info->blockSize * info->typeSize != data.size())
        return fail(ErrorKind::BadFile, "weight size does not match its shape");

    auto state = std::make_shared<LinearState>();
    Linear w;
    w.rows_ = rows;
    w.cols_ = cols;
    w.compute_ = compute;
    const size_t rowBytes = size_t(cols) / info->blockSize * info->typeSize;
    try {
        state->prim = impl_->primitive(cols, rows, compute);
        const memory::desc wd({cols, rows}, compute == ComputeType::BF16 ? dt::bf16 : dt::f32, {1, cols});
        const void* host = nullptr;
        if (compute == ComputeType::F32 && type == GgmlType::F32) {
            host = data.data();  // used in place from the mapping
            w.mapped_ = true;
        } else if (compute == ComputeType::F32) {
            state->ownedF32.allocate(size_t(rows) * size_t(cols));
            float* out = state->ownedF32.data();
#pragma omp parallel for num_threads(nThreads_) schedule(static)
            for (int64_t r = 0; r < rows; ++r) dequantizeRow(type, data.data() + r * rowBytes, out + r * cols, size_t(cols));
            host = out;
        } else if (type == GgmlType::BF16) {
            host = data.data();
            w.mapped_ = true;
        } else {
            state->ownedBf16.allocate(size_t(rows) * size_t(cols));
            uint16_t* out = state->ownedBf16.data();
#pragma omp parallel num_threads(nThreads_)
            {
                AlignedBuffer<float> row{size_t(cols)};
#pragma omp for schedule(static)
                for (int64_t r = 0; r < rows; ++r) {
                    dequantizeRow(type, data.data() + r * rowBytes, row.data(), size_t(cols));
                    fp32ToBf16Row(row.data(), out + r * cols, size_t(cols));
                }
            }
            host = out;
        }
        if (!isGpu_) {
            state->weights = memory(wd, impl_->engine, const_cast<void*>(host));
        } else {
            // Copy the weights to the device once; the host copy is then released.
            state->weights = memory(wd, impl_->engine);
            void* dst = state->weights.map_data();
            std::memcpy(dst, host, wd.get_size());
            state->weights.unmap_data(dst);
            state->ownedF32 = {};
            state->ownedBf16 = {};
            w.mapped_ = false;
        }
    } catch (const std::bad_alloc&) {
        return fail(ErrorKind::OutOfMemory, fmt::format("out of memory converting a {}x{} weight matrix", rows, cols));
    } catch (const dnnl::error& e) {
        return fail(ErrorKind::Device, fmt::format("oneDNN matmul {}x{}: {}", rows, cols, e.what()));
    }
    w.state_ = std::move(state);
    return w;
}

void ComputeDevice::linear(const Linear& w, const float* x, int64_t m, float* y) {
    auto* st = static_cast<LinearState*>(w.state_.get());
    const int64_t k = w.cols_, n = w.rows_;
    const bool bf16 = w.compute_ == ComputeType::BF16;
    const void* src = x;
    if (bf16) {
        const size_t count = size_t(m) * size_t(k);
        if (impl_->srcBf16.size() < count) impl_->srcBf16.allocate(count);
        fp32ToBf16Row(x, impl_->srcBf16.data(), count);
        src = impl_->srcBf16.data();
    }
    const memory::desc srcMd({m, k}, bf16 ? dt::bf16 : dt::f32, {k, 1});
    const memory::desc dstMd({m, n}, dt::f32, {n, 1});
    auto& eng = impl_->engine;
    if (!isGpu_) {
        memory srcMem(srcMd, eng, const_cast<void*>(src));
        memory dstMem(dstMd, eng, y);
        st->prim.execute(impl_->stream, {{DNNL_ARG_SRC, srcMem}, {DNNL_ARG_WEIGHTS, st->weights}, {DNNL_ARG_DST, dstMem}});
        impl_->stream.wait();
        return;
    }
    memory srcMem(srcMd, eng), dstMem(dstMd, eng);
    void* p = srcMem.map_data();
    std::memcpy(p, src, srcMd.get_size());
    srcMem.unmap_data(p);
    st->prim.execute(impl_->stream, {{DNNL_ARG_SRC, srcMem}, {DNNL_ARG_WEIGHTS, st->weights}, {DNNL_ARG_DST, dstMem}});
    impl_->stream.wait();
    p = dstMem.map_data();
    std::memcpy(y, p, dstMd.get_size());
    dstMem.unmap_data(p);
}

}  // namespace inferscope
