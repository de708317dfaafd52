#pragma once
// ComputeDevice's oneDNN side, private to the backend: the engine and stream, the matmul
// primitives shared by every Linear of a shape, and what a Linear holds on the device. Split by
// concern over compute_device.cpp (the device, preparing weights, dispatch per phase),
// compute_device_prefill.cpp (the primitives and the prefill / Int8 runs), compute_device_gpu.cpp
// (oneDNN's OpenCL GPU engine) and compute_device_peak.cpp (the machine's matmul peak).

#include <dnnl.hpp>

#include <cstdint>
#include <map>
#include <tuple>

#include "backend/compute_device.h"
#include "common/aligned_buffer.h"
#include "gguf/ggml_types.h"

namespace inferscope {
namespace onednn {

using dnnl::memory;
using dt = memory::data_type;

// Fixed-M f32/bf16 prefill primitives: m is cut into the first three greedily, what is left is
// zero-padded to the smallest chunk that holds it (from kPadFromRows rows).
inline constexpr int64_t kF32Chunks[] = {128, 64, 32, 16};
inline constexpr int64_t kInt8Chunks[] = {128, 64, 32, 16, 8, 4, 2, 1};  // fixed-M s8 primitives (any m)
// Rows left after the fixed chunks from which they are zero-padded to the smallest chunk rather
// than run at runtime M (gemm:jit on a strided destination). TinyLlama F16 on AVX-512, 2 threads:
// runtime M took 26-42 ms a row (pp8 206 ms, pp9 224, pp21 882, pp31 967), the 16-row chunk
// 256-287 ms and the 32-row one 353 ms (one round each).
inline constexpr int64_t kPadFromRows = 12;
inline constexpr int64_t kWidenRows = 256;  // BF16/F16 weight rows widened to f32 per matmul call (2 MiB at K = 2048)

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

// Bytes of one stored row of k elements of `type`.
inline size_t storedRowBytes(GgmlType type, int64_t k) {
    const auto info = *ggmlTypeInfo(uint32_t(type));
    return size_t(k) / info.blockSize * info.typeSize;
}

}  // namespace onednn

struct ComputeDevice::Impl {
    using Matmul = onednn::Matmul;
    using LinearState = onednn::LinearState;
    using dt = onednn::dt;

    dnnl::engine engine;
    dnnl::stream stream;
    const int* threadCount = nullptr;  // ComputeDevice::nThreads_: the one count, also after setThreads
    int nThreads() const { return *threadCount; }
    // The CPU multiplies bf16 in AMX tiles (oneDNN's bf16 matmul then runs several times its f32
    // one): BF16 weights prefill as bf16 × bf16 in place, not widened.
    bool nativeBf16 = false;
    const int* int8Levels = nullptr;  // ComputeDevice::int8Levels_
    // Shared by every Linear of a shape: a model has a handful of shapes.
    std::map<std::tuple<int64_t, int64_t, int64_t>, Matmul> f32Fixed;      // (K, N, M): brgemm, "ba" weights
    std::map<std::tuple<int64_t, int64_t, int64_t>, dnnl::matmul> f32Rt;   // (K, nb, ldDst): runtime M
    std::map<std::tuple<int64_t, int64_t, int64_t>, Matmul> s8Fixed;       // (K, N, M): s8 × s8 → f32
    std::map<std::tuple<int64_t, int64_t, int64_t>, Matmul> bf16Fixed;     // (K, N, M): bf16 × bf16 → f32, "ba" weights
    std::map<std::tuple<int64_t, int64_t, int64_t>, dnnl::matmul> bf16Rt;  // (K, nb, ldDst): runtime M
    std::map<std::tuple<int64_t, int64_t, dt>, dnnl::matmul> gpuPrims;     // (K, N, act type)
    AlignedBuffer<float> widened;      // [kWidenRows][K] f32 weights being multiplied (prefill)
    AlignedBuffer<float> blockOut;     // [128][kWidenRows] one chunk's outputs for those rows
    AlignedBuffer<float> padIn;        // the last rows of x, zero-padded to a fixed chunk
    AlignedBuffer<float> padOut;       // [chunk][nb] that chunk's outputs
    AlignedBuffer<uint16_t> widenedBf16;  // [kWidenRows][K] quantized rows decoded to bf16 (nativeBf16)
    AlignedBuffer<int8_t> srcS8;       // [m][K] quantized activations
    AlignedBuffer<float> srcScales;    // [m]
    AlignedBuffer<uint16_t> srcBf16;   // activations converted to bf16 (GPU; CPU prefill with nativeBf16)

