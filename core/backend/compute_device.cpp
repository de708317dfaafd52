#include "backend/compute_device.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <dnnl.hpp>
#include <fmt/format.h>
#include <thread>

#include "backend/gemv.h"
#include "gguf/quant_blocks.h"

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

constexpr int64_t kF32Chunks[] = {128, 64, 32};                     // fixed-M f32 prefill primitives
constexpr int64_t kInt8Chunks[] = {128, 64, 32, 16, 8, 4, 2, 1};    // fixed-M s8 primitives (any m)
constexpr int64_t kWidenRows = 256;  // BF16/F16 weight rows widened to f32 per matmul call (2 MiB at K = 2048)

// A primitive with memory objects made once and re-pointed (set_data_handle) at every call.
struct Matmul {
    dnnl::matmul prim;
    memory src, wei, dst;
};

// What a Linear holds on the device.
struct LinearState {
    const void* plain = nullptr;       // CPU F32/BF16/F16/Blocks: [N][K] as in GGUF, mapped or in `owned`
    AlignedBuffer<uint8_t> owned;      // converted weights, when not mapped
    memory packed;                     // Int8: s8 weights in the layout the primitives chose
    AlignedBuffer<float> scales;       // Int8: [N] per-output-channel weight scale
    dnnl::matmul gpuPrim;              // GPU: runtime-M primitive and device weights
    memory gpuWeights;
};

size_t formatBytes(WeightFormat f) { return f == WeightFormat::F32 ? 4 : f == WeightFormat::S8 ? 1 : 2; }

// Bytes of one stored row of k elements of `type`.
size_t storedRowBytes(GgmlType type, int64_t k) {
    const auto info = *ggmlTypeInfo(uint32_t(type));
    return size_t(k) / info.blockSize * info.typeSize;
}

}  // namespace

struct ComputeDevice::Impl {
    dnnl::engine engine;
    dnnl::stream stream;
    const int* threadCount = nullptr;  // ComputeDevice::nThreads_: the one count, also after setThreads
    int nThreads() const { return *threadCount; }
    const int* int8Levels = nullptr;  // ComputeDevice::int8Levels_
    // Shared by every Linear of a shape: a model has a handful of shapes.
    std::map<std::tuple<int64_t, int64_t, int64_t>, Matmul> f32Fixed;      // (K, N, M): brgemm, "ba" weights
    std::map<std::tuple<int64_t, int64_t, int64_t>, dnnl::matmul> f32Rt;   // (K, nb, ldDst): runtime M
    std::map<std::tuple<int64_t, int64_t, int64_t>, Matmul> s8Fixed;       // (K, N, M): s8 × s8 → f32
    std::map<std::tuple<int64_t, int64_t, dt>, dnnl::matmul> gpuPrims;     // (K, N, act type)
    AlignedBuffer<float> widened;      // [kWidenRows][K] f32 weights being multiplied (prefill)
    AlignedBuffer<float> blockOut;     // [128][kWidenRows] one chunk's outputs for those rows
    AlignedBuffer<int8_t> srcS8;       // [m][K] quantized activations
    AlignedBuffer<float> srcScales;    // [m]
    AlignedBuffer<uint16_t> srcBf16;   // GPU: activations converted to bf16

