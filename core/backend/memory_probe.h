#pragma once
// The machine's memory read bandwidth, measured the way decode reads weights: a buffer far larger
// than the last-level cache, streamed once per pass by every thread (AVX-512 loads, nothing else).
// It bounds decode: tokens/s <= bandwidth / bytes read per token.

#include <cstddef>
#include <cstdint>

#include "common/aligned_buffer.h"

namespace inferscope {

class ReadBandwidthProbe {
public:
    // Allocates and touches `bytes` (512 MiB by default: twice this machine kind's 260 MiB L3).
    explicit ReadBandwidthProbe(size_t bytes = size_t(512) << 20);
    size_t bytes() const { return buffer_.bytes(); }
    // Best of `passes` full reads on nThreads OpenMP threads, in GB/s (1e9 bytes per second).
    double measure(int nThreads, int passes = 3);

private:
    AlignedBuffer<uint64_t> buffer_;
};

}  // namespace inferscope
