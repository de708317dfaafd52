// Our quantizers against ggml's, byte for byte: tests/data/quant/<T>-dense.blocks are
// ggml_quantize_chunk's blocks (no importance matrix, i.e. quantize_row_<t>_ref) of dense-input.f32,
// 32 hostile rows × 256 (scales over 10 decades, zero rows and sub-blocks, an outlier, constant and
// one-signed rows). A K-quant's candidate search amplifies a one-ulp difference into a different
// sub-block, so equality here means the same algorithm in the same float order.
// Then whole models: ../shared's stories260K-wide files that llama-quantize wrote from the F32
// stories260K-wide.gguf have, tensor for tensor, the type quantMixType picks and the bytes
// quantizeBlocks makes of the F32 tensor (skipped where ../shared is absent).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf/quant_encode.h"
#include "tools/quant_mix.h"
#include "shared_data.h"
#include "read_bytes.h"

using namespace inferscope;

using inferscope::testing_files::readBytes;

namespace {

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

namespace {

struct MixCase {
    const char* file;  // in ../shared/models/quant
    GgmlType base;
    uint32_t fileType;
};

const MixCase kMixes[] = {
    {"stories260K-wide-Q4_0.gguf", GgmlType::Q4_0, 2},     {"stories260K-wide-Q8_0.gguf", GgmlType::Q8_0, 7},
    {"stories260K-wide-Q4_K_M.gguf", GgmlType::Q4_K, 15}, {"stories260K-wide-Q5_K_M.gguf", GgmlType::Q5_K, 17},
    {"stories260K-wide-Q6_K.gguf", GgmlType::Q6_K, 18},
};

class QuantMixOfLlamaQuantize : public ::testing::TestWithParam<MixCase> {};

MatrixRole roleOf(std::string_view name) {
    if (name == "token_embd.weight") return MatrixRole::TokenEmbedding;
    if (name == "output.weight") return MatrixRole::Output;
    if (name.find("attn_v.") != std::string_view::npos) return MatrixRole::AttnV;
    if (name.find("ffn_down.") != std::string_view::npos) return MatrixRole::FfnDown;
    return MatrixRole::Other;
}

int layerOf(std::string_view name) { return name.starts_with("blk.") ? std::stoi(std::string(name.substr(4))) : 0; }

}  // namespace

TEST_P(QuantMixOfLlamaQuantize, EveryTensorHasItsTypeAndItsBytes) {
    const MixCase c = GetParam();
    INFERSCOPE_SHARED_FILE_OR_SKIP(f32Path, "models/quant/stories260K-wide.gguf");
    INFERSCOPE_SHARED_FILE_OR_SKIP(quantPath, std::string("models/quant/") + c.file);
    auto f32 = GgufFile::open(f32Path);
    auto quant = GgufFile::open(quantPath);
    ASSERT_TRUE(f32 && quant);
    ASSERT_NE(quant->find("general.file_type"), nullptr);
    EXPECT_EQ(quant->find("general.file_type")->u, c.fileType);
    EXPECT_EQ(quantMixFileType(c.base), c.fileType);
    const int nLayer = 5;
    size_t quantized = 0;
    for (const auto& q : quant->tensors()) {
        SCOPED_TRACE(std::string(q.name));
        const GgufTensorInfo* src = f32->findTensor(q.name);
        ASSERT_NE(src, nullptr);
        ASSERT_EQ(src->type(), GgmlType::F32);
        if (q.nDims == 1) {  // norms stay F32
            EXPECT_EQ(q.type(), GgmlType::F32);
            continue;
        }
        EXPECT_EQ(q.type(), quantMixType(c.base, roleOf(q.name), layerOf(q.name), nLayer, q.ne[0]));
        if (!canQuantizeBlocks(q.type())) continue;
        const auto in = f32->tensorData(*src);
        const auto want = quant->tensorData(q);
        std::vector<float> x(in.size() / 4);
        std::memcpy(x.data(), in.data(), in.size());
        std::vector<uint8_t> got(want.size());
        quantizeBlocks(q.type(), x.data(), got.data(), x.size());
        EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size()), 0) << ggmlTypeName(uint32_t(q.type()));
        ++quantized;
    }
    EXPECT_EQ(quantized, 37u);  // every matrix: 7 per layer, the embedding and the LM head
}

INSTANTIATE_TEST_SUITE_P(EveryMix, QuantMixOfLlamaQuantize, ::testing::ValuesIn(kMixes),
                         [](const ::testing::TestParamInfo<MixCase>& i) {
                             std::string n = i.param.file;
                             return n.substr(17, n.size() - 17 - 5);  // "stories260K-wide-" … ".gguf"
                         });

// Rows that are not whole blocks, as in the 64 × 172 stories260k shape: llama-quantize's fallbacks.
TEST(QuantMix, RowsThatAreNotWholeBlocksFallBack) {
    using enum MatrixRole;
    // Q4_K_M, layer 2 of 5 is a more-bits layer (Q6_K), layer 1 is not.
    EXPECT_EQ(quantMixType(GgmlType::Q4_K, Other, 1, 5, 64), GgmlType::Q5_0);
    EXPECT_EQ(quantMixType(GgmlType::Q4_K, AttnV, 2, 5, 64), GgmlType::Q8_0);
    EXPECT_EQ(quantMixType(GgmlType::Q4_K, AttnV, 1, 5, 64), GgmlType::Q5_0);
    EXPECT_EQ(quantMixType(GgmlType::Q4_K, FfnDown, 2, 5, 172), GgmlType::F16);
    EXPECT_EQ(quantMixType(GgmlType::Q4_K, Output, 5, 5, 64), GgmlType::Q8_0);
    EXPECT_EQ(quantMixType(GgmlType::Q5_K, Other, 0, 5, 64), GgmlType::Q5_1);
    EXPECT_EQ(quantMixType(GgmlType::Q6_K, TokenEmbedding, 0, 5, 64), GgmlType::Q8_0);
    EXPECT_EQ(quantMixType(GgmlType::Q4_0, Output, 5, 5, 64), GgmlType::Q8_0);
    EXPECT_EQ(quantMixType(GgmlType::Q4_0, FfnDown, 0, 5, 172), GgmlType::F16);
    EXPECT_EQ(quantMixType(GgmlType::Q8_0, FfnDown, 0, 5, 172), GgmlType::F32);  // synth's Q8_0 as before
    // TinyLlama's 22 layers: more bits on 0-1 (first eighth), 19-21 (last), and 4, 7, 10, 13, 16.
    std::string more;
    for (int l = 0; l < 22; ++l)
        if (quantMixType(GgmlType::Q4_K, FfnDown, l, 22, 5632) == GgmlType::Q6_K) more += std::to_string(l) + " ";
    EXPECT_EQ(more, "0 1 4 7 10 13 16 19 20 21 ");
}
