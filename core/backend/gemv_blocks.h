#pragma once
// Decode's GEMV on quantized weights kept in their blocks (ComputeType::Blocks): each stored row is
// decoded a chunk at a time into an L1-resident f32 buffer (the exact decoders of quant_blocks.h)
// and multiplied with x there, so every weight byte is read from memory once per token and no
// widened copy exists.

#include <cstdint>

#include "backend/gemv.h"

// Declared for a kernel set's sources (common/kernel_set.h) only.
namespace inferscope::INFERSCOPE_KERNELS_NS {

// Rows [n0, n1) of a Blocks task: y[i, n] = x[i, :] · decode(W[n, :]) for i < m.
void gemvBlockRows(const GemvTask& t, const float* x, int64_t m, int64_t n0, int64_t n1);

}  // namespace inferscope::INFERSCOPE_KERNELS_NS
