// Our quantizers against ggml's, byte for byte: tests/data/quant/<T>-dense.blocks are
// ggml_quantize_chunk's blocks (no importance matrix, i.e. quantize_row_<t>_ref) of dense-input.f32,
// 32 hostile rows × 256 (scales over 10 decades, zero rows and sub-blocks, an outlier, constant and
// one-signed rows). A K-quant's candidate search amplifies a one-ulp difference into a different
// sub-block, so equality here means the same algorithm in the same float order.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gguf/quant_encode.h"

using namespace inferscope;

namespace {

std::vector<uint8_t> readBytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct EncodeCase {
    const char* name;
    GgmlType type;
};

const EncodeCase kCases[] = {
    {"Q4_0", GgmlType::Q4_0}, {"Q5_0", GgmlType::Q5_0}, {"Q5_1", GgmlType::Q5_1}, {"Q8_0", GgmlType::Q8_0},
    {"Q4_K", GgmlType::Q4_K}, {"Q5_K", GgmlType::Q5_K}, {"Q6_K", GgmlType::Q6_K},
};

class QuantEncode : public ::testing::TestWithParam<EncodeCase> {};

}  // namespace

TEST_P(QuantEncode, DenseSetQuantizesByteIdenticalToGgml) {
    const EncodeCase c = GetParam();
    const std::string dir = std::string(INFERSCOPE_TEST_DATA_DIR) + "/quant/";
    const auto input = readBytes(dir + "dense-input.f32");
    const auto want = readBytes(dir + c.name + "-dense.blocks");
    ASSERT_EQ(input.size(), 32u * 256u * 4u);
    const auto info = *ggmlTypeInfo(uint32_t(c.type));
    ASSERT_EQ(want.size(), 32u * 256u / info.blockSize * info.typeSize);
    ASSERT_TRUE(canQuantizeBlocks(c.type));

    std::vector<float> x(32 * 256);
    std::memcpy(x.data(), input.data(), input.size());
    const size_t rowBytes = 256 / info.blockSize * info.typeSize;
    std::vector<uint8_t> got(want.size(), 0xAA);
    // Row by row, as synth and llama-quantize call it.
    for (size_t r = 0; r < 32; ++r) quantizeBlocks(c.type, x.data() + r * 256, got.data() + r * rowBytes, 256);
    for (size_t r = 0; r < 32; ++r) {
        const uint8_t* g = got.data() + r * rowBytes;
        const uint8_t* w = want.data() + r * rowBytes;
        if (std::memcmp(g, w, rowBytes) == 0) continue;
        size_t i = 0;
        while (g[i] == w[i]) ++i;
        ADD_FAILURE() << c.name << " row " << r << " differs first at byte " << i << " of the row (block " << i / info.typeSize
                      << ", offset " << i % info.typeSize << "): ours " << int(g[i]) << ", ggml " << int(w[i]);
    }
}

INSTANTIATE_TEST_SUITE_P(EveryWrittenType, QuantEncode, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<EncodeCase>& i) { return std::string(i.param.name); });

TEST(QuantEncode, TypesWithoutAQuantizerAreSaid) {
    for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::Q4_1, GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::IQ4_NL})
        EXPECT_FALSE(canQuantizeBlocks(t)) << ggmlTypeName(uint32_t(t));
}
