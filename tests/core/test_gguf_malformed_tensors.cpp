// Hostile tensor infos and tensor data, and truncation at every byte: each gets exactly one clear
// error naming the defect and the tensor. Headers and metadata: test_gguf_malformed.cpp.
#include "test_gguf_helpers.h"

using namespace inferscope;
using namespace inferscope::testing_gguf;

namespace {

const std::string kVocab = std::string(INFERSCOPE_TEST_DATA_DIR) + "/ggml-vocab-llama-spm.gguf";

constexpr uint32_t kF32 = uint32_t(GgmlType::F32);
constexpr uint32_t kQ8_0 = uint32_t(GgmlType::Q8_0);

// A file whose one tensor info is written as given, with `dataBytes` bytes of data.
std::vector<uint8_t> oneTensor(std::vector<uint64_t> ne, uint32_t typeId, uint64_t dataBytes = 64,
                               std::optional<uint64_t> offset = std::nullopt) {
    GgufWriter w;
    w.addRawTensor(GgufTensorSpec{"blk.0.attn_q.weight", std::move(ne), typeId, 0, offset},
                   patternBytes(size_t(dataBytes), 1));
    return imageOf(w);
}

}  // namespace

// ---- dimensions and sizes ------------------------------------------------------------------------

TEST(GgufMalformedTensors, DimensionCount) {
    EXPECT_TRUE(failsWith(oneTensor({}, kF32), ErrorKind::BadFile,
                          "tensor blk.0.attn_q.weight has 0 dimensions (1 to 4 allowed)"));
    EXPECT_TRUE(failsWith(oneTensor({1, 1, 1, 1, 16}, kF32), ErrorKind::BadFile,
                          "tensor blk.0.attn_q.weight has 5 dimensions (1 to 4 allowed)"));
}

TEST(GgufMalformedTensors, ZeroAndAbsurdDimensions) {
    EXPECT_TRUE(failsWith(oneTensor({16, 0}, kF32), ErrorKind::BadFile,
                          "tensor blk.0.attn_q.weight has absurd dimension 1 = 0"));
    EXPECT_TRUE(failsWith(oneTensor({uint64_t(1) << 41}, kF32), ErrorKind::BadFile,
                          "tensor blk.0.attn_q.weight has absurd dimension 0 = 2199023255552"));
}

TEST(GgufMalformedTensors, ElementCountAndByteSizeOverflow) {
    EXPECT_TRUE(failsWith(oneTensor({uint64_t(1) << 40, uint64_t(1) << 40}, kF32), ErrorKind::BadFile,
                          "tensor blk.0.attn_q.weight: element count overflows"));
    // 2^63 elements fit in u64; 2^63 × 4 bytes do not.
    EXPECT_TRUE(failsWith(oneTensor({uint64_t(1) << 40, uint64_t(1) << 23}, kF32), ErrorKind::BadFile,
                          "tensor blk.0.attn_q.weight: byte size overflows"));
}

TEST(GgufMalformedTensors, UnknownTypeIds) {
    EXPECT_TRUE(failsWith(oneTensor({16}, 99), ErrorKind::BadFile, "tensor blk.0.attn_q.weight has unknown type id 99"));
    EXPECT_TRUE(failsWith(oneTensor({16}, 4), ErrorKind::BadFile, "tensor blk.0.attn_q.weight has unknown type id 4"));
}

TEST(GgufMalformedTensors, RowNotAWholeNumberOfBlocks) {
    EXPECT_TRUE(failsWith(oneTensor({33, 2}, kQ8_0, 68), ErrorKind::BadFile,
                          "tensor blk.0.attn_q.weight: row length 33 is not a multiple of the Q8_0 block size 32"));
}

TEST(GgufMalformedTensors, AbsurdNameLength) {
    GgufRawBuilder b;
    b.header(3, 1, 0).u64(2000).text(std::string(2000, 'x'));
    EXPECT_TRUE(failsWith(b.data(), ErrorKind::BadFile, "name of tensor #0 at byte 24 has absurd length 2000 (limit 1024)"));
}

// ---- offsets -------------------------------------------------------------------------------------

