#include "backend/memory_probe.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "common/kernel_set.h"

namespace inferscope {
namespace {

// The sum of data[begin, end) (whole 512-byte steps), in the active kernel set's instructions
// (common/kernel_set.h): a function per set, compiled for it by a target attribute.
using SumFn = uint64_t (*)(const uint64_t* data, size_t begin, size_t end);

uint64_t sumPortable(const uint64_t* data, size_t begin, size_t end) {
    uint64_t total = 0;
    for (size_t i = begin; i < end; ++i) total += data[i];
    return total;
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) uint64_t sumAvx2(const uint64_t* data, size_t begin, size_t end) {
    uint64_t total = 0;
    for (size_t i = begin; i < end; ++i) total += data[i];
    return total;
}

__attribute__((target("avx512f"))) uint64_t sumAvx512(const uint64_t* data, size_t begin, size_t end) {
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = begin; i < end; i += 64) {  // 512 bytes per step, 8 independent loads
        const __m512i* q = reinterpret_cast<const __m512i*>(data + i);
        a0 = _mm512_add_epi64(a0, _mm512_add_epi64(_mm512_load_si512(q + 0), _mm512_load_si512(q + 1)));
        a1 = _mm512_add_epi64(a1, _mm512_add_epi64(_mm512_load_si512(q + 2), _mm512_load_si512(q + 3)));
        a2 = _mm512_add_epi64(a2, _mm512_add_epi64(_mm512_load_si512(q + 4), _mm512_load_si512(q + 5)));
        a3 = _mm512_add_epi64(a3, _mm512_add_epi64(_mm512_load_si512(q + 6), _mm512_load_si512(q + 7)));
    }
    alignas(64) uint64_t lanes[8];
    _mm512_store_si512(lanes, _mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3)));
    uint64_t total = 0;
    for (uint64_t v : lanes) total += v;
    return total;
}
#endif

SumFn sumFor(KernelSet set) {
#if defined(__x86_64__)
    if (set == KernelSet::Avx512) return sumAvx512;
    if (set == KernelSet::Avx2) return sumAvx2;
#endif
    (void)set;
    return sumPortable;
}

}  // namespace

ReadBandwidthProbe::ReadBandwidthProbe(size_t bytes) {
    buffer_.allocate(bytes / 512 * 64);  // a whole number of 512-byte steps
    std::memset(buffer_.data(), 1, buffer_.bytes());
}

double ReadBandwidthProbe::measure(int nThreads, int passes) {
    const size_t n = buffer_.size();
    const uint64_t* data = buffer_.data();
    double best = 0.0;
    volatile uint64_t sink = 0;
    const SumFn sum = sumFor(activeKernelSet());
    for (int p = 0; p < passes; ++p) {
        const auto t0 = std::chrono::steady_clock::now();
        uint64_t total = 0;
#pragma omp parallel num_threads(nThreads) reduction(+ : total)
        {
            // Equal shares of whole 512-byte steps, as `omp for schedule(static)` would split them.
            const size_t threads = size_t(omp_get_num_threads()), steps = n / 64;
            const size_t per = (steps + threads - 1) / threads * 64, begin = std::min(n, size_t(omp_get_thread_num()) * per);
            total += sum(data, begin, std::min(n, begin + per));
        }
        sink = sink + total;
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        best = std::max(best, double(buffer_.bytes()) / s / 1e9);
    }
    return best;
}

}  // namespace inferscope
