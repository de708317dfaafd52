// ggml_types: fp16/bf16 conversions (exhaustive where the domain allows), rounding to nearest
// even, dequantization of hand-made rows, and the type table's geometry.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "gguf/ggml_types.h"

using namespace inferscope;

namespace {

float fromBits(uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

uint32_t bitsOf(float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    return bits;
}

// The value of an fp16 bit pattern from its definition, computed in double (exact).
double fp16Reference(uint16_t h) {
    const int sign = (h & 0x8000) ? -1 : 1;
    const int exp = (h >> 10) & 0x1f;
    const int mant = h & 0x3ff;
    if (exp == 0) return sign * std::ldexp(double(mant), -24);
    if (exp == 31) return mant ? std::numeric_limits<double>::quiet_NaN() : sign * INFINITY;
    return sign * std::ldexp(double(1024 + mant), exp - 25);
}

}  // namespace

TEST(Fp16, EveryValueConvertsExactlyAndRoundTrips) {
    for (uint32_t h = 0; h < 65536; ++h) {
        const float f = fp16ToFp32(uint16_t(h));
        const double ref = fp16Reference(uint16_t(h));
        if (std::isnan(ref)) {
            ASSERT_TRUE(std::isnan(f)) << std::hex << h;
            const uint16_t back = fp32ToFp16(f);
            ASSERT_EQ(back & 0x7c00, 0x7c00) << std::hex << h;  // still a NaN, same sign
            ASSERT_NE(back & 0x03ff, 0) << std::hex << h;
            ASSERT_EQ(back & 0x8000, h & 0x8000) << std::hex << h;
            continue;
        }
        ASSERT_EQ(double(f), ref) << std::hex << h;
        ASSERT_EQ(std::signbit(f), bool(h & 0x8000)) << std::hex << h;  // -0 stays -0
        ASSERT_EQ(fp32ToFp16(f), h) << std::hex << h;
    }
}

TEST(Fp16, RoundsToNearestEven) {
    // Normal range near 1 (ulp 2^-10): ties go to the even mantissa.
    EXPECT_EQ(fp32ToFp16(1.0f + 0x1p-11f), 0x3c00);             // tie between 0x3c00 and 0x3c01 -> even
    EXPECT_EQ(fp32ToFp16(1.0f + 3 * 0x1p-11f), 0x3c02);         // tie between 0x3c01 and 0x3c02 -> even
    EXPECT_EQ(fp32ToFp16(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);  // just above the tie
    EXPECT_EQ(fp32ToFp16(1.0f + 0x1p-11f - 0x1p-20f), 0x3c00);  // just below
    EXPECT_EQ(fp32ToFp16(-(1.0f + 3 * 0x1p-11f)), 0xbc02);
    // Mantissa carry into the exponent: 2 - 2^-11 is a tie between 0x3bff and 0x4000.
    EXPECT_EQ(fp32ToFp16(2.0f - 0x1p-11f), 0x4000);
    // Overflow: 65504 is the largest half; 65520 is the tie with "65536" and rounds to infinity.
    EXPECT_EQ(fp32ToFp16(65504.0f), 0x7bff);
    EXPECT_EQ(fp32ToFp16(65519.996f), 0x7bff);
    EXPECT_EQ(fp32ToFp16(65520.0f), 0x7c00);
    EXPECT_EQ(fp32ToFp16(-1e9f), 0xfc00);
    EXPECT_EQ(fp32ToFp16(INFINITY), 0x7c00);
    // Subnormal halves (ulp 2^-24).
    EXPECT_EQ(fp32ToFp16(0x1p-24f), 0x0001);
    EXPECT_EQ(fp32ToFp16(0x1p-25f), 0x0000);              // tie between 0 and 1 -> even
    EXPECT_EQ(fp32ToFp16(0x1p-25f + 0x1p-40f), 0x0001);
    EXPECT_EQ(fp32ToFp16(3 * 0x1p-25f), 0x0002);          // tie between 1 and 2 -> even
    EXPECT_EQ(fp32ToFp16(0x1p-14f - 0x1p-25f), 0x0400);   // largest subnormal + half ulp -> smallest normal
    EXPECT_EQ(fp32ToFp16(-0x1p-30f), 0x8000);             // underflows to -0
    EXPECT_EQ(fp32ToFp16(fromBits(1)), 0x0000);           // fp32 subnormal
}

TEST(Fp16, AgreesWithTheCompilersHalfOnSampledFloats) {
    // GCC's _Float16 conversion (round to nearest even) as an independent oracle, over every
    // 4099th fp32 bit pattern (about a million, all exponents and signs).
    for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 4099) {
        const float f = fromBits(uint32_t(bits));
        if (std::isnan(f)) continue;
        const _Float16 h = _Float16(f);
        uint16_t expected;
        std::memcpy(&expected, &h, 2);
        ASSERT_EQ(fp32ToFp16(f), expected) << std::hex << bits;
    }
}

TEST(Bf16, EveryValueRoundTrips) {
    for (uint32_t b = 0; b < 65536; ++b) {
        const float f = bf16ToFp32(uint16_t(b));
        ASSERT_EQ(bitsOf(f), b << 16);  // bf16 is the top half of an fp32
        const uint16_t back = fp32ToBf16(f);
        if (std::isnan(f)) {
            ASSERT_TRUE(std::isnan(bf16ToFp32(back))) << std::hex << b;  // NaN stays NaN (made quiet)
            ASSERT_EQ(back & 0x8000, b & 0x8000);
        } else {
            ASSERT_EQ(back, b) << std::hex << b;
        }
    }
}

TEST(Bf16, RoundsToNearestEven) {
    EXPECT_EQ(fp32ToBf16(1.0f), 0x3f80);
    EXPECT_EQ(fp32ToBf16(1.0f + 0x1p-8f), 0x3f80);               // tie between 0x3f80 and 0x3f81 -> even
    EXPECT_EQ(fp32ToBf16(1.0f + 3 * 0x1p-8f), 0x3f82);           // tie between 0x3f81 and 0x3f82 -> even
    EXPECT_EQ(fp32ToBf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);    // above the tie
    EXPECT_EQ(fp32ToBf16(-(1.0f + 3 * 0x1p-8f)), 0xbf82);
    EXPECT_EQ(fp32ToBf16(std::numeric_limits<float>::max()), 0x7f80);  // rounds up to infinity
    EXPECT_EQ(fp32ToBf16(-INFINITY), 0xff80);
    EXPECT_EQ(fp32ToBf16(fromBits(0x7f800001)), 0x7fc0);         // signalling NaN -> quiet NaN, not inf
    EXPECT_EQ(fp32ToBf16(fromBits(0x00010000)), 0x0001);         // subnormal kept
    float src[3] = {1.0f, -2.0f, 0.5f};
    uint16_t dst[3];
    fp32ToBf16Row(src, dst, 3);
    EXPECT_EQ(dst[0], 0x3f80);
    EXPECT_EQ(dst[1], 0xc000);
    EXPECT_EQ(dst[2], 0x3f00);
}

TEST(Dequantize, Q8_0HandMadeBlocks) {
    // Two blocks: scale 0.5 (fp16 0x3800) with quants -128..-97, scale -0.25 (0xb400) with 0..31 and
    // the extremes -128/127 at the ends.
    std::vector<uint8_t> row(2 * 34);
    row[0] = 0x00, row[1] = 0x38;
    for (int j = 0; j < 32; ++j) row[2 + j] = uint8_t(int8_t(-128 + j));
    row[34] = 0x00, row[35] = 0xb4;
    for (int j = 0; j < 32; ++j) row[36 + j] = uint8_t(int8_t(j));
    row[36] = uint8_t(int8_t(-128));
    row[36 + 31] = 127;
    std::vector<float> out(64, NAN);
    dequantizeRow(GgmlType::Q8_0, row.data(), out.data(), 64);
    for (int j = 0; j < 32; ++j) EXPECT_EQ(out[j], 0.5f * float(-128 + j)) << j;
    EXPECT_EQ(out[32], 32.0f);    // -0.25 * -128
    EXPECT_EQ(out[33], -0.25f);   // -0.25 * 1
    EXPECT_EQ(out[63], -31.75f);  // -0.25 * 127
}

TEST(Dequantize, F16Bf16AndF32Rows) {
    const uint16_t halves[4] = {0x3c00, 0xc000, 0x0001, 0x7bff};
    float out[4];
    dequantizeRow(GgmlType::F16, halves, out, 4);
    EXPECT_EQ(out[0], 1.0f);
    EXPECT_EQ(out[1], -2.0f);
    EXPECT_EQ(out[2], 0x1p-24f);
    EXPECT_EQ(out[3], 65504.0f);
    const uint16_t brains[2] = {0x3fc0, 0xc2f7};
    dequantizeRow(GgmlType::BF16, brains, out, 2);
    EXPECT_EQ(out[0], 1.5f);
    EXPECT_EQ(out[1], -123.5f);
    const float floats[2] = {-0.0f, 3.25f};
    dequantizeRow(GgmlType::F32, floats, out, 2);
    EXPECT_TRUE(std::signbit(out[0]));
    EXPECT_EQ(out[1], 3.25f);
}

TEST(GgmlTypes, GeometryAndTensorBytes) {
    EXPECT_EQ(ggmlTypeInfo(8)->name, "Q8_0");
    EXPECT_EQ(ggmlTypeInfo(8)->blockSize, 32u);
    EXPECT_EQ(ggmlTypeInfo(8)->typeSize, 34u);
    EXPECT_EQ(ggmlTypeInfo(30)->name, "BF16");
    EXPECT_FALSE(ggmlTypeInfo(4));   // Q4_2, retired
    EXPECT_FALSE(ggmlTypeInfo(99));
    EXPECT_EQ(ggmlTypeName(12), "Q4_K");
    EXPECT_EQ(ggmlTypeName(99), "unknown");
    EXPECT_TRUE(isSupportedWeightType(GgmlType::Q8_0));
    EXPECT_TRUE(isSupportedWeightType(GgmlType::Q4_K));
    EXPECT_FALSE(isSupportedWeightType(GgmlType::IQ2_XXS));
    EXPECT_FALSE(isSupportedWeightType(GgmlType::Q8_1));

    const uint64_t q8[] = {64, 3}, odd[] = {33}, huge[] = {uint64_t(1) << 40, uint64_t(1) << 30};
    EXPECT_EQ(ggmlTensorBytes(8, q8), 6u * 34u);
    EXPECT_EQ(ggmlTensorBytes(8, odd), std::nullopt);   // not a whole number of blocks
    EXPECT_EQ(ggmlTensorBytes(0, huge), std::nullopt);  // 2^70 elements
    EXPECT_EQ(ggmlTensorBytes(99, q8), std::nullopt);
}