    Matmul& f32Fixed_(int64_t k, int64_t n, int64_t m) {
        auto key = std::make_tuple(k, n, m);
        if (auto it = f32Fixed.find(key); it != f32Fixed.end()) return it->second;
        memory::desc src({m, k}, dt::f32, {k, 1}), wei({k, n}, dt::f32, {1, k}), dst({m, n}, dt::f32, {n, 1});
        dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wei, dst), engine);
        Matmul mm{dnnl::matmul(pd), memory(src, engine, DNNL_MEMORY_NONE), memory(wei, engine, DNNL_MEMORY_NONE),
                  memory(dst, engine, DNNL_MEMORY_NONE)};
        return f32Fixed.emplace(key, std::move(mm)).first->second;
    }
    dnnl::matmul f32Runtime(int64_t k, int64_t nb, int64_t ld) {
        auto key = std::make_tuple(k, nb, ld);
        if (auto it = f32Rt.find(key); it != f32Rt.end()) return it->second;
        const memory::dim M = DNNL_RUNTIME_DIM_VAL;
        memory::desc src({M, k}, dt::f32, {k, 1}), wei({k, nb}, dt::f32, {1, k}), dst({M, nb}, dt::f32, {ld, 1});
        dnnl::matmul prim(dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wei, dst), engine));
        f32Rt.emplace(key, prim);
        return prim;
    }
    // s8 primitives for one shape; the first (M = 128) chooses the packed weights layout that all
    // of them are then created with.
    Matmul& s8Fixed_(int64_t k, int64_t n, int64_t m) {
        auto key = std::make_tuple(k, n, m);
        if (auto it = s8Fixed.find(key); it != s8Fixed.end()) return it->second;
        memory::desc src({m, k}, dt::s8, {k, 1}), dst({m, n}, dt::f32, {n, 1});
        memory::desc wei({k, n}, dt::s8, memory::format_tag::any);
        if (m != kInt8Chunks[0]) wei = s8Fixed_(k, n, kInt8Chunks[0]).wei.get_desc();
        dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wei, dst), engine);
        Matmul mm{dnnl::matmul(pd), memory(src, engine, DNNL_MEMORY_NONE), memory(pd.weights_desc(), engine, DNNL_MEMORY_NONE),
                  memory(dst, engine, DNNL_MEMORY_NONE)};
        return s8Fixed.emplace(key, std::move(mm)).first->second;
    }
    void run(Matmul& mm, const void* src, const void* wei, float* dst) {
        mm.src.set_data_handle(const_cast<void*>(src));
        mm.wei.set_data_handle(const_cast<void*>(wei));
        mm.dst.set_data_handle(dst);
        mm.prim.execute(stream, {{DNNL_ARG_SRC, mm.src}, {DNNL_ARG_WEIGHTS, mm.wei}, {DNNL_ARG_DST, mm.dst}});
        stream.wait();
    }
    void runRuntime(dnnl::matmul prim, int64_t m, int64_t k, int64_t nb, int64_t ld, const float* x, const float* w, float* y) {
        memory src(memory::desc({m, k}, dt::f32, {k, 1}), engine, const_cast<float*>(x));
        memory wei(memory::desc({k, nb}, dt::f32, {1, k}), engine, const_cast<float*>(w));
        memory dst(memory::desc({m, nb}, dt::f32, {ld, 1}), engine, y);
        prim.execute(stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}});
        stream.wait();
    }

    // ---- prefill (m > kGemvMaxRows) --------------------------------------------------------------
    void prefillF32(const float* w, int64_t n, int64_t k, const float* x, int64_t m, float* y) {
        int64_t r = 0;
        for (int64_t chunk : kF32Chunks)
            for (; m - r >= chunk; r += chunk) run(f32Fixed_(k, n, chunk), x + r * k, w, y + r * n);
        if (r < m) runRuntime(f32Runtime(k, n, n), m - r, k, n, n, x + r * k, w, y + r * n);
    }
    // BF16/F16 rows, or quantized blocks (`type`), widened to f32 256 rows at a time.
    void prefillWidened(GgmlType type, const void* w, int64_t n, int64_t k, const float* x, int64_t m, float* y) {
        const size_t rowBytes = storedRowBytes(type, k);
        if (widened.size() < size_t(kWidenRows * k)) widened.allocate(size_t(kWidenRows * k));
        if (blockOut.size() < size_t(kF32Chunks[0] * kWidenRows)) blockOut.allocate(size_t(kF32Chunks[0] * kWidenRows));
        for (int64_t n0 = 0; n0 < n; n0 += kWidenRows) {
            const int64_t nb = std::min(kWidenRows, n - n0);
            const uint8_t* src = static_cast<const uint8_t*>(w) + size_t(n0) * rowBytes;
            float* wide = widened.data();
#pragma omp parallel for schedule(static) num_threads(nThreads())
            for (int64_t r = 0; r < nb; ++r) dequantizeRow(type, src + size_t(r) * rowBytes, wide + r * k, size_t(k));
            // Fixed-M brgemm wants a contiguous destination (a strided one falls back to gemm:jit,
            // measured 15-25% slower): each chunk lands in blockOut, then in its columns of y.
            int64_t r = 0;
            for (int64_t chunk : kF32Chunks)
                for (; m - r >= chunk; r += chunk) {
                    run(f32Fixed_(k, nb, chunk), x + r * k, wide, blockOut.data());
                    for (int64_t i = 0; i < chunk; ++i)
                        std::memcpy(y + (r + i) * n + n0, blockOut.data() + i * nb, size_t(nb) * sizeof(float));
                }
            if (r < m) runRuntime(f32Runtime(k, nb, n), m - r, k, nb, n, x + r * k, wide, y + r * n + n0);
        }
    }
    void linearInt8(const LinearState& st, int64_t n, int64_t k, const float* x, int64_t m, float* y) {
        const float actLevels = float(*int8Levels);
        if (srcS8.size() < size_t(m * k)) srcS8.allocate(size_t(m * k));
        if (srcScales.size() < size_t(m)) srcScales.allocate(size_t(m));
        // Per token: s = max|x| / L, q = round(x / s), L = 127, or 63 on a CPU without VNNI (see
        // ComputeDevice::int8Levels).
#pragma omp parallel for schedule(static) num_threads(nThreads()) if (m * k > 65536)
        for (int64_t r = 0; r < m; ++r) {
            const float* xr = x + r * k;
            float amax = 0.0f;
#pragma omp simd reduction(max : amax)
            for (int64_t i = 0; i < k; ++i) amax = std::max(amax, std::fabs(xr[i]));
            const float s = amax > 0.0f ? amax / actLevels : 1.0f, inv = 1.0f / s;
            int8_t* q = srcS8.data() + r * k;
#pragma omp simd
            for (int64_t i = 0; i < k; ++i) q[i] = int8_t(std::nearbyint(xr[i] * inv));
            srcScales[size_t(r)] = s;
        }
        int64_t r = 0;
        void* wei = st.packed.get_data_handle();
        for (int64_t chunk : kInt8Chunks)
            for (; m - r >= chunk; r += chunk) run(s8Fixed_(k, n, chunk), srcS8.data() + r * k, wei, y + r * n);
        // y = acc · s_x[r] · s_w[n]
        const float* sw = st.scales.data();
#pragma omp parallel for schedule(static) num_threads(nThreads()) if (m * n > 65536)
        for (int64_t i = 0; i < m; ++i) {
            const float sx = srcScales[size_t(i)];
            float* yr = y + i * n;
#pragma omp simd
            for (int64_t j = 0; j < n; ++j) yr[j] *= sx * sw[j];
        }
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
    dev->impl_->threadCount = &dev->nThreads_;
    dev->impl_->int8Levels = &dev->int8Levels_;
    const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
    dev->isa_ = cpuIsaName(isa);
    const bool vnni = isa == dnnl::cpu_isa::avx2_vnni || isa == dnnl::cpu_isa::avx512_core_vnni ||
                      isa == dnnl::cpu_isa::avx512_core_bf16 || isa == dnnl::cpu_isa::avx512_core_amx;
    dev->int8Levels_ = vnni ? 127 : 63;

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
    if (isGpu_ && compute == ComputeType::Int8)
        return fail(ErrorKind::Unsupported, "int8 compute runs on the CPU only; use --device cpu");

    // Blocks computes on quantized blocks in place (CPU); anything else, or the GPU, widens to f32.
    if (compute == ComputeType::Blocks && (isGpu_ || !isQuantizedBlockType(type))) compute = ComputeType::F32;
    auto state = std::make_shared<LinearState>();
    Linear w;
    w.rows_ = rows;
    w.cols_ = cols;
    w.compute_ = compute;
    w.blockType_ = uint32_t(type);
    const size_t rowBytes = size_t(cols) / info->blockSize * info->typeSize;
    w.rowBytes_ = rowBytes;
    const size_t count = size_t(rows) * size_t(cols);
    auto& eng = impl_->engine;
    try {
        // The format held in memory: the stored one when the compute reads it directly.
        WeightFormat format = WeightFormat::F32;
        if (compute == ComputeType::Int8) format = WeightFormat::S8;
        else if (compute == ComputeType::Blocks) format = WeightFormat::Blocks;
        else if (compute == ComputeType::BF16) format = WeightFormat::BF16;
        else if (type == GgmlType::F16 && !isGpu_) format = WeightFormat::F16;
        w.format_ = format;
        const bool inPlace = (format == WeightFormat::F32 && type == GgmlType::F32) ||
                             (format == WeightFormat::BF16 && type == GgmlType::BF16) ||
                             (format == WeightFormat::F16 && type == GgmlType::F16) || format == WeightFormat::Blocks;
        if (inPlace) {
            state->plain = data.data();
            w.mapped_ = true;
        } else if (format == WeightFormat::F32 || format == WeightFormat::BF16) {
            state->owned.allocate(count * formatBytes(format));
            uint8_t* out = state->owned.data();
#pragma omp parallel num_threads(nThreads_)
            {
                AlignedBuffer<float> row{size_t(cols)};
#pragma omp for schedule(static)
                for (int64_t r = 0; r < rows; ++r) {
                    if (format == WeightFormat::F32) {
                        dequantizeRow(type, data.data() + r * rowBytes, reinterpret_cast<float*>(out) + r * cols, size_t(cols));
                    } else {
                        dequantizeRow(type, data.data() + r * rowBytes, row.data(), size_t(cols));
                        fp32ToBf16Row(row.data(), reinterpret_cast<uint16_t*>(out) + r * cols, size_t(cols));
                    }
                }
            }
            state->plain = out;
        } else {
            // Int8: per output channel s = max|w| / L, q = round(w / s) (L = int8Levels(): 127, 63
            // without VNNI), then reordered once into the primitives' packed layout (the plain copy
            // is freed).
            AlignedBuffer<int8_t> q(count);
            const float levels = float(int8Levels_);
            state->scales.allocate(size_t(rows));
#pragma omp parallel num_threads(nThreads_)
            {
                AlignedBuffer<float> row{size_t(cols)};
#pragma omp for schedule(static)
                for (int64_t r = 0; r < rows; ++r) {
                    dequantizeRow(type, data.data() + r * rowBytes, row.data(), size_t(cols));
                    float amax = 0.0f;
                    for (int64_t i = 0; i < cols; ++i) amax = std::max(amax, std::fabs(row[size_t(i)]));
                    const float s = amax > 0.0f ? amax / levels : 1.0f;
                    for (int64_t i = 0; i < cols; ++i) q[size_t(r * cols + i)] = int8_t(std::nearbyint(row[size_t(i)] / s));
                    state->scales[size_t(r)] = s;
                }
            }
            const memory::desc packedDesc = impl_->s8Fixed_(cols, rows, kInt8Chunks[0]).wei.get_desc();
            memory plain(memory::desc({cols, rows}, dt::s8, {1, cols}), eng, q.data());
            state->packed = memory(packedDesc, eng);
            dnnl::reorder(plain, state->packed).execute(impl_->stream, plain, state->packed);
            impl_->stream.wait();
        }
        if (isGpu_) {
            // Copy the weights to the device once; the host copy is then released.
            const dt act = compute == ComputeType::BF16 ? dt::bf16 : dt::f32;
            const memory::desc wd({cols, rows}, act, {1, cols});
            state->gpuWeights = memory(wd, eng);
            void* dst = state->gpuWeights.map_data();
            std::memcpy(dst, state->plain, wd.get_size());
            state->gpuWeights.unmap_data(dst);
            state->owned = {};
            state->plain = nullptr;
            w.mapped_ = false;
            auto key = std::make_tuple(cols, rows, act);
            if (auto it = impl_->gpuPrims.find(key); it != impl_->gpuPrims.end()) {
                state->gpuPrim = it->second;
            } else {
                const memory::dim M = DNNL_RUNTIME_DIM_VAL;
                memory::desc src({M, cols}, act, {cols, 1}), dst2({M, rows}, dt::f32, {rows, 1});
                state->gpuPrim = dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wd, dst2), eng));
                impl_->gpuPrims.emplace(key, state->gpuPrim);
            }
        } else if (format == WeightFormat::F32) {
            // The prefill primitives for this shape, compiled now rather than in the first prefill.
            for (int64_t chunk : kF32Chunks) impl_->f32Fixed_(cols, rows, chunk);
            impl_->f32Runtime(cols, rows, rows);
        } else if (format == WeightFormat::BF16 || format == WeightFormat::F16 || format == WeightFormat::Blocks) {
            for (int64_t n0 = 0; n0 < rows; n0 += kWidenRows) {
                const int64_t nb = std::min(kWidenRows, rows - n0);
                for (int64_t chunk : kF32Chunks) impl_->f32Fixed_(cols, nb, chunk);
                impl_->f32Runtime(cols, nb, rows);
            }
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
    float* ys[1] = {y};
    const Linear* ws[1] = {&w};
    linearMany(ws, x, m, ys);
}

