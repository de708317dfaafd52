#pragma once
// Software prefetch for the decode GEMVs on quantized blocks (gemv_q8blocks_avx2.cpp and _vnni.cpp,
// gemv_kquants_avx2.cpp), which stream every weight byte from memory once per token. The hardware
// prefetchers alone left them far below the machine's read bandwidth: decode of a TinyLlama-shape
// Q4_K_M file ran at 24 tok/s with a 768-byte L1 prefetch, 30 with the lines requested 8 KiB
// ahead (2 threads, AVX-512 Xeon, bench tg32). Each block's lines are asked for twice: 8 KiB ahead
// into L2 (far enough to cover DRAM latency at the kernels' rate), and 1 KiB ahead into L1 (by
// then an L2 hit, so the L1 fill buffers are never all waiting on DRAM). Measured 512 B – 32 KiB,
// L1 only, L2 only and both: this pair was best or within noise of best for Q8_0, Q4_0, Q4_K_M,
// Q5_K_M and Q6_K (bench/README.md). Included by a kernel set's sources only.
#include <cstdint>

#include <immintrin.h>

namespace inferscope::INFERSCOPE_KERNELS_NS {

inline constexpr int kPrefetchL2Bytes = 8192, kPrefetchL1Bytes = 1024;

// The lines of [p, p + bytes), 8 KiB and 1 KiB ahead.
inline void prefetchWeightsAhead(const void* p, int64_t bytes) {
    const char* c = static_cast<const char*>(p);
    for (int64_t off = 0; off < bytes; off += 64) {
        _mm_prefetch(c + kPrefetchL2Bytes + off, _MM_HINT_T1);
        _mm_prefetch(c + kPrefetchL1Bytes + off, _MM_HINT_T0);
    }
}

}  // namespace inferscope::INFERSCOPE_KERNELS_NS
