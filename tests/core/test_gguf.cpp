// GGUF reader on the real files shipped with the project.
#include <gtest/gtest.h>

#include "gguf/gguf_file.h"

using namespace inferscope;

namespace {
const std::string kStories = std::string(INFERSCOPE_RESOURCES_DIR) + "/models/stories260K.gguf";
}

TEST(GgufReal, Stories260KHeader) {
    auto f = GgufFile::open(kStories);
    ASSERT_TRUE(f) << f.error().message;
    EXPECT_EQ(f->version(), 3u);
    EXPECT_EQ(f->metadata().size(), 19u);
    EXPECT_EQ(f->tensors().size(), 48u);
    EXPECT_EQ(f->dataOffset(), 14176u);
    EXPECT_EQ(f->alignment(), 32u);
    // Keys in file order: the tokenizer comes before general.architecture.
    EXPECT_EQ(f->metadata()[0].key, "tokenizer.ggml.tokens");
    auto arch = f->getString("general.architecture");
    ASSERT_TRUE(arch && *arch);
    EXPECT_EQ(**arch, "llama");
    auto nLayer = f->getUint("llama.block_count");
    ASSERT_TRUE(nLayer && *nLayer);
    EXPECT_EQ(**nLayer, 5u);
    const GgufTensorInfo* ffnDown = f->findTensor("blk.0.ffn_down.weight");
    ASSERT_NE(ffnDown, nullptr);
    EXPECT_EQ(ffnDown->ne[0], 172u);
    EXPECT_EQ(ffnDown->ne[1], 64u);
    EXPECT_EQ(ffnDown->type(), GgmlType::F32);
    EXPECT_EQ(ffnDown->nBytes, 172u * 64u * 4u);
    // The last tensor ends exactly at the end of the file.
    uint64_t end = 0;
    for (const auto& t : f->tensors()) end = std::max(end, f->dataOffset() + t.offset + t.nBytes);
    EXPECT_EQ(end, f->fileSize());
}

TEST(GgufReal, TypeMismatchIsAnError) {
    auto f = GgufFile::open(kStories);
    ASSERT_TRUE(f);
    auto r = f->getUint("general.architecture");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message, "metadata key general.architecture has type string, expected an integer");
}