void ComputeDevice::linearMany(std::span<const Linear* const> ws, const float* x, int64_t m, std::span<float* const> ys) {
    if (isGpu_) {
        for (size_t i = 0; i < ws.size(); ++i) {
            const Linear& w = *ws[i];
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
            memory srcMem(srcMd, impl_->engine), dstMem(dstMd, impl_->engine);
            void* p = srcMem.map_data();
            std::memcpy(p, src, srcMd.get_size());
            srcMem.unmap_data(p);
            st->gpuPrim.execute(impl_->stream, {{DNNL_ARG_SRC, srcMem}, {DNNL_ARG_WEIGHTS, st->gpuWeights}, {DNNL_ARG_DST, dstMem}});
            impl_->stream.wait();
            p = dstMem.map_data();
            std::memcpy(ys[i], p, dstMd.get_size());
            dstMem.unmap_data(p);
        }
        return;
    }
    // Decode: every plain matrix in one GEMV region.
    GemvTask tasks[8];
    size_t nTasks = 0;
    for (size_t i = 0; i < ws.size(); ++i) {
        const Linear& w = *ws[i];
        auto* st = static_cast<LinearState*>(w.state_.get());
        if (w.format_ != WeightFormat::S8 && m <= kGemvMaxRows && nTasks < std::size(tasks)) {
            tasks[nTasks++] = GemvTask{st->plain, w.format_, w.rows_, w.cols_, ys[i], w.blockType_};
            continue;
        }
        switch (w.format_) {
            case WeightFormat::F32:
                impl_->prefillF32(static_cast<const float*>(st->plain), w.rows_, w.cols_, x, m, ys[i]);
                break;
            case WeightFormat::BF16:
                impl_->prefillWidened(GgmlType::BF16, st->plain, w.rows_, w.cols_, x, m, ys[i]);
                break;
            case WeightFormat::F16:
                impl_->prefillWidened(GgmlType::F16, st->plain, w.rows_, w.cols_, x, m, ys[i]);
                break;
            case WeightFormat::Blocks:
                impl_->prefillWidened(GgmlType(w.blockType_), st->plain, w.rows_, w.cols_, x, m, ys[i]);
                break;
            case WeightFormat::S8: impl_->linearInt8(*st, w.rows_, w.cols_, x, m, ys[i]); break;
        }
    }
    if (nTasks) gemv({tasks, nTasks}, x, m, nThreads_);
}

