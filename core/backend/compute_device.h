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
    // Largest |q| of Int8 weights and activations: 127, or 63 on a CPU without VNNI (AVX2,
    // AVX-512 before VNNI). There oneDNN's s8×s8 gemm (gemm:jit) shifts one operand by +128 to u8
    // and adds pairs of u8×s8 products in saturating 16-bit lanes (vpmaddubsw): 255·127·2
    // overflows. Measured on AVX2 (Zen 3): 4-7% relative error with 127 on both sides, 2-4% with
    // 63 on one side, none beyond the quantization step with 63 on both (191·63·2 fits).
    int int8Levels() const { return int8Levels_; }
    int threads() const { return nThreads_; }
    // Prefill (m past the GEMV's rows) multiplies BF16 weights, and quantized blocks decoded to bf16, by
    // x rounded to bf16 (round to nearest even, f32 accumulation), as ggml does for BF16 weights: on a CPU with AMX, where oneDNN's
    // bf16 matmul runs several times its f32 one. Elsewhere, and in decode, x stays f32.
    bool bf16Activations() const;
    // Changes the compute thread count (1..1024; 0 = one per core) for later passes.
    Result<void> setThreads(int nThreads);
    // OpenMP's thread count is per calling thread: call this on the thread that computes.
    void bindThreads() const;

    // Prepares W for y = x · Wᵀ. W has `rows` outputs (N) and `cols` inputs (K), stored as in GGUF
    // (ne0 = cols contiguous, ne1 = rows): that is oneDNN's weights {K, N} in "ba" layout.
    // On the CPU, weights whose stored type the compute type reads directly are used in place from
    // the mapping (no copy): F32 and F16 for F32 compute, BF16 for BF16. Everything else is
    // converted once, here. The prefill primitives for W's shape are created (JIT-compiled) here
    // too, so the first prefill does not pay for them.
    Result<Linear> makeLinear(GgmlType type, std::span<const uint8_t> data, int64_t rows, int64_t cols,
                              ComputeType compute);

    // y[m, N] = x[m, K] · Wᵀ, row-major f32 in and out (any m >= 1).
    //   m <= kGemvMaxRows (decode; kGemvPlainMaxRows for F32/BF16/F16 weights): hand-written GEMV
    //   (gemv.h), no allocation, no oneDNN call
    //   larger m (prefill): oneDNN. F32: fixed-M brgemm primitives (M = 128, 64, 32 chunks, runtime
    //   M for the rest) on the weights as stored; BF16 weights on a CPU with AMX
    //   (bf16Activations): bf16 × bf16 brgemm on the weights as stored, x rounded to
    //   bf16 once per call (llama-110m BF16 pp128 2.6× the widened path on an AMX Xeon);
    //   quantized blocks there: decoded 256 rows at a time into a bf16 tile, the same bf16 brgemm;
    //   other BF16, F16 and quantized weights: widened to f32 256 rows at a time into an L2-sized
    //   buffer, then an f32 matmul (without native bf16, f32 FMA runs about twice oneDNN's bf16
    //   dot product, measured, also with AVX512_BF16 but no AMX); Int8: s8 × s8 primitives on prepacked weights.
    void linear(const Linear& w, const float* x, int64_t m, float* y);
    // Several matrices applied to the same x (Q, K, V; gate, up): one parallel region in decode.
    void linearMany(std::span<const Linear* const> ws, const float* x, int64_t m, std::span<float* const> ys);
    // The most rows of x a linear/linearMany call on ws may take while each row's y stays bit for
    // bit what the call with that row alone (m = 1, a decode step) gives: the decode GEMV's
    // gemvExactRows (gemv.h; kGemvPlainMaxRows for F32/BF16/F16, kGemvMaxRows for the block
    // formats, 2 for the K-quant integer kernels); Int8 kGemvPlainMaxRows too (oneDNN's
    // s8 × s8 sums are exact integers, the scales applied per element); 1 on a GPU, where every m
    // goes through one oneDNN matmul whose summation order may depend on m.
    int exactRows(std::span<const Linear* const> ws) const;

    // The machine's matmul peak for the roofline: GFLOP/s (GOP/s for s8) of oneDNN's best matmul
    // for m×n×k in f32, bf16 or s8 (s8 src and weights), weights prepacked in the layout the
    // primitive chooses, timed for about `seconds` after a warm-up. 0 when oneDNN cannot run it.
    enum class PeakType { F32, BF16, S8 };
    double measureMatmulPeak(PeakType type, int64_t m, int64_t n, int64_t k, double seconds);

private:
    ComputeDevice() = default;
    struct Impl;
    std::unique_ptr<Impl> impl_;
    bool isGpu_ = false;
    int nThreads_ = 1;
    std::string description_;
    std::string notice_;
    std::string isa_;
    int int8Levels_ = 127;
};

}  // namespace inferscope
