#include "backend/memory_probe.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace inferscope {

ReadBandwidthProbe::ReadBandwidthProbe(size_t bytes) {
    buffer_.allocate(bytes / 512 * 64);  // a whole number of 512-byte steps
    std::memset(buffer_.data(), 1, buffer_.bytes());
}

double ReadBandwidthProbe::measure(int nThreads, int passes) {
    const size_t n = buffer_.size();
    const uint64_t* data = buffer_.data();
    double best = 0.0;
    volatile uint64_t sink = 0;
    for (int p = 0; p < passes; ++p) {
        const auto t0 = std::chrono::steady_clock::now();
        uint64_t total = 0;
#pragma omp parallel num_threads(nThreads) reduction(+ : total)
        {
#if defined(__AVX512F__)
            __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
#pragma omp for schedule(static) nowait
            for (size_t i = 0; i < n; i += 64) {  // 512 bytes per step, 8 independent loads
                const __m512i* q = reinterpret_cast<const __m512i*>(data + i);
                a0 = _mm512_add_epi64(a0, _mm512_add_epi64(_mm512_load_si512(q + 0), _mm512_load_si512(q + 1)));
                a1 = _mm512_add_epi64(a1, _mm512_add_epi64(_mm512_load_si512(q + 2), _mm512_load_si512(q + 3)));
                a2 = _mm512_add_epi64(a2, _mm512_add_epi64(_mm512_load_si512(q + 4), _mm512_load_si512(q + 5)));
                a3 = _mm512_add_epi64(a3, _mm512_add_epi64(_mm512_load_si512(q + 6), _mm512_load_si512(q + 7)));
            }
            alignas(64) uint64_t lanes[8];
            _mm512_store_si512(lanes, _mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3)));
            for (uint64_t v : lanes) total += v;
#else
#pragma omp for schedule(static) nowait
            for (size_t i = 0; i < n; ++i) total += data[i];
#endif
        }
        sink = sink + total;
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        best = std::max(best, double(buffer_.bytes()) / s / 1e9);
    }
    return best;
}

}  // namespace inferscope