TEST(GgufMalformedTensors, OffsetNotAligned) {
    EXPECT_TRUE(failsWith(oneTensor({16}, kF32, 64, 16), ErrorKind::BadFile,
                          "tensor blk.0.attn_q.weight: offset 16 is not a multiple of the alignment 32"));
    GgufWriter w;
    w.add("general.alignment", GgufMetaValue::u32(64));
    w.addRawTensor(GgufTensorSpec{"t", {8}, kF32, 0, 96}, patternBytes(32, 1));
    EXPECT_TRUE(failsWith(imageOf(w), ErrorKind::BadFile, "tensor t: offset 96 is not a multiple of the alignment 64"));
}

TEST(GgufMalformedTensors, OffsetPastTheEnd) {
    GgufWriter w;
    w.addRawTensor(GgufTensorSpec{"output.weight", {16}, kF32, 0, uint64_t(1) << 20}, patternBytes(64, 1));
    const GgufLayout lay = w.layout();
    EXPECT_TRUE(failsWith(imageOf(w), ErrorKind::BadFile,
                          fmt::format("truncated: tensor output.weight ends at byte {}, file has {}",
                                      lay.dataOffset + (1 << 20) + 64, lay.fileBytes)));
    // An end beyond 2^64 is said so rather than wrapped around.
    GgufWriter far;
    far.addRawTensor(GgufTensorSpec{"output.weight", {16}, kF32, 0, ~uint64_t(31)}, patternBytes(64, 1));
    EXPECT_TRUE(failsWith(imageOf(far), ErrorKind::BadFile,
                          fmt::format("truncated: tensor output.weight ends at byte beyond 2^64, file has {}",
                                      far.layout().fileBytes)));
}

TEST(GgufMalformedTensors, OverlappingTensors) {
    GgufWriter same;  // b declared at a's offset
    same.addTensor("a", {16}, GgmlType::F32, patternBytes(64, 1));
    same.addRawTensor(GgufTensorSpec{"b", {16}, kF32, 0, 0}, patternBytes(64, 2));
    EXPECT_TRUE(failsWith(imageOf(same), ErrorKind::BadFile, "tensors a and b overlap"));
    GgufWriter partial;  // b starts inside a, listed first
    partial.addRawTensor(GgufTensorSpec{"b", {16}, kF32, 0, 32}, patternBytes(64, 2));
    partial.addRawTensor(GgufTensorSpec{"a", {16}, kF32, 0, 0}, patternBytes(64, 1));
    partial.addTensor("c", {16}, GgmlType::F32, patternBytes(64, 3));
    EXPECT_TRUE(failsWith(imageOf(partial), ErrorKind::BadFile, "tensors a and b overlap"));
}

// With many tensors at one offset the message names the first two in file order, every time.
TEST(GgufMalformedTensors, OverlapMessageIsDeterministic) {
    GgufWriter w;
    for (int k = 0; k < 40; ++k)
        w.addRawTensor(GgufTensorSpec{fmt::format("t{}", k), {8}, kF32, 0, 0}, patternBytes(32, uint8_t(k)));
    EXPECT_TRUE(failsWith(imageOf(w), ErrorKind::BadFile, "tensors t0 and t1 overlap"));
}

TEST(GgufMalformedTensors, DuplicateTensorName) {
    GgufWriter w = smallModel();
    w.addTensor("attn_norm.weight", {8}, GgmlType::F32, patternBytes(32, 9));
    EXPECT_TRUE(failsWith(imageOf(w), ErrorKind::BadFile, "tensor attn_norm.weight appears twice"));
}

// ---- truncation ----------------------------------------------------------------------------------

// Every proper prefix of a valid model fails cleanly: inside the header with a "truncated:" message
// that gives the prefix's size, past the header naming the first tensor that no longer fits.
TEST(GgufMalformedTensors, TruncatedAtEveryByte) {
    for (uint32_t version : {2u, 3u}) {
        const GgufWriter w = smallModel(version);
        const GgufLayout lay = w.layout();
        const auto image = imageOf(w);
        ASSERT_TRUE(parseBytes(image));
        const char* names[] = {"token_embd.weight", "attn_norm.weight", "output.weight"};
        const uint64_t sizes[] = {68, 48, 128};
        for (uint64_t n = 0; n < image.size(); ++n) {
            auto f = parseBytes(std::vector<uint8_t>(image.begin(), image.begin() + n));
            ASSERT_FALSE(f) << "prefix of " << n << " bytes parsed";
            const std::string& msg = f.error().message;
            ASSERT_EQ(f.error().kind, ErrorKind::BadFile) << msg;
            if (n < lay.headerBytes) {
                ASSERT_TRUE(msg.starts_with("truncated: ")) << n << ": " << msg;
                ASSERT_TRUE(msg.ends_with(fmt::format(", file has {}", n))) << n << ": " << msg;
                continue;
            }
            size_t k = 0;
            while (lay.dataOffset + lay.offsets[k] + sizes[k] <= n) ++k;
            ASSERT_EQ(msg, fmt::format("truncated: tensor {} ends at byte {}, file has {}", names[k],
                                       lay.dataOffset + lay.offsets[k] + sizes[k], n));
        }
    }
}

