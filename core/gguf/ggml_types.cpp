#include "gguf/ggml_types.h"

#include "gguf/decode_kernels.h"
#include "gguf/quant_blocks.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

namespace inferscope {
namespace {

struct TypeRow {
    uint32_t id;
    GgmlTypeInfo info;
};

// Block geometry from ggml-common.h (QK_K = 256 for the K and IQ families).
constexpr std::array kTypes = {
    TypeRow{0, {"F32", 1, 4}},        TypeRow{1, {"F16", 1, 2}},
    TypeRow{2, {"Q4_0", 32, 18}},     TypeRow{3, {"Q4_1", 32, 20}},
    TypeRow{6, {"Q5_0", 32, 22}},     TypeRow{7, {"Q5_1", 32, 24}},
    TypeRow{8, {"Q8_0", 32, 34}},     TypeRow{9, {"Q8_1", 32, 36}},
    TypeRow{10, {"Q2_K", 256, 84}},   TypeRow{11, {"Q3_K", 256, 110}},
    TypeRow{12, {"Q4_K", 256, 144}},  TypeRow{13, {"Q5_K", 256, 176}},
    TypeRow{14, {"Q6_K", 256, 210}},  TypeRow{15, {"Q8_K", 256, 292}},
    TypeRow{16, {"IQ2_XXS", 256, 66}}, TypeRow{17, {"IQ2_XS", 256, 74}},
    TypeRow{18, {"IQ3_XXS", 256, 98}}, TypeRow{19, {"IQ1_S", 256, 50}},
    TypeRow{20, {"IQ4_NL", 32, 18}},  TypeRow{21, {"IQ3_S", 256, 110}},
    TypeRow{22, {"IQ2_S", 256, 82}},  TypeRow{23, {"IQ4_XS", 256, 136}},
    TypeRow{24, {"I8", 1, 1}},        TypeRow{25, {"I16", 1, 2}},
    TypeRow{26, {"I32", 1, 4}},       TypeRow{27, {"I64", 1, 8}},
    TypeRow{28, {"F64", 1, 8}},       TypeRow{29, {"IQ1_M", 256, 56}},
    TypeRow{30, {"BF16", 1, 2}},      TypeRow{34, {"TQ1_0", 256, 54}},
    TypeRow{35, {"TQ2_0", 256, 66}},  TypeRow{39, {"MXFP4", 32, 17}},
};

}  // namespace

std::optional<GgmlTypeInfo> ggmlTypeInfo(uint32_t typeId) {
    for (const auto& row : kTypes)
        if (row.id == typeId) return row.info;
    return std::nullopt;
}

std::string_view ggmlTypeName(uint32_t typeId) {
    auto info = ggmlTypeInfo(typeId);
    return info ? info->name : std::string_view{"unknown"};
}

std::optional<uint64_t> ggmlTensorBytes(uint32_t typeId, std::span<const uint64_t> ne) {
    const auto info = ggmlTypeInfo(typeId);
    if (!info || ne.empty() || ne[0] % info->blockSize != 0) return std::nullopt;
    uint64_t elements = 1;
    for (uint64_t n : ne)
        if (__builtin_mul_overflow(elements, n, &elements)) return std::nullopt;
    uint64_t bytes;
    if (__builtin_mul_overflow(elements / info->blockSize, uint64_t(info->typeSize), &bytes)) return std::nullopt;
    return bytes;
}

bool isSupportedWeightType(GgmlType type) {
    return type == GgmlType::F32 || type == GgmlType::F16 || type == GgmlType::BF16 || isQuantizedBlockType(type);
}

float fp16ToFp32(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000) << 16;
    const uint32_t exp = (h >> 10) & 0x1f;
    const uint32_t mant = h & 0x3ff;
    uint32_t bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign;  // signed zero
        } else {          // subnormal: value = mant * 2^-24
            float f = std::ldexp(float(mant), -24);
            std::memcpy(&bits, &f, 4);
            bits |= sign;
        }
    } else if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13);  // inf / nan
    } else {
        bits = sign | ((exp + 112) << 23) | (mant << 13);
    }
    float out;
    std::memcpy(&out, &bits, 4);
    return out;
}

uint16_t fp32ToFp16(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    const uint16_t sign = uint16_t((x >> 16) & 0x8000);
    const uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u)  // inf or nan
        return sign | 0x7c00 | (absx > 0x7f800000u ? 0x200 : 0);
    if (absx >= 0x477ff000u) return sign | 0x7c00;  // rounds to >= 65520: overflow to inf
    if (absx < 0x38800000u) {                        // below the smallest normal half (2^-14)
        // subnormal half: value / 2^-24, rounded to nearest even
        float a;
        std::memcpy(&a, &absx, 4);
        return sign | uint16_t(std::nearbyint(a * 16777216.0f));
    }
    uint32_t mant = absx & 0x7fffff;
    uint32_t exp = (absx >> 23) - 112;
    uint32_t h = (exp << 10) | (mant >> 13);
    const uint32_t rest = mant & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;  // carries into the exponent correctly
    return sign | uint16_t(h);
}

uint16_t fp32ToBf16(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40);  // quiet NaN
    x += 0x7fff + ((x >> 16) & 1);
    return uint16_t(x >> 16);
}

// The decoders run in the active kernel set (decode_kernels.h).
void dequantizeRow(GgmlType type, const void* src, float* dst, size_t n) {
    decodeKernels(activeKernelSet()).dequantizeRow(type, src, dst, n);
}

void dequantizeBlocks(GgmlType type, const uint8_t* src, float* dst, size_t nBlocks) {
    decodeKernels(activeKernelSet()).dequantizeBlocks(type, src, dst, nBlocks);
}

bool isQuantizedBlockType(GgmlType type) { return decodeKernels(activeKernelSet()).isQuantizedBlockType(type); }

void quantScaleMinsK4(const uint8_t* block, float dl[8], float ml[8]) {
    decodeKernels(activeKernelSet()).quantScaleMinsK4(block, dl, ml);
}

const DecodeKernels& decodeKernels(KernelSet set) {
    static const DecodeKernels* const tables[kKernelSetCount] = {
        &inferscope_decode_portable_kernels,
#if defined(INFERSCOPE_X86_KERNEL_SETS)
        &inferscope_decode_avx2_kernels,
        &inferscope_decode_avx512_kernels,
#endif
    };
    return *tables[int(set)];
}

void fp32ToFp16Row(const float* src, uint16_t* dst, size_t n) { decodeKernels(activeKernelSet()).fp32ToFp16Row(src, dst, n); }

void quantizeRowQ8_0(const float* src, void* dst, size_t n) {
    auto* out = static_cast<uint8_t*>(dst);
    for (size_t b = 0; b < n / kQ8_0Block; ++b) {
        const float* x = src + b * kQ8_0Block;
        float amax = 0.0f;
        for (size_t j = 0; j < kQ8_0Block; ++j) amax = std::max(amax, std::fabs(x[j]));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        const uint16_t d16 = fp32ToFp16(d);
        std::memcpy(out + b * 34, &d16, 2);
        for (size_t j = 0; j < kQ8_0Block; ++j) out[b * 34 + 2 + j] = uint8_t(int8_t(std::lround(x[j] * id)));
    }
}

void fp32ToBf16Row(const float* src, uint16_t* dst, size_t n) { decodeKernels(activeKernelSet()).fp32ToBf16Row(src, dst, n); }

bool dequantizeRowBf16(GgmlType type, const void* src, uint16_t* dst, size_t n) {
    return decodeKernels(activeKernelSet()).dequantizeRowBf16(type, src, dst, n);
}

}  // namespace inferscope
