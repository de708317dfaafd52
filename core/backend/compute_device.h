#pragma once
// The one seam to oneDNN. A ComputeDevice owns the oneDNN engine and stream and runs the model's
// matrix multiplies (Linear layers); everything else in the forward pass is plain C++ (kernels.h).
// Not thread-safe: one device is driven by one thread at a time (the engine's worker).

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <tuple>

#include "backend/linear.h"
#include "common/aligned_buffer.h"
#include "common/error.h"
#include "gguf/ggml_types.h"

namespace inferscope {

enum class DeviceKind { Auto, Cpu, Gpu };
Result<DeviceKind> parseDeviceKind(std::string_view text);  // "auto" | "cpu" | "gpu"
std::string_view deviceKindName(DeviceKind kind);

class ComputeDevice {
public:
    // `auto` takes a GPU when oneDNN finds one, else the CPU (and says so in notice()).
    // `gpu` with no GPU is an error.
    static Result<std::unique_ptr<ComputeDevice>> create(DeviceKind requested, int nThreads);
    ~ComputeDevice();

    bool isGpu() const { return isGpu_; }
    const std::string& description() const { return description_; }  // "CPU avx512_core_bf16, 2 threads"
    const std::string& notice() const { return notice_; }            // a fallback notice, or empty
    std::string_view isaName() const { return isa_; }
    int threads() const { return nThreads_; }
    // Changes the compute thread count (1..1024; 0 = one per core) for later passes.
    Result<void> setThreads(int nThreads);
    // OpenMP's thread count is per calling thread: call this on the thread that computes.
    void bindThreads() const;

    // Prepares W for y = x · Wᵀ. W has `rows` outputs (N) and `cols` inputs (K), stored as in GGUF
    // (ne0 = cols contiguous, ne1 = rows): that is oneDNN's weights {K, N} in "ba" layout.
    // F32 weights computed in F32 on the CPU are used in place (no copy of the mapping).
    Result<Linear> makeLinear(GgmlType type, std::span<const uint8_t> data, int64_t rows, int64_t cols,
                              ComputeType compute);

    // y[m, N] = x[m, K] · Wᵀ, row-major f32 in and out (any m >= 1).
    void linear(const Linear& w, const float* x, int64_t m, float* y);

private:
    ComputeDevice() = default;
    struct Impl;
    std::unique_ptr<Impl> impl_;
    bool isGpu_ = false;
    int nThreads_ = 1;
    std::string description_;
    std::string notice_;
    std::string isa_;
};

}  // namespace inferscope
