#pragma once
// A weight matrix prepared for one matmul primitive: y = x · Wᵀ.

#include <cstdint>
#include <memory>

#include "common/aligned_buffer.h"

namespace inferscope {

// Precision a Linear computes in: F32 (f32 weights and activations) or BF16 (bf16 weights and
// activations, f32 accumulation and output).
enum class ComputeType { F32, BF16 };

class Linear {
public:
    int64_t rows() const { return rows_; }  // N: outputs
    int64_t cols() const { return cols_; }  // K: inputs
    ComputeType compute() const { return compute_; }
    // Bytes of weights one forward pass reads (what bounds decode speed).
    uint64_t bytes() const { return uint64_t(rows_) * uint64_t(cols_) * (compute_ == ComputeType::BF16 ? 2 : 4); }
    // True when the weights are read straight from the mapped model file.
    bool mapped() const { return mapped_; }

private:
    friend class ComputeDevice;
    int64_t rows_ = 0;
    int64_t cols_ = 0;
    ComputeType compute_ = ComputeType::F32;
    bool mapped_ = false;
    std::shared_ptr<void> state_;  // the device's primitive and memory objects (opaque here)
};

}  // namespace inferscope
