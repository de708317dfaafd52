// The fuzz target (fuzz/model_file_target.h) in ctest: every input the fuzzer ever crashed on
// (tests/data/fuzz/) and every real model file, replayed; and the GGUF reader's heap bound, on
// the hostile headers that would break it. A broken property aborts this executable.
#include <gtest/gtest.h>

#include "shared_data.h"

#include <cmath>
#include <filesystem>
#include <limits>
#include <fstream>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "tools/gguf_raw_builder.h"
#include "heap_meter.h"
#include "model/llama_hparams.h"
#include "tokenizer/tokenizer.h"
#include "model_file_target.h"
#include "grammar_target.h"
#include "shared_data.h"

using namespace inferscope;
namespace fs = std::filesystem;

namespace {

std::vector<uint8_t> slurp(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Peak heap of the reader on an image, and whether it parsed.
struct ReaderRun {
    uint64_t peak = 0;
    bool parsed = false;
    std::string error;
};
ReaderRun readWithMeter(std::vector<uint8_t> image) {
    fuzz::heapMeterStart();
    auto f = GgufFile::parse(MappedFile::fromBytes(std::move(image)));
    ReaderRun r{fuzz::heapMeterPeak(), bool(f), f ? std::string() : f.error().message};
    return r;
}

// A key of 0..2 bytes, distinct for each i < 65793 (the shortest keys there are).
std::string shortKey(uint32_t i) {
    if (i == 0) return "";
    if (i <= 256) return std::string(1, char(i - 1));
    i -= 257;
    return std::string{char(i & 0xff), char(i >> 8)};
}

}  // namespace

TEST(FuzzRegressions, EveryKeptInputRuns) {
    const fs::path dir = fs::path(INFERSCOPE_TEST_DATA_DIR) / "fuzz";
    int n = 0;
    for (const auto& entry : fs::directory_iterator(dir)) {
        if (!entry.is_regular_file() || entry.path().extension() == ".md") continue;
        SCOPED_TRACE(entry.path().filename().string());
        fuzz::runModelFile(slurp(entry.path()));
        ++n;
    }
    std::printf("replayed %d kept inputs\n", n);
}

TEST(FuzzRegressions, RealModelFilesRun) {
    for (const fs::path& p : {fs::path(INFERSCOPE_RESOURCES_DIR) / "models/stories260K.gguf",
                              fs::path(INFERSCOPE_TEST_DATA_DIR) / "ggml-vocab-llama-spm.gguf",
                              fs::path(INFERSCOPE_TEST_DATA_DIR) / "llama-2-tiny-random.gguf"}) {
        SCOPED_TRACE(p.filename().string());
        fuzz::runModelFile(slurp(p));
    }
}

// The vocabularies of today's models (../shared, skipped without it): byte-level BPE with 50k to
// 152k tokens and Phi-3's SentencePiece, through the whole target.
TEST(FuzzRegressions, SharedVocabulariesRun) {
    int n = 0;
    for (const char* name : {"llama-bpe", "qwen2", "gpt-2", "phi-3"}) {
        const auto path = testing_shared::sharedFile(std::string("models/tokenizer/ggml-vocab-") + name + ".gguf");
        if (!path) continue;
        SCOPED_TRACE(name);
        fuzz::runModelFile(slurp(*path));
        ++n;
    }
    if (n == 0) GTEST_SKIP() << "../shared/models/tokenizer not found";
}

// Every quantized model file of the golden set (../shared): each tensor's first and last rows go
// through the block decoders under the target's checks.
TEST(FuzzRegressions, QuantizedModelFilesRun) {
    const fs::path dir = inferscope::testing_shared::sharedDir() / "models/quant";
    if (!fs::is_directory(dir)) GTEST_SKIP() << "../shared/models/quant not found: skipped";
    int n = 0;
    for (const auto& entry : fs::directory_iterator(dir)) {
        if (entry.path().extension() != ".gguf") continue;
        SCOPED_TRACE(entry.path().filename().string());
        fuzz::runModelFile(slurp(entry.path()));
        ++n;
    }
    EXPECT_GE(n, 22);
}

// A count in the header is a claim: whatever it says, the reader reserves no more memory than the
// bytes that remain in the file. Each image claims a huge count and fails at its first entry, so
// what the reader holds is the reservation alone.
TEST(ReaderHeap, ClaimedCountsReserveAtMostTheFile) {
    ASSERT_TRUE(fuzz::heapMeterWorks());
    constexpr uint64_t kFile = 1 << 20;
    constexpr uint64_t kSlack = 8 * 1024;  // the error message and a hash-map node or two
    auto claim = [](GgufRawBuilder b) {
        b.u64(uint64_t(1) << 62);  // the next string's length: refused before anything is read
        b.zeros(kFile - b.size());
        return std::move(b).take();
    };
    GgufRawBuilder kvs, tensors, strings;
    kvs.header(3, 0, uint64_t(1) << 20).key("a", GgufType::U8).u8(1);
    tensors.header(3, uint64_t(1) << 20, 0).tensorInfo("a", {4}, uint32_t(GgmlType::F32), 0);
    strings.header(3, 0, 1).key("tokenizer.ggml.tokens", GgufType::Array).array(GgufType::String, uint64_t(1) << 32);
    for (auto [name, builder] : {std::pair{"2^20 metadata entries", &kvs}, std::pair{"2^20 tensors", &tensors},
                                 std::pair{"2^32 strings", &strings}}) {
        const ReaderRun r = readWithMeter(claim(*builder));
        EXPECT_FALSE(r.parsed);
        EXPECT_LE(r.peak, kFile + kSlack) << name << ": " << r.error;
        std::printf("%s claimed in %llu bytes: the reader held %llu bytes (%s)\n", name, (unsigned long long)kFile,
                    (unsigned long long)r.peak, r.error.c_str());
    }
}

// What the reader does hold grows with the entries actually present: the worst files are packed
// with the smallest entries the format allows. The factor is fuzz::kReaderBytesPerFileByte.
TEST(ReaderHeap, MemoryFollowsContent) {
    ASSERT_TRUE(fuzz::heapMeterWorks());
    std::vector<std::pair<std::string, std::vector<uint8_t>>> images;
    {
        GgufRawBuilder b;  // 65,793 distinct keys of 0..2 bytes, each with a u8 value: 13..15 bytes an entry
        const uint32_t n = 65793;
        b.header(3, 0, n);
        for (uint32_t i = 0; i < n; ++i) b.key(shortKey(i), GgufType::U8).u8(0);
        images.emplace_back("tiny metadata entries", std::move(b).take());
    }
    {
        GgufRawBuilder b;  // one array of 2^17 empty strings: 8 bytes each
        const uint64_t n = uint64_t(1) << 17;
        b.header(3, 0, 1).key("a", GgufType::Array).array(GgufType::String, n);
        for (uint64_t i = 0; i < n; ++i) b.str("");
        images.emplace_back("empty strings", std::move(b).take());
    }
    {
        GgufRawBuilder b;  // 65,793 tensors of one F32 each, alignment 1: 38..40 bytes a tensor
        const uint32_t n = 65793;
        b.header(3, n, 1).key("general.alignment", GgufType::U32).u32(1);
        for (uint32_t i = 0; i < n; ++i) b.tensorInfo(shortKey(i), {1}, uint32_t(GgmlType::F32), 4 * uint64_t(i));
        b.zeros(4 * uint64_t(n));
        images.emplace_back("tiny tensors", std::move(b).take());
    }
    for (auto& [name, image] : images) {
        const uint64_t size = image.size();
        const ReaderRun r = readWithMeter(std::move(image));
        EXPECT_TRUE(r.parsed) << name << ": " << r.error;
        EXPECT_LE(r.peak, fuzz::readerHeapBound(size)) << name;
        std::printf("%s: %llu bytes, the reader held %llu (%.1f x the file)\n", name.c_str(), (unsigned long long)size,
                    (unsigned long long)r.peak, double(r.peak) / double(size));
    }
}

// ---- what the fuzzer found, one test each (the inputs are in tests/data/fuzz/) ---------------------

// getUint/getFloat/getString/getBool named the key raw in their errors: a key holding control
// bytes or invalid UTF-8 went into the message as it was (found asking with the file's own keys).
TEST(FuzzFindings, GetterErrorsEscapeTheKey) {
    GgufRawBuilder b;
    b.header(3, 0, 1).key(std::string_view("a\0\x1b[2J\xff", 7), GgufType::U8).u8(1);
    auto f = GgufFile::parse(MappedFile::fromBytes(std::move(b).take()));
    ASSERT_TRUE(f) << f.error().message;
    auto s = f->getString(f->metadata()[0].key);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().message, "metadata key a\\x00\\x1b[2J\\xff has type u8, expected a string");
}

