#pragma once
// What the tests of the K-quant decode kernels (gemv_kquants.h) need to bound their f32 rounding.
#include <cmath>
#include <cstdint>
#include <vector>

#include "gguf/ggml_types.h"
#include "gguf/quant_blocks.h"

namespace inferscope::testing_kquants {

// Per element of a row of `k` weights stored as `type` at `row`: |m| of its sub-block, where the
// weight is d·sc·q - m (0 for types without mins). The kernels round the two terms apart, so when
// they cancel the f32 error scales with |m|, not with the weight.
inline std::vector<float> minMagnitudes(GgmlType type, const uint8_t* row, int64_t k) {
    std::vector<float> mins(size_t(k), 0.0f);
    for (int64_t b = 0; b < k / 256; ++b) {
        if (type == GgmlType::Q4_K || type == GgmlType::Q5_K) {
            float dl[8], ml[8];
            quantScaleMinsK4(row + b * (type == GgmlType::Q4_K ? 144 : 176), dl, ml);
            for (int c = 0; c < 256; ++c) mins[size_t(b * 256 + c)] = std::fabs(ml[c / 32]);
        } else if (type == GgmlType::Q2_K) {  // scales[16] (min in the high nibble), qs[64], d, dmin
            const uint8_t* block = row + b * 84;
            const float dmin = fp16ToFp32(uint16_t(block[82] | block[83] << 8));
            for (int c = 0; c < 256; ++c) mins[size_t(b * 256 + c)] = std::fabs(dmin * float(block[c / 16] >> 4));
        }
    }
    return mins;
}

// The 8-bit step of x's 32-element block around each element: max|x| / 127 (quantizeX256).
inline std::vector<float> stepsOf(const float* x, int64_t k) {
    std::vector<float> steps(static_cast<size_t>(k));
    for (int64_t b = 0; b < k; b += 32) {
        float amax = 0;
        for (int64_t c = b; c < b + 32; ++c) amax = std::fmax(amax, std::fabs(x[c]));
        for (int64_t c = b; c < b + 32; ++c) steps[size_t(c)] = amax / 127.0f;
    }
    return steps;
}

}  // namespace inferscope::testing_kquants
