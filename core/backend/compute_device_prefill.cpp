// ComputeDevice's oneDNN matmuls on the CPU: the primitives shared by shape, prefill on f32,
// widened and quantized weights, and the Int8 path (see compute_device.h for why each).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>

#include "backend/compute_device_impl.h"
#include "gguf/quant_blocks.h"

namespace inferscope {

using namespace onednn;

namespace {

// A fixed-M matmul of `type` activations and weights as stored ("ba"), f32 out, made once per
// shape into `cache`.
Matmul& plainFixed(std::map<std::tuple<int64_t, int64_t, int64_t>, Matmul>& cache, const dnnl::engine& engine, dt type,
                   int64_t k, int64_t n, int64_t m) {
    auto key = std::make_tuple(k, n, m);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
    memory::desc src({m, k}, type, {k, 1}), wei({k, n}, type, {1, k}), dst({m, n}, dt::f32, {n, 1});
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wei, dst), engine);
    Matmul mm{dnnl::matmul(pd), memory(src, engine, DNNL_MEMORY_NONE), memory(wei, engine, DNNL_MEMORY_NONE),
              memory(dst, engine, DNNL_MEMORY_NONE)};
    return cache.emplace(key, std::move(mm)).first->second;
}

// The runtime-M matmul of `type` activations and nb weight rows as stored, f32 out into columns of
// a [M][ld] destination, made once per shape into `cache`.
dnnl::matmul plainRuntime(std::map<std::tuple<int64_t, int64_t, int64_t>, dnnl::matmul>& cache, const dnnl::engine& engine, dt type,
                          int64_t k, int64_t nb, int64_t ld) {
    auto key = std::make_tuple(k, nb, ld);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
    const memory::dim M = DNNL_RUNTIME_DIM_VAL;
    memory::desc src({M, k}, type, {k, 1}), wei({k, nb}, type, {1, k}), dst({M, nb}, dt::f32, {ld, 1});
    dnnl::matmul prim(dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wei, dst), engine));
    cache.emplace(key, prim);
    return prim;
}

}  // namespace

ComputeDevice::Impl::Matmul& ComputeDevice::Impl::f32Fixed_(int64_t k, int64_t n, int64_t m) {
    return plainFixed(f32Fixed, engine, dt::f32, k, n, m);
}

dnnl::matmul ComputeDevice::Impl::f32Runtime(int64_t k, int64_t nb, int64_t ld) { return plainRuntime(f32Rt, engine, dt::f32, k, nb, ld); }

ComputeDevice::Impl::Matmul& ComputeDevice::Impl::s8Fixed_(int64_t k, int64_t n, int64_t m) {
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

ComputeDevice::Impl::Matmul& ComputeDevice::Impl::bf16Fixed_(int64_t k, int64_t n, int64_t m) {
    return plainFixed(bf16Fixed, engine, dt::bf16, k, n, m);
}

dnnl::matmul ComputeDevice::Impl::bf16Runtime(int64_t k, int64_t nb, int64_t ld) { return plainRuntime(bf16Rt, engine, dt::bf16, k, nb, ld); }

void ComputeDevice::Impl::run(Matmul& mm, const void* src, const void* wei, float* dst) {
    mm.src.set_data_handle(const_cast<void*>(src));
    mm.wei.set_data_handle(const_cast<void*>(wei));
    mm.dst.set_data_handle(dst);
    mm.prim.execute(stream, {{DNNL_ARG_SRC, mm.src}, {DNNL_ARG_WEIGHTS, mm.wei}, {DNNL_ARG_DST, mm.dst}});
    stream.wait();
}

// y[m][ld] columns [0, nb) = x[m][k] · wᵀ for w [nb][k] as stored, x and w both f32 or both bf16:
// fixed-M chunks (each into blockOut first when ld != nb: fixed-M brgemm wants a contiguous
// destination, a strided one fell back to gemm:jit, measured 15-25% slower); the rest zero-padded to
// the smallest chunk from kPadFromRows rows, runtime M below that.
void ComputeDevice::Impl::matmulChunks(dt type, const void* w, int64_t nb, int64_t ld, int64_t k, const void* x, int64_t m, float* y) {
    const size_t xRow = size_t(k) * (type == dt::bf16 ? 2 : 4);
    auto xAt = [&](int64_t r) { return static_cast<const uint8_t*>(x) + size_t(r) * xRow; };
    auto fixed = [&](int64_t chunk) -> Matmul& { return type == dt::bf16 ? bf16Fixed_(k, nb, chunk) : f32Fixed_(k, nb, chunk); };
    int64_t r = 0;
    for (int64_t chunk : std::span(kF32Chunks).first(3))
        for (; m - r >= chunk; r += chunk) {
            if (ld == nb) {
                run(fixed(chunk), xAt(r), w, y + r * ld);
                continue;
            }
            run(fixed(chunk), xAt(r), w, blockOut.data());
#pragma omp parallel for schedule(static) num_threads(nThreads()) if (chunk * nb > 16384)
            for (int64_t i = 0; i < chunk; ++i) std::memcpy(y + (r + i) * ld, blockOut.data() + i * nb, size_t(nb) * sizeof(float));
        }
    const int64_t rest = m - r;
    if (rest >= kPadFromRows) {  // zero-padded to the smallest fixed chunk; the padding's outputs are dropped
        const int64_t chunk = rest <= kF32Chunks[3] ? kF32Chunks[3] : kF32Chunks[2];
        const size_t inBytes = size_t(chunk) * xRow;
        if (padIn.bytes() < inBytes) padIn.allocate((inBytes + sizeof(float) - 1) / sizeof(float));
        if (padOut.size() < size_t(chunk * nb)) padOut.allocate(size_t(chunk * nb));
        auto* in = reinterpret_cast<uint8_t*>(padIn.data());
        std::memcpy(in, xAt(r), size_t(rest) * xRow);
        std::memset(in + size_t(rest) * xRow, 0, size_t(chunk - rest) * xRow);
        run(fixed(chunk), in, w, padOut.data());
#pragma omp parallel for schedule(static) num_threads(nThreads()) if (rest * nb > 16384)
        for (int64_t i = 0; i < rest; ++i) std::memcpy(y + (r + i) * ld, padOut.data() + i * nb, size_t(nb) * sizeof(float));
        return;
    }
    if (r < m) {
        memory src(memory::desc({rest, k}, type, {k, 1}), engine, const_cast<uint8_t*>(xAt(r)));
        memory wei(memory::desc({k, nb}, type, {1, k}), engine, const_cast<void*>(w));
        memory dst(memory::desc({rest, nb}, dt::f32, {ld, 1}), engine, y + r * ld);
        dnnl::matmul prim = type == dt::bf16 ? bf16Runtime(k, nb, ld) : f32Runtime(k, nb, ld);
        prim.execute(stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}});
        stream.wait();
    }
}