// GgufValue::intAt converted a float item to int64_t as it was: 7e31 (or NaN, or -1e30) from a file
// is undefined behaviour (UBSan). Out-of-range floats now clamp, NaN gives 0.
TEST(FuzzFindings, IntAtClampsFloatsOutOfRange) {
    const float items[] = {7.3e31f, -1e30f, std::nanf(""), -3.9f, 12.5f};
    GgufRawBuilder b;
    b.header(3, 0, 1).key("a", GgufType::Array).array(GgufType::F32, 5);
    for (float x : items) b.f32(x);
    auto f = GgufFile::parse(MappedFile::fromBytes(std::move(b).take()));
    ASSERT_TRUE(f) << f.error().message;
    const GgufValue& v = f->metadata()[0].value;
    EXPECT_EQ(v.intAt(0), std::numeric_limits<int64_t>::max());
    EXPECT_EQ(v.intAt(1), std::numeric_limits<int64_t>::min());
    EXPECT_EQ(v.intAt(2), 0);
    EXPECT_EQ(v.intAt(3), -3);
    EXPECT_EQ(v.intAt(4), 12);
}

// SentencePiece's load errors quote the piece they refuse ("byte piece <0x\xfa> is invalid."), and
// the tokenizer passed them on as they were; so did the messages naming the tokenizer model, the
// architecture, the RoPE scaling type and (for invalid UTF-8) a vocabulary piece. All are escaped
// now. The fuzzer found the first; the test holds each.
TEST(FuzzFindings, MessagesEscapeTextFromTheFile) {
    auto vocabFile = [](std::string_view model, std::vector<std::string> pieces, std::vector<int32_t> types) {
        GgufRawBuilder b;
        b.header(3, 0, 4).key("tokenizer.ggml.model", GgufType::String).str(model);
        b.key("tokenizer.ggml.tokens", GgufType::Array).array(GgufType::String, pieces.size());
        for (const auto& p : pieces) b.str(p);
        b.key("tokenizer.ggml.scores", GgufType::Array).array(GgufType::F32, pieces.size());
        for (size_t i = 0; i < pieces.size(); ++i) b.f32(0);
        b.key("tokenizer.ggml.token_type", GgufType::Array).array(GgufType::I32, types.size());
        for (int32_t t : types) b.i32(t);
        auto f = GgufFile::parse(MappedFile::fromBytes(std::move(b).take()));
        EXPECT_TRUE(f) << f.error().message;
        return std::move(*f);
    };
    auto tokenizerError = [](const GgufFile& f) {
        auto t = Tokenizer::fromGguf(f);
        return t ? std::string("(built)") : t.error().message;
    };
    // 256 byte pieces, one of them spelled with invalid UTF-8.
    std::vector<std::string> pieces = {"<unk>", "a"};
    std::vector<int32_t> types = {2, 1};
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        pieces.push_back(b == 0xfa ? std::string("<0x\xfa\x1b>") : std::string(name));
        types.push_back(6);
    }
    EXPECT_EQ(tokenizerError(vocabFile("llama", pieces, types)),
              "SentencePiece rejected the vocabulary: byte piece <0x\\xfa\\x1b> is invalid.");
    EXPECT_EQ(tokenizerError(vocabFile("gpt2\x1b]0;owned\x07", {"a"}, {1})),
              "tokenizer model \"gpt2\\x1b]0;owned\\x07\" is not supported: only \"llama\" (SentencePiece) and \"gpt2\" (byte-level BPE) are");
    EXPECT_EQ(tokenizerError(vocabFile("llama", {"<unk>", "\xff\xfe", "\xff\xfe"}, {2, 1, 1})),
              "tokenizer.ggml.tokens: token 2 \"\\xff\\xfe\" duplicates token 1");

    GgufRawBuilder arch;
    arch.header(3, 0, 1).key("general.architecture", GgufType::String).str("gpt\xc0\x80\n");
    auto a = GgufFile::parse(MappedFile::fromBytes(std::move(arch).take()));
    ASSERT_TRUE(a);
    auto hp = readLlamaHParams(*a);
    ASSERT_FALSE(hp);
    EXPECT_EQ(hp.error().message, "unsupported architecture 'gpt\\xc0\\x80\\x0a' (Inferscope runs llama, qwen2, qwen3, gemma2, gemma3 and phi3)");
}

