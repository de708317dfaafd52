// The quantized block decoders against ggml's own output, bit for bit:
//  - the dense set (tests/data/quant, from ../shared/reference/quant/dequant): 32 rows × 256 of
//    hostile inputs (scales over 10 decades, zeros, an outlier, constant rows, zero sub-blocks)
//    quantized by ggml_quantize_chunk, and ggml's dequantization of them;
//  - blk.0.ffn_up.weight of every quantized stories260K-wide file, read through our GGUF reader
//    (../shared; skipped where absent).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "common/kernel_set.h"
#include "gguf/gguf_file.h"
#include "gguf/quant_blocks.h"
#include "shared_data.h"
#include "read_bytes.h"

using namespace inferscope;

using inferscope::testing_files::readBytes;

namespace {

struct TypeCase {
    const char* name;
    GgmlType type;
    const char* ffnUpModel;  // the file whose blk.0.ffn_up.weight is the golden (manifest.json)
};

// Q8_0 and Q6_K: the mix files are already pure in those types.
const TypeCase kCases[] = {
    {"Q4_0", GgmlType::Q4_0, "stories260K-wide-Q4_0-pure.gguf"},
    {"Q4_1", GgmlType::Q4_1, "stories260K-wide-Q4_1-pure.gguf"},
    {"Q5_0", GgmlType::Q5_0, "stories260K-wide-Q5_0-pure.gguf"},
    {"Q5_1", GgmlType::Q5_1, "stories260K-wide-Q5_1-pure.gguf"},
    {"Q8_0", GgmlType::Q8_0, "stories260K-wide-Q8_0.gguf"},
    {"Q2_K", GgmlType::Q2_K, "stories260K-wide-Q2_K-pure.gguf"},
    {"Q3_K", GgmlType::Q3_K, "stories260K-wide-Q3_K-pure.gguf"},
    {"Q4_K", GgmlType::Q4_K, "stories260K-wide-Q4_K-pure.gguf"},
    {"Q5_K", GgmlType::Q5_K, "stories260K-wide-Q5_K-pure.gguf"},
    {"Q6_K", GgmlType::Q6_K, "stories260K-wide-Q6_K.gguf"},
    {"IQ4_NL", GgmlType::IQ4_NL, "stories260K-wide-IQ4_NL-pure.gguf"},
    {"IQ4_XS", GgmlType::IQ4_XS, "stories260K-wide-IQ4_XS-pure.gguf"},
};

class QuantBlocks : public ::testing::TestWithParam<TypeCase> {};

// The first differing float, for a readable failure.
std::string firstDifference(const std::vector<float>& got, const std::vector<uint8_t>& want) {
    for (size_t i = 0; i < got.size(); ++i) {
        float w;
        std::memcpy(&w, want.data() + 4 * i, 4);
        if (std::memcmp(&got[i], &w, 4) != 0)
            return "element " + std::to_string(i) + ": got " + std::to_string(got[i]) + ", ggml " + std::to_string(w);
    }
    return "none";
}

}  // namespace

TEST_P(QuantBlocks, DenseSetDecodesBitIdenticalToGgml) {
    const TypeCase c = GetParam();
    const std::string dir = std::string(INFERSCOPE_TEST_DATA_DIR) + "/quant/";
    const auto blocks = readBytes(dir + c.name + "-dense.blocks");
    const auto want = readBytes(dir + c.name + "-dense-dequant.f32");
    ASSERT_EQ(want.size(), 32u * 256u * 4u) << c.name;
    const auto info = *ggmlTypeInfo(uint32_t(c.type));
    ASSERT_EQ(blocks.size(), 32u * 256u / info.blockSize * info.typeSize);

    ASSERT_TRUE(isQuantizedBlockType(c.type));
    std::vector<float> got(32 * 256);
    // Row by row through the public entry point, as the model reads them.
    const size_t rowBytes = 256 / info.blockSize * info.typeSize;
    for (size_t r = 0; r < 32; ++r) dequantizeRow(c.type, blocks.data() + r * rowBytes, got.data() + r * 256, 256);
    EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size()), 0) << c.name << " first difference: " << firstDifference(got, want);
}

