// GgufWriter on disk: real files re-written from their parsed contents are byte-identical;
// writeFile streams from producers and replaces the target atomically.
#include <fstream>
#include <iterator>

#include "test_gguf_helpers.h"

using namespace inferscope;
using namespace inferscope::testing_gguf;

namespace {

const std::string kStories = std::string(INFERSCOPE_RESOURCES_DIR) + "/models/stories260K.gguf";
const std::string kTinyRandom = std::string(INFERSCOPE_TEST_DATA_DIR) + "/llama-2-tiny-random.gguf";
const std::string kVocab = std::string(INFERSCOPE_TEST_DATA_DIR) + "/ggml-vocab-llama-spm.gguf";

std::vector<uint8_t> readAll(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A writer holding everything the reader parsed: version, metadata in file order, tensors in
// info order (the data copied through producers that read the mapping).
GgufWriter rewrite(const GgufFile& f) {
    GgufWriter w(f.version());
    for (const auto& kv : f.metadata()) w.add(std::string(kv.key), GgufMetaValue::copyOf(kv.value));
    for (const auto& t : f.tensors()) {
        std::vector<uint64_t> ne(t.ne.begin(), t.ne.begin() + t.nDims);
        auto data = f.tensorData(t);
        w.addTensor(std::string(t.name), std::move(ne), t.type(), [data](GgufTensorSink& s) { s.write(data); });
    }
    return w;
}

void expectByteIdenticalRewrite(const std::string& path) {
    auto f = GgufFile::open(path);
    ASSERT_TRUE(f) << f.error().message;
    const auto original = readAll(path);
    const auto image = imageOf(rewrite(*f));
    ASSERT_EQ(image.size(), original.size());
    // Find the first difference rather than dumping a megabyte.
    const auto diff = std::mismatch(image.begin(), image.end(), original.begin());
    EXPECT_TRUE(diff.first == image.end()) << "first difference at byte " << (diff.first - image.begin());
}

// A producer of n bytes of a deterministic sequence, written in chunks of `chunk` bytes.
GgufTensorProducer sequence(uint64_t n, size_t chunk) {
    return [n, chunk](GgufTensorSink& sink) {
        std::vector<uint8_t> buf(chunk);
        for (uint64_t done = 0; done < n && sink.ok(); done += chunk) {
            const size_t k = size_t(std::min<uint64_t>(chunk, n - done));
            for (size_t j = 0; j < k; ++j) buf[j] = uint8_t((done + j) * 2654435761u >> 13);
            sink.write(buf.data(), k);
        }
    };
}

}  // namespace

TEST(GgufRewrite, Stories260KIsByteIdentical) { expectByteIdenticalRewrite(kStories); }

TEST(GgufRewrite, TinyRandomF16IsByteIdentical) { expectByteIdenticalRewrite(kTinyRandom); }

// gguf-py wrote this one with no padding after the header (0 tensors); so does the writer.
TEST(GgufRewrite, VocabOnlyIsByteIdentical) { expectByteIdenticalRewrite(kVocab); }

TEST(GgufWriteFile, StreamsProducersToDiskAndLeavesNoTemporary) {
    TempDir dir;
    const auto path = dir.path() / "model.gguf";
    const uint64_t big = 3 * 1024 * 1024 + 4;  // more than the 1 MiB write buffer, odd chunks
    GgufWriter w;
    w.add("general.architecture", GgufMetaValue::string("llama"));
    w.addTensor("big", {big / 4}, GgmlType::F32, sequence(big, 4099));
    w.addTensor("small", {3}, GgmlType::F32, sequence(12, 5));
    ASSERT_TRUE(w.writeFile(path));
    EXPECT_EQ(dir.entries(), std::vector<std::string>{"model.gguf"});

    auto f = GgufFile::open(path);
    ASSERT_TRUE(f) << f.error().message;
    EXPECT_EQ(f->fileSize(), w.layout().fileBytes);
    auto data = f->tensorData(*f->findTensor("big"));
    std::vector<uint8_t> expected;
    struct Collect final : GgufTensorSink {
        std::vector<uint8_t>* out;
        void write(std::span<const uint8_t> b) override { out->insert(out->end(), b.begin(), b.end()); }
        void fail(Error) override {}
        bool ok() const override { return true; }
    } collect;
    collect.out = &expected;
    sequence(big, 1 << 20)(collect);
    EXPECT_TRUE(std::equal(data.begin(), data.end(), expected.begin(), expected.end()));
    // Same image as in memory.
    EXPECT_EQ(readAll(path), imageOf(w));
}

TEST(GgufWriteFile, ReplacesAnExistingFile) {
    TempDir dir;
    const auto path = dir.path() / "model.gguf";
    std::ofstream(path) << "old contents";
    ASSERT_TRUE(smallModel().writeFile(path));
    EXPECT_EQ(readAll(path), imageOf(smallModel()));
    EXPECT_EQ(dir.entries(), std::vector<std::string>{"model.gguf"});
}

TEST(GgufWriteFile, AFailingProducerLeavesTheOldFileAndNoTemporary) {
    TempDir dir;
    const auto path = dir.path() / "model.gguf";
    std::ofstream(path) << "old contents";
    GgufWriter w;
    w.addTensor("a", {1024 * 1024}, GgmlType::F32, sequence(4 * 1024 * 1024, 65536));
    w.addTensor("b", {4}, GgmlType::F32, [](GgufTensorSink& s) {
        s.write("12345678", 8);
        s.fail(Error{ErrorKind::Io, "source went away"});
        EXPECT_FALSE(s.ok());
    });
    auto r = w.writeFile(path);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().kind, ErrorKind::Io);
    EXPECT_EQ(r.error().message, "source went away");
    const auto old = readAll(path);
    EXPECT_EQ(std::string(old.begin(), old.end()), "old contents");
    EXPECT_EQ(dir.entries(), std::vector<std::string>{"model.gguf"});
}

TEST(GgufWriteFile, MissingDirectoryIsAnIoError) {
    TempDir dir;
    const auto path = dir.path() / "no-such-dir" / "model.gguf";
    auto r = smallModel().writeFile(path);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().kind, ErrorKind::Io);
    EXPECT_EQ(r.error().message, "cannot write " + path.string() + ": No such file or directory");
}

TEST(GgufWriteFile, OpenNamesTheFileInReaderErrors) {
    TempDir dir;
    const auto path = dir.path() / "bad.gguf";
    GgufWriter w(4);
    ASSERT_TRUE(w.writeFile(path));
    auto f = GgufFile::open(path);
    ASSERT_FALSE(f);
    EXPECT_EQ(f.error().message, "bad.gguf: unsupported GGUF version 4 (expected 2 or 3)");
}
