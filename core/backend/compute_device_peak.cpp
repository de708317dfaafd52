// The machine's matmul peak, for the roofline of `inferscope-cli bench` and the Timeline (with
// backend/memory_probe.h, its bandwidth): oneDNN's best matmul of a shape, timed.
#include <chrono>

#include "backend/compute_device_impl.h"

namespace inferscope {

using namespace onednn;

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
