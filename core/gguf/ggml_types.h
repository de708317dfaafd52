#pragma once
// The tensor element types a GGUF file can name (ggml's numbering), their storage geometry,
// and conversions of the types we compute with to f32 / bf16.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace inferscope {

// ggml's type ids as written in GGUF tensor infos. Ids 4, 5 and 31..33 were retired upstream.
enum class GgmlType : uint32_t {
    F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
    Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
    IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22,
    IQ4_XS = 23, I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30,
    TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39,
};

// Storage geometry: `blockSize` elements are stored in `typeSize` bytes.
struct GgmlTypeInfo {
    std::string_view name;
    uint32_t blockSize;
    uint32_t typeSize;
};

// Geometry of a known type id, or nullopt for an id ggml never defined.
std::optional<GgmlTypeInfo> ggmlTypeInfo(uint32_t typeId);
std::string_view ggmlTypeName(uint32_t typeId);  // "type 99" style for unknown ids is the caller's

// Bytes of a tensor of this type and shape (ne[0] innermost); nullopt for an unknown type id, a
// row length ne[0] that is not a multiple of the block size, or a size that overflows u64.
std::optional<uint64_t> ggmlTensorBytes(uint32_t typeId, std::span<const uint64_t> ne);

// True for the types the model loader computes with: F32, F16, BF16 and the quantized block types
// of quant_blocks.h (Q4_0 … Q6_K, IQ4_NL, IQ4_XS).
bool isSupportedWeightType(GgmlType type);

// ---- scalar conversions -------------------------------------------------------------------------
float fp16ToFp32(uint16_t h);
uint16_t fp32ToFp16(float f);  // round to nearest even
inline float bf16ToFp32(uint16_t b) {
    uint32_t bits = uint32_t(b) << 16;
    float f;
    __builtin_memcpy(&f, &bits, 4);
    return f;
}
uint16_t fp32ToBf16(float f);  // round to nearest even, NaN preserved

// ---- row conversions ------------------------------------------------------------------------------
// Converts `n` elements of a row stored as `type` at `src` (unaligned is fine) to f32.
// `n` must be a multiple of the type's block size; the type must satisfy isSupportedWeightType.
void dequantizeRow(GgmlType type, const void* src, float* dst, size_t n);
void fp32ToBf16Row(const float* src, uint16_t* dst, size_t n);
// fp32ToBf16Row(dequantizeRow(...)) in one pass, bit for bit, where the active kernel set decodes
// `type` straight to bf16 (every block type, on a CPU with AVX512-BF16); false, with dst untouched,
// where it does not.
bool dequantizeRowBf16(GgmlType type, const void* src, uint16_t* dst, size_t n);
void fp32ToFp16Row(const float* src, uint16_t* dst, size_t n);
// Quantizes n floats (a multiple of 32) to Q8_0 blocks at dst (n / 32 × 34 bytes), as ggml does:
// per block d = max|x| / 127 (stored as f16), q = round(x / d).
void quantizeRowQ8_0(const float* src, void* dst, size_t n);

// Q8_0 block: one f16 scale and 32 signed 8-bit quants (34 bytes), value = d * q.
inline constexpr size_t kQ8_0Block = 32;

}  // namespace inferscope