    // ---- primitives, made once per shape (compute_device_prefill.cpp) -----------------------------
    Matmul& f32Fixed_(int64_t k, int64_t n, int64_t m);
    dnnl::matmul f32Runtime(int64_t k, int64_t nb, int64_t ld);
    // s8 primitives for one shape; the first (M = 128) chooses the packed weights layout that all
    // of them are then created with.
    Matmul& s8Fixed_(int64_t k, int64_t n, int64_t m);
    Matmul& bf16Fixed_(int64_t k, int64_t n, int64_t m);
    dnnl::matmul bf16Runtime(int64_t k, int64_t nb, int64_t ld);
    void run(Matmul& mm, const void* src, const void* wei, float* dst);
    // y[m][ld] columns [0, nb) = x · wᵀ, x and w both f32 or both bf16 (`type`), in the fixed-M chunks and a runtime-M rest.
    void matmulChunks(dt type, const void* w, int64_t nb, int64_t ld, int64_t k, const void* x, int64_t m, float* y);

    // ---- prefill (m > kGemvMaxRows) and Int8 (compute_device_prefill.cpp) --------------------------
    void prefillF32(const float* w, int64_t n, int64_t k, const float* x, int64_t m, float* y);
    // BF16/F16 rows, or quantized blocks (`type`), widened to f32 256 rows at a time.
    void prefillWidened(GgmlType type, const void* w, int64_t n, int64_t k, const float* x, int64_t m, float* y);
    // BF16 weights as stored × x already rounded to bf16 (xb, [m][K]), f32 out (nativeBf16 only).
    void prefillBf16(const void* w, int64_t n, int64_t k, const uint16_t* xb, int64_t m, float* y);
    // Quantized blocks (`type`) decoded 256 rows at a time into bf16 tiles, × xb (nativeBf16 only).
    void prefillBlocksBf16(GgmlType type, const void* w, int64_t n, int64_t k, const uint16_t* xb, int64_t m, float* y);
    // The loop both tile paths share: w's stored rows kWidenRows at a time, each tile filled by
    // decodeRow(stored row, tile row r, thread) on the OpenMP threads, then × x by matmulChunks
    // into y's columns of those rows. `tile` is the [kWidenRows][K] buffer of `tileType`.
    template <class T, class DecodeRow>
    void prefillTiles(GgmlType type, const void* w, int64_t n, int64_t k, dt tileType, T* tile, const void* x, int64_t m,
                      float* y, DecodeRow&& decodeRow);
    // x [m][K] rounded to bf16 into srcBf16 (round to nearest even, as ggml rounds activations for BF16 weights).
    const uint16_t* activationsBf16(const float* x, int64_t m, int64_t k);
    void linearInt8(const LinearState& st, int64_t n, int64_t k, const float* x, int64_t m, float* y);

    // ---- GPU (compute_device_gpu.cpp) -----------------------------------------------------------------
    // Copies st's host weights ([rows][cols], f32 or bf16) to the device once and frees the host
    // copy; shares the runtime-M primitive of the shape.
    void uploadToGpu(LinearState& st, int64_t rows, int64_t cols, bool bf16);
    // y[m][n] = x[m][k] · Wᵀ on the device (x converted to bf16 first for bf16 weights).
    void linearGpu(const LinearState& st, int64_t n, int64_t k, bool bf16, const float* x, int64_t m, float* y);
};

}  // namespace inferscope