void ComputeDevice::Impl::prefillF32(const float* w, int64_t n, int64_t k, const float* x, int64_t m, float* y) {
    matmulChunks(dt::f32, w, n, n, k, x, m, y);
}

template <class T, class DecodeRow>
void ComputeDevice::Impl::prefillTiles(GgmlType type, const void* w, int64_t n, int64_t k, dt tileType, T* tile, const void* x,
                                       int64_t m, float* y, DecodeRow&& decodeRow) {
    const size_t rowBytes = storedRowBytes(type, k);
    if (blockOut.size() < size_t(kF32Chunks[0] * kWidenRows)) blockOut.allocate(size_t(kF32Chunks[0] * kWidenRows));
    for (int64_t n0 = 0; n0 < n; n0 += kWidenRows) {
        const int64_t nb = std::min(kWidenRows, n - n0);
        const uint8_t* src = static_cast<const uint8_t*>(w) + size_t(n0) * rowBytes;
#pragma omp parallel for schedule(static) num_threads(nThreads())
        for (int64_t r = 0; r < nb; ++r) decodeRow(src + size_t(r) * rowBytes, tile + r * k, omp_get_thread_num());
        matmulChunks(tileType, tile, nb, n, k, x, m, y + n0);
    }
}

void ComputeDevice::Impl::prefillWidened(GgmlType type, const void* w, int64_t n, int64_t k, const float* x, int64_t m,
                                         float* y) {
    if (widened.size() < size_t(kWidenRows * k)) widened.allocate(size_t(kWidenRows * k));
    prefillTiles(type, w, n, k, dt::f32, widened.data(), x, m, y,
                 [&](const uint8_t* row, float* out, int) { dequantizeRow(type, row, out, size_t(k)); });
}

const uint16_t* ComputeDevice::Impl::activationsBf16(const float* x, int64_t m, int64_t k) {
    if (srcBf16.size() < size_t(m * k)) srcBf16.allocate(size_t(m * k));
    uint16_t* out = srcBf16.data();
#pragma omp parallel for schedule(static) num_threads(nThreads()) if (m * k > 65536)
    for (int64_t r = 0; r < m; ++r) fp32ToBf16Row(x + r * k, out + r * k, size_t(k));
    return out;
}

void ComputeDevice::Impl::prefillBf16(const void* w, int64_t n, int64_t k, const uint16_t* xb, int64_t m, float* y) {
    matmulChunks(dt::bf16, w, n, n, k, xb, m, y);
}

void ComputeDevice::Impl::prefillBlocksBf16(GgmlType type, const void* w, int64_t n, int64_t k, const uint16_t* xb, int64_t m,
                                            float* y) {
    if (widened.size() < size_t(nThreads() * k)) widened.allocate(size_t(nThreads() * k));  // one f32 row per thread
    if (widenedBf16.size() < size_t(kWidenRows * k)) widenedBf16.allocate(size_t(kWidenRows * k));
    prefillTiles(type, w, n, k, dt::bf16, widenedBf16.data(), xb, m, y, [&](const uint8_t* row, uint16_t* out, int thread) {
        if (dequantizeRowBf16(type, row, out, size_t(k))) return;  // one pass, where the kernel set has it
        float* f32 = widened.data() + size_t(thread) * size_t(k);
        dequantizeRow(type, row, f32, size_t(k));
        fp32ToBf16Row(f32, out, size_t(k));
    });
}

void ComputeDevice::Impl::linearInt8(const LinearState& st, int64_t n, int64_t k, const float* x, int64_t m, float* y) {
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

}  // namespace inferscope
