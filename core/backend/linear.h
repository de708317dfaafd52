#pragma once
// A weight matrix prepared for y = x · Wᵀ.

#include <cstdint>
#include <memory>

#include "common/aligned_buffer.h"

namespace inferscope {

// Precision a Linear computes in.
//   F32   f32 activations × the weights widened to f32 (weights stored F32, or F16 as in the file)
//   BF16  weights stored as bf16, activations kept f32, f32 accumulation
//   Int8  weights re-quantized per output channel to s8, activations quantized per token to s8,
//         s32 accumulation (oneDNN VNNI), both scales applied to the f32 result
//   Blocks weights kept in the file's quantized blocks (Q4_K, Q8_0, ...: quant_blocks.h), read in
//         place; decode decodes each block in registers/L1 and multiplies in f32, prefill decodes
//         256 rows at a time into an L2-sized f32 tile for oneDNN's f32 matmul
enum class ComputeType { F32, BF16, Int8, Blocks };

// How the weights are held in memory (what one decode pass reads).
enum class WeightFormat : uint8_t { F32, BF16, F16, S8, Blocks };

class Linear {
public:
    int64_t rows() const { return rows_; }  // N: outputs
    int64_t cols() const { return cols_; }  // K: inputs
    ComputeType compute() const { return compute_; }
    WeightFormat format() const { return format_; }
    // The stored block type of a Blocks matrix (Q4_K, ...), else the type it was made from.
    uint32_t blockType() const { return blockType_; }
    // Bytes of weights one forward pass reads (what bounds decode speed); Int8 includes the scales,
    // Blocks is the file's own bytes (scales, mins and quants).
    uint64_t bytes() const {
        const uint64_t n = uint64_t(rows_) * uint64_t(cols_);
        switch (format_) {
            case WeightFormat::F32: return n * 4;
            case WeightFormat::BF16:
            case WeightFormat::F16: return n * 2;
            case WeightFormat::S8: return n + uint64_t(rows_) * 4;
            case WeightFormat::Blocks: return uint64_t(rows_) * rowBytes_;
        }
        return n * 4;
    }
    // True when the weights are read straight from the mapped model file.
    bool mapped() const { return mapped_; }

private:
    friend class ComputeDevice;
    int64_t rows_ = 0;
    int64_t cols_ = 0;
    ComputeType compute_ = ComputeType::F32;
    WeightFormat format_ = WeightFormat::F32;
    uint32_t blockType_ = 0;
    uint64_t rowBytes_ = 0;  // Blocks: bytes of one stored row
    bool mapped_ = false;
    std::shared_ptr<void> state_;  // the device's weights and memory objects (opaque here)
};

}  // namespace inferscope
