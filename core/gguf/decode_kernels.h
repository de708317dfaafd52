#pragma once
// One kernel set's block decoders (common/kernel_set.h): quant_blocks.cpp is compiled once per set,
// each in its own namespace, and fills one of these tables; the public dequantizeRow,
// dequantizeBlocks, isQuantizedBlockType and quantScaleMinsK4 (ggml_types.cpp) call the active
// set's. The decoders give the same bits in every set (test_quant_blocks runs each set).

#include <cstddef>
#include <cstdint>

#include "common/kernel_set.h"
#include "gguf/ggml_types.h"

namespace inferscope {

struct DecodeKernels {
    void (*dequantizeRow)(GgmlType type, const void* src, float* dst, size_t n);
    void (*dequantizeBlocks)(GgmlType type, const uint8_t* src, float* dst, size_t nBlocks);
    bool (*isQuantizedBlockType)(GgmlType type);
    void (*quantScaleMinsK4)(const uint8_t* block, float dl[8], float ml[8]);
    // fp32ToFp16Row (ggml_types.h): the KV cache stores every new key and value through it.
    void (*fp32ToFp16Row)(const float* src, uint16_t* dst, size_t n);
    // fp32ToBf16Row: prefill rounds activations to bf16 through it where the CPU multiplies bf16.
    void (*fp32ToBf16Row)(const float* src, uint16_t* dst, size_t n);
    // dequantizeRowBf16 (ggml_types.h): prefill's tiles of quantized weights, where it has a decoder.
    bool (*dequantizeRowBf16)(GgmlType type, const void* src, uint16_t* dst, size_t n);
};

// The table of a built set (kernelSetBuilt(set)).
const DecodeKernels& decodeKernels(KernelSet set);

}  // namespace inferscope

// Each set's table: the C symbols a set's object keeps global (core/CMakeLists.txt).
extern "C" {
extern const inferscope::DecodeKernels inferscope_decode_portable_kernels;
extern const inferscope::DecodeKernels inferscope_decode_avx2_kernels;
extern const inferscope::DecodeKernels inferscope_decode_avx512_kernels;
}