TEST_P(QuantBlocks, FfnUpOfTheModelFileDecodesBitIdenticalToGgml) {
    const TypeCase c = GetParam();
    INFERSCOPE_SHARED_FILE_OR_SKIP(model, std::string("models/quant/") + c.ffnUpModel);
    INFERSCOPE_SHARED_FILE_OR_SKIP(golden, std::string("reference/quant/dequant/") + c.name + "-ffn_up-dequant.f32");
    auto file = GgufFile::open(model);
    ASSERT_TRUE(file) << file.error().message;
    const GgufTensorInfo* t = file->findTensor("blk.0.ffn_up.weight");
    ASSERT_NE(t, nullptr);
    ASSERT_EQ(t->type(), c.type);
    ASSERT_EQ(t->ne[0], 256u);
    ASSERT_EQ(t->ne[1], 256u);
    const auto want = readBytes(golden);
    ASSERT_EQ(want.size(), 256u * 256u * 4u);
    const auto data = file->tensorData(*t);
    std::vector<float> got(256 * 256);
    dequantizeRow(c.type, data.data(), got.data(), got.size());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size()), 0) << c.name << " first difference: " << firstDifference(got, want);
}

// Prefill's one-pass decode to bf16, where this kernel set has it for the type: the bits of
// fp32ToBf16Row over the f32 decoder's output, on the dense set and on blocks whose scale is a NaN,
// an infinity or the smallest subnormal half.
TEST_P(QuantBlocks, DecodeToBf16IsTheF32DecodeRoundedToBf16) {
    const TypeCase c = GetParam();
    const auto info = *ggmlTypeInfo(uint32_t(c.type));
    auto blocks = readBytes(std::string(INFERSCOPE_TEST_DATA_DIR) + "/quant/" + c.name + "-dense.blocks");
    const size_t rowBytes = 256 / info.blockSize * info.typeSize;
    std::vector<uint16_t> probe(256);
    if (!dequantizeRowBf16(c.type, blocks.data(), probe.data(), 256)) GTEST_SKIP() << c.name << ": decoded through f32 in the " << kernelSetName() << " kernel set";
    // The f16 scale d: byte 0 of a 32-element block, of Q4_K, Q5_K and IQ4_XS; Q2_K's at 80, Q3_K's
    // at 108, Q6_K's at 208.
    const size_t dAt = c.type == GgmlType::Q6_K ? 208 : c.type == GgmlType::Q3_K ? 108 : c.type == GgmlType::Q2_K ? 80 : 0;
    const uint16_t specials[] = {0x7e00, 0x7c00, 0xfc00, 0x0001, 0x7bff};  // NaN, ±inf, 2^-24, 65504
    for (size_t i = 0; i < std::size(specials); ++i) std::memcpy(blocks.data() + rowBytes * 31 + i * info.typeSize + dAt, &specials[i], 2);
    for (size_t r = 0; r < 32; ++r) {
        std::vector<float> f32(256);
        std::vector<uint16_t> want(256), got(256, 0xdead);
        dequantizeRow(c.type, blocks.data() + r * rowBytes, f32.data(), 256);
        fp32ToBf16Row(f32.data(), want.data(), 256);
        ASSERT_TRUE(dequantizeRowBf16(c.type, blocks.data() + r * rowBytes, got.data(), 256));
        for (size_t j = 0; j < 256; ++j) ASSERT_EQ(got[j], want[j]) << c.name << " row " << r << " element " << j << " (f32 " << f32[j] << ")";
    }
}

INSTANTIATE_TEST_SUITE_P(EveryType, QuantBlocks, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<TypeCase>& i) { return std::string(i.param.name); });

TEST(QuantBlocks, TypesWeDoNotRunAreNotBlockTypes) {
    for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_1, GgmlType::Q8_K, GgmlType::IQ2_XXS,
                       GgmlType::IQ2_XS, GgmlType::IQ2_S, GgmlType::IQ3_XXS, GgmlType::IQ3_S, GgmlType::IQ1_S, GgmlType::IQ1_M,
                       GgmlType::TQ1_0, GgmlType::TQ2_0, GgmlType::MXFP4})
        EXPECT_FALSE(isQuantizedBlockType(t)) << ggmlTypeName(uint32_t(t));
}

