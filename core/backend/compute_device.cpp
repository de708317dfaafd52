#include "backend/compute_device.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <thread>

#include "backend/compute_device_impl.h"
#include "backend/gemv.h"
#include "gguf/quant_blocks.h"

namespace inferscope {
namespace {

using namespace onednn;

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

size_t formatBytes(WeightFormat f) { return f == WeightFormat::F32 ? 4 : f == WeightFormat::S8 ? 1 : 2; }

}  // namespace

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
    // AMX tiles multiply bf16 several times faster than f32 FMA (bf16 peak 525 vs f32 113 GFLOP/s
    // on a 2-core AMX Xeon); AVX512_BF16 alone runs at about half the f32 rate (measured on an
    // earlier host, docs/ARCHITECTURE.md), so there BF16 weights are still widened.
    dev->impl_->nativeBf16 = isa == dnnl::cpu_isa::avx512_core_amx;

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
            impl_->uploadToGpu(*state, rows, cols, compute == ComputeType::BF16);
            w.mapped_ = false;
        } else if (format == WeightFormat::F32) {
            // The prefill primitives for this shape, compiled now rather than in the first prefill.
            for (int64_t chunk : kF32Chunks) impl_->f32Fixed_(cols, rows, chunk);
            impl_->f32Runtime(cols, rows, rows);
        } else if (format == WeightFormat::BF16 && impl_->nativeBf16) {
            for (int64_t chunk : kF32Chunks) impl_->bf16Fixed_(cols, rows, chunk);
            impl_->bf16Runtime(cols, rows, rows);
        } else if (format == WeightFormat::BF16 || format == WeightFormat::F16 || format == WeightFormat::Blocks) {
            // 256-row tiles: f32, or bf16 for quantized blocks on a CPU with AMX.
            const bool bf16Tiles = format == WeightFormat::Blocks && impl_->nativeBf16;
            for (int64_t n0 = 0; n0 < rows; n0 += kWidenRows) {
                const int64_t nb = std::min(kWidenRows, rows - n0);
                for (int64_t chunk : kF32Chunks) bf16Tiles ? impl_->bf16Fixed_(cols, nb, chunk) : impl_->f32Fixed_(cols, nb, chunk);
                bf16Tiles ? impl_->bf16Runtime(cols, nb, rows) : impl_->f32Runtime(cols, nb, rows);
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

bool ComputeDevice::bf16Activations() const { return !isGpu_ && impl_->nativeBf16; }

void ComputeDevice::linear(const Linear& w, const float* x, int64_t m, float* y) {
    float* ys[1] = {y};
    const Linear* ws[1] = {&w};
    linearMany(ws, x, m, ys);
}

int ComputeDevice::exactRows(std::span<const Linear* const> ws) const {
    if (isGpu_) return 1;
    int rows = kGemvPlainMaxRows;
    for (const Linear* w : ws) {
        if (w->format_ == WeightFormat::S8) continue;
        const auto* st = static_cast<const LinearState*>(w->state_.get());
        rows = std::min(rows, gemvExactRows(GemvTask{st->plain, w->format_, w->rows_, w->cols_, nullptr, w->blockType_}));
    }
    return rows;
}

void ComputeDevice::linearMany(std::span<const Linear* const> ws, const float* x, int64_t m, std::span<float* const> ys) {
    if (isGpu_) {
        for (size_t i = 0; i < ws.size(); ++i) {
            const Linear& w = *ws[i];
            impl_->linearGpu(*static_cast<const LinearState*>(w.state_.get()), w.rows_, w.cols_,
                             w.compute_ == ComputeType::BF16, x, m, ys[i]);
        }
        return;
    }
    // Decode: every plain matrix in one GEMV region.
    GemvTask tasks[8];
    size_t nTasks = 0;
    const uint16_t* xBf16 = nullptr;  // x rounded to bf16 once for every BF16 matrix of the call
    for (size_t i = 0; i < ws.size(); ++i) {
        const Linear& w = *ws[i];
        auto* st = static_cast<LinearState*>(w.state_.get());
        if (m <= gemvMaxRows(w.format_) && nTasks < std::size(tasks)) {
            tasks[nTasks++] = GemvTask{st->plain, w.format_, w.rows_, w.cols_, ys[i], w.blockType_};
            continue;
        }
        switch (w.format_) {
            case WeightFormat::F32:
                impl_->prefillF32(static_cast<const float*>(st->plain), w.rows_, w.cols_, x, m, ys[i]);
                break;
            case WeightFormat::BF16:
                if (impl_->nativeBf16) {
                    if (!xBf16) xBf16 = impl_->activationsBf16(x, m, w.cols_);
                    impl_->prefillBf16(st->plain, w.rows_, w.cols_, xBf16, m, ys[i]);
                } else {
                    impl_->prefillWidened(GgmlType::BF16, st->plain, w.rows_, w.cols_, x, m, ys[i]);
                }
                break;
            case WeightFormat::F16:
                impl_->prefillWidened(GgmlType::F16, st->plain, w.rows_, w.cols_, x, m, ys[i]);
                break;
            case WeightFormat::Blocks:
                if (impl_->nativeBf16) {
                    if (!xBf16) xBf16 = impl_->activationsBf16(x, m, w.cols_);
                    impl_->prefillBlocksBf16(GgmlType(w.blockType_), st->plain, w.rows_, w.cols_, xBf16, m, ys[i]);
                } else {
                    impl_->prefillWidened(GgmlType(w.blockType_), st->plain, w.rows_, w.cols_, x, m, ys[i]);
                }
                break;
            case WeightFormat::S8: impl_->linearInt8(*st, w.rows_, w.cols_, x, m, ys[i]); break;
        }
    }
    if (nTasks) gemv({tasks, nTasks}, x, m, nThreads_);
}

}  // namespace inferscope