// The grammar target (fuzz/grammar_target.h) on its seeds and on hostile text at the server's
// limit of 256 KiB: nesting without end, long chains, repetitions past the element limit, an
// ambiguous grammar, schemas nested and referenced in circles.
TEST(FuzzRegressions, GrammarSeedsAndHostileTextRun) {
    const fs::path seeds = fs::path(INFERSCOPE_TEST_DATA_DIR) / "../../fuzz/grammar_seeds";
    int n = 0;
    for (const auto& entry : fs::directory_iterator(seeds)) {
        SCOPED_TRACE(entry.path().filename().string());
        fuzz::runGrammarInput(slurp(entry.path()));
        ++n;
    }
    EXPECT_GE(n, 5);
    const size_t limit = fuzz::kGrammarTextLimit;
    auto run = [](const std::string& text) {
        fuzz::runGrammarInput({reinterpret_cast<const uint8_t*>(text.data()), text.size()});
    };
    auto fill = [limit](std::string head, const std::string& unit, const std::string& tail) {
        while (head.size() + unit.size() + tail.size() <= limit) head += unit;
        return head + tail;
    };
    run(std::string(limit, '('));
    run("root ::= " + std::string(limit - 9, '('));
    run(std::string(limit, '['));
    run(std::string(limit, '{'));
    run(fill("root ::= ", "\"a\"{0,2000} ", "\n"));
    run(fill("root ::= ", "(\"a\" | \"a\")* ", "\n"));
    run(fill("root ::= ", "[^\\x00-\\U0010FFFF]", "\n"));
    std::string chain = "root ::= r0\n";
    for (int i = 0; chain.size() < limit - 64; ++i) chain += "r" + std::to_string(i) + " ::= r" + std::to_string(i + 1) + " | \"\"\n";
    run(chain + "r999999 ::= \"x\"\n");
    run("root ::= a\na ::= \"x\" a \"y\" | \"x\" a \"z\" | \"\"\n");
    run("root ::= (" + std::string(60, '(') + "\"a\"" + std::string(60, ')') + "{2000}){2000}\n");
    run(fill(R"({"anyOf":[)", R"({"anyOf":[{"type":"string"},)", "{}]}"));
    std::string members = R"({"type":"object","properties":{)";  // distinct names: an ordered parse costs their square
    for (int i = 0; members.size() < limit - 64; ++i) members += "\"p" + std::to_string(i) + "\":{},";
    run(members + R"("z":{}}})");
    run(fill(R"({"$defs":{)", R"("d":{"$ref":"#/$defs/d"},)", R"("e":{}},"$ref":"#/$defs/d"})"));
    std::string defs = R"({"$defs":{)";
    for (int i = 0; defs.size() < limit - 64; ++i)
        defs += "\"d" + std::to_string(i) + "\":{\"$ref\":\"#/$defs/d" + std::to_string(i + 1) + "\"},";
    run(defs + R"("z":{}},"$ref":"#/$defs/d0"})");
    run(fill(R"({"enum":[)", "1,", "2]}"));
}