// The F16 KV cache's store, in this kernel set: every value as the scalar fp32ToFp16 rounds it —
// each half, the ties halfway between neighbours (to even) and the floats just either side,
// subnormals, the overflow edge, infinities and NaNs among ordinary values (a group with a NaN).
TEST(QuantBlocks, Fp32ToFp16RowRoundsAsTheScalarConversion) {
    std::vector<float> x;
    for (uint32_t h = 0; h < 0x7c00; ++h) {  // every finite half, both signs
        for (float sign : {1.0f, -1.0f}) {
            const float a = fp16ToFp32(uint16_t(h)), b = fp16ToFp32(uint16_t(h + 1));
            const float mid = a + (b - a) / 2;  // exact in f32
            for (float v : {a, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e9f)}) x.push_back(sign * v);
        }
    }
    for (float v : {65519.0f, 65520.0f, 1e9f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::denorm_min(),
                    1e-30f, 5.96e-8f, 2.98e-8f, 2.99e-8f})
        for (float sign : {1.0f, -1.0f}) x.push_back(sign * v);
    x.push_back(std::numeric_limits<float>::quiet_NaN());
    uint32_t payload = 0x7fc12345u;  // a NaN with payload bits the hardware would keep
    float nan;
    std::memcpy(&nan, &payload, 4);
    x.push_back(nan);
    x.push_back(-nan);
    x.push_back(1.5f);  // not a multiple of 8: the tail
    std::vector<uint16_t> got(x.size());
    fp32ToFp16Row(x.data(), got.data(), x.size());
    size_t wrong = 0;
    for (size_t i = 0; i < x.size(); ++i)
        if (got[i] != fp32ToFp16(x[i]) && wrong++ < 5)
            ADD_FAILURE() << "x = " << x[i] << " (bits " << std::hex << std::bit_cast<uint32_t>(x[i]) << "): got " << got[i] << ", want "
                          << fp32ToFp16(x[i]) << std::dec;
    EXPECT_EQ(wrong, 0u) << "of " << x.size();
    // A group of eight with one NaN: the others still converted.
    std::vector<float> group{1.0f, 2.0f, nan, 0.5f, -3.0f, 65504.0f, 1e-7f, -0.0f};
    std::vector<uint16_t> g(group.size());
    fp32ToFp16Row(group.data(), g.data(), g.size());
    for (size_t i = 0; i < group.size(); ++i) EXPECT_EQ(g[i], fp32ToFp16(group[i])) << i;
}

// Activations rounded to bf16 for a native bf16 prefill, in this kernel set: as the scalar
// fp32ToBf16 (round to nearest even on the bits, quiet NaNs) for ties, their neighbours, the
// largest values (rounding up into infinity), subnormals and NaNs inside a group of eight.
TEST(QuantBlocks, Fp32ToBf16RowRoundsAsTheScalarConversion) {
    std::vector<float> x;
    uint32_t state = 12345;
    for (int i = 0; i < 200000; ++i) {  // random bit patterns, NaNs and infinities included
        state = state * 1664525u + 1013904223u;
        x.push_back(std::bit_cast<float>(state));
    }
    for (uint32_t hi = 0; hi < 0x10000; hi += 7)  // the exact ties and the patterns either side of them
        for (uint32_t lo : {0x7fffu, 0x8000u, 0x8001u, 0x0000u, 0xffffu}) x.push_back(std::bit_cast<float>((hi << 16) | lo));
    x.push_back(std::numeric_limits<float>::max());
    x.push_back(-std::numeric_limits<float>::max());
    x.push_back(std::numeric_limits<float>::denorm_min());
    x.push_back(1.0f);  // the tail
    std::vector<uint16_t> got(x.size());
    fp32ToBf16Row(x.data(), got.data(), x.size());
    size_t wrong = 0;
    for (size_t i = 0; i < x.size(); ++i)
        if (got[i] != fp32ToBf16(x[i]) && wrong++ < 5)
            ADD_FAILURE() << "bits " << std::hex << std::bit_cast<uint32_t>(x[i]) << ": got " << got[i] << ", want " << fp32ToBf16(x[i]) << std::dec;
    EXPECT_EQ(wrong, 0u) << "of " << x.size();
}