// Any corrupted header byte gives either a clean error or a file whose tensors are consistent
// (inside the file, sized by their type and shape, not overlapping): never a crash (run under
// ASan/UBSan to see reads past the end).
TEST(GgufMalformedTensors, CorruptedHeaderBytesFailCleanlyOrLoadConsistently) {
    const GgufWriter w = smallModel();
    const auto image = imageOf(w);
    const uint64_t headerBytes = w.layout().headerBytes;
    auto check = [](const std::vector<uint8_t>& bytes, const std::string& what) {
        auto f = parseBytes(bytes);
        if (!f) {
            ASSERT_TRUE(f.error().kind == ErrorKind::BadFile || f.error().kind == ErrorKind::Unsupported) << what;
            ASSERT_FALSE(f.error().message.empty()) << what;
            return;
        }
        std::vector<std::pair<uint64_t, uint64_t>> ranges;
        for (const auto& t : f->tensors()) {
            const std::span<const uint64_t> ne(t.ne.data(), t.nDims);
            ASSERT_EQ(ggmlTensorBytes(t.typeId, ne), t.nBytes) << what << " " << t.name;
            ASSERT_LE(f->dataOffset() + t.offset + t.nBytes, f->fileSize()) << what << " " << t.name;
            ranges.emplace_back(t.offset, t.offset + t.nBytes);
        }
        std::sort(ranges.begin(), ranges.end());
        for (size_t k = 1; k < ranges.size(); ++k) ASSERT_LE(ranges[k - 1].second, ranges[k].first) << what;
    };
    for (uint64_t p = 0; p < headerBytes; ++p) {
        for (int v : {0x00, 0xff, 0x80, 0x7f, image[p] ^ 0x01, image[p] ^ 0x20}) {
            auto bytes = image;
            bytes[p] = uint8_t(v);
            check(bytes, fmt::format("byte {} = {:#x}", p, v));
        }
    }
    uint64_t state = 0x9e3779b97f4a7c15u;  // xorshift: 3000 images with 1-4 random bytes changed
    auto next = [&state] { state ^= state << 13, state ^= state >> 7, state ^= state << 17; return state; };
    for (int iter = 0; iter < 3000; ++iter) {
        auto bytes = image;
        const int n = 1 + int(next() % 4);
        for (int k = 0; k < n; ++k) bytes[next() % headerBytes] = uint8_t(next());
        check(bytes, fmt::format("iteration {}", iter));
    }
}

// Trailing padding after the last tensor is optional: a file may end where its last tensor ends.
TEST(GgufMalformedTensors, MissingTrailingPaddingIsAccepted) {
    GgufWriter w;
    w.addTensor("a", {3}, GgmlType::F32, patternBytes(12, 1));
    auto image = imageOf(w);
    image.resize(w.layout().dataOffset + 12);
    EXPECT_TRUE(parseBytes(image));
}

// gguf-py writes no padding after the header of a file without tensors.
TEST(GgufMalformedTensors, VocabOnlyFileEndingBeforeTheDataPaddingLoads) {
    auto real = GgufFile::open(kVocab);
    ASSERT_TRUE(real) << real.error().message;
    EXPECT_EQ(real->fileSize(), 723869u);
    EXPECT_TRUE(real->tensors().empty());
    EXPECT_EQ(real->dataOffset(), 723872u);  // 3 bytes past the end
    EXPECT_EQ(real->find("tokenizer.ggml.tokens")->strings.size(), 32000u);

    GgufWriter w;
    w.add("tokenizer.ggml.model", GgufMetaValue::string("llama"));
    auto image = imageOf(w);
    ASSERT_NE(image.size() % 32, 0u);
    EXPECT_TRUE(parseBytes(image));
}