double ComputeDevice::measureMatmulPeak(PeakType type, int64_t m, int64_t n, int64_t k, double seconds) {
    using Clock = std::chrono::steady_clock;
    const dt t = type == PeakType::F32 ? dt::f32 : type == PeakType::BF16 ? dt::bf16 : dt::s8;
    try {
        auto& eng = impl_->engine;
        memory::desc src({m, k}, t, {k, 1}), dst({m, n}, dt::f32, {n, 1});
        memory::desc plainWei({k, n}, t, {1, k});
        dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, memory::desc({k, n}, t, memory::format_tag::any), dst), eng);
        dnnl::matmul prim(pd);
        memory s(src, eng), plain(plainWei, eng), w(pd.weights_desc(), eng), d(dst, eng);
        // Values that are no special case (small integers are exact in every type).
        for (auto* mem : {&s, &plain}) {
            const size_t bytes = mem->get_desc().get_size();
            auto* p = static_cast<uint8_t*>(mem->get_data_handle());
            if (t == dt::f32) {
                for (size_t i = 0; i < bytes / 4; ++i) reinterpret_cast<float*>(p)[i] = float(int(i % 7) - 3);
            } else if (t == dt::bf16) {
                for (size_t i = 0; i < bytes / 2; ++i) reinterpret_cast<uint16_t*>(p)[i] = fp32ToBf16(float(int(i % 7) - 3));
            } else {
                for (size_t i = 0; i < bytes; ++i) p[i] = uint8_t(int8_t(int(i % 7) - 3));
            }
        }
        dnnl::reorder(plain, w).execute(impl_->stream, plain, w);
        auto once = [&] {
            prim.execute(impl_->stream, {{DNNL_ARG_SRC, s}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, d}});
            impl_->stream.wait();
        };
        once();  // warm-up
        int64_t calls = 0;
        const auto t0 = Clock::now();
        double elapsed = 0.0;
        do {
            once();
            ++calls;
            elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
        } while (elapsed < seconds);
        return 2.0 * double(m) * double(n) * double(k) * double(calls) / elapsed / 1e9;
    } catch (const dnnl::error&) {
        return 0.0;
    }
}

}  // namespace inferscope
