// Tokenizer: exact ids against llama.cpp's vectors and golden prompts, byte fallback, special
// tokens, streaming UTF-8, and hostile GGUF vocabularies built byte by byte in memory.
#include <gtest/gtest.h>

#include <cstring>
#include <cmath>
#include <fstream>
#include <functional>
#include <optional>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "vocab_vectors.h"
#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"

using namespace inferscope;

namespace {

const std::string kData = INFERSCOPE_TEST_DATA_DIR;
const std::string kStories = std::string(INFERSCOPE_RESOURCES_DIR) + "/models/stories260K.gguf";
const std::string kFffd = "\xEF\xBF\xBD";  // U+FFFD

using testing_vocab::readFile;

std::unique_ptr<Tokenizer> fromGgufPath(const std::string& path) {
    auto file = GgufFile::open(path);
    EXPECT_TRUE(file) << file.error().message;
    if (!file) return nullptr;
    auto tok = Tokenizer::fromGguf(*file);
    EXPECT_TRUE(tok) << tok.error().message;
    return tok ? std::move(*tok) : nullptr;
}

std::unique_ptr<Tokenizer> fromModelPath(const std::string& path) {
    auto tok = Tokenizer::fromModelFile(path);
    EXPECT_TRUE(tok) << tok.error().message;
    return tok ? std::move(*tok) : nullptr;
}

// The shared tokenizers are built once: the 32000-piece ones take a few ms each.
const Tokenizer& llamaGguf() { static auto t = fromGgufPath(kData + "/ggml-vocab-llama-spm.gguf"); return *t; }
const Tokenizer& llamaModel() { static auto t = fromModelPath(kData + "/tokenizer.model"); return *t; }
const Tokenizer& stories() { static auto t = fromGgufPath(kStories); return *t; }

using Ids = std::vector<int32_t>;

// ---- llama.cpp's 46 test vectors ------------------------------------------------------------

using testing_vocab::Vector;

std::vector<Vector> llamaVectors() { return testing_vocab::readVectors(kData + "/ggml-vocab-llama-spm.gguf"); }

void expectAllVectors(const Tokenizer& tok) {
    const auto vectors = llamaVectors();
    ASSERT_EQ(vectors.size(), 46u);
    for (size_t k = 0; k < vectors.size(); ++k) {
        EXPECT_EQ(tok.encode(vectors[k].text, false), vectors[k].ids) << "vector " << k << ": \"" << vectors[k].text << "\"";
        // Valid UTF-8 and whitespace kept: decoding gives the text back.
        EXPECT_EQ(tok.decode(vectors[k].ids), vectors[k].text) << "vector " << k;
    }
}

TEST(LlamaVectors, FromGguf) { expectAllVectors(llamaGguf()); }
TEST(LlamaVectors, FromModelFile) { expectAllVectors(llamaModel()); }

TEST(LlamaVocab, SpecialIdsFromTheFile) {
    for (const Tokenizer* tok : {&llamaGguf(), &llamaModel()}) {
        EXPECT_EQ(tok->vocabSize(), 32000);
        EXPECT_EQ(tok->unkId(), 0);
        EXPECT_EQ(tok->bosId(), 1);
        EXPECT_EQ(tok->eosId(), 2);
        EXPECT_EQ(tok->padId(), -1);
        EXPECT_EQ(tok->eotId(), -1);
        EXPECT_TRUE(tok->addBosByDefault());
        EXPECT_EQ(tok->type(0), TokenType::Unknown);
        EXPECT_EQ(tok->type(1), TokenType::Control);
        EXPECT_EQ(tok->type(3), TokenType::Byte);
        EXPECT_EQ(tok->type(258), TokenType::Byte);
        EXPECT_EQ(tok->type(259), TokenType::Normal);
        EXPECT_EQ(tok->piece(727), "▁there");
        EXPECT_EQ(tok->tokenBytes(727), " there");
    }
}

TEST(LlamaVocab, ProvenanceExamples) {
    for (const Tokenizer* tok : {&llamaGguf(), &llamaModel()}) {
        EXPECT_EQ(tok->encode("Once upon a time, there was a little girl.", false),
                  (Ids{9038, 2501, 263, 931, 29892, 727, 471, 263, 2217, 7826, 29889}));
        EXPECT_EQ(tok->encode("Lily", false), (Ids{365, 2354}));
        EXPECT_EQ(tok->encode(" 123", false), (Ids{259, 29896, 29906, 29941}));
        EXPECT_EQ(tok->encode("héllo 🦙", false), (Ids{298, 3610, 417, 29871, 243, 162, 169, 156}));
        EXPECT_EQ(tok->encode("a  b", false), (Ids{263, 29871, 289}));
        EXPECT_EQ(tok->encode("Hello\nworld", false), (Ids{15043, 13, 11526}));
    }
}

// ---- stories260K (the bundled model) ---------------------------------------------------------

TEST(Stories260K, SpecialIds) {
    const Tokenizer& tok = stories();
    EXPECT_EQ(tok.vocabSize(), 512);
    EXPECT_EQ(tok.unkId(), 0);
    EXPECT_EQ(tok.bosId(), 1);
    EXPECT_EQ(tok.eosId(), 2);
    EXPECT_EQ(tok.padId(), -1);  // stored as 4294967295
    EXPECT_TRUE(tok.isEndOfGeneration(2));
    EXPECT_FALSE(tok.isEndOfGeneration(1));
    EXPECT_FALSE(tok.isEndOfGeneration(-1));
    EXPECT_EQ(tok.piece(511), "\xE2\x80\x8A");  // U+200A hair space
}

// PROVENANCE.md's examples. Where whitespace handling differs, llama.cpp (and llama2.c's merge)
// keep every space while tok512.model's own normalizer collapses them: we follow llama.cpp.
void expectStoriesExamples(const Tokenizer& tok) {
    EXPECT_EQ(tok.encode("Once upon a time", true), (Ids{1, 403, 407, 261, 378}));
    EXPECT_EQ(tok.encode("Once upon a time, there was a little girl.", false),
              (Ids{403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 426}));
    EXPECT_EQ(tok.encode("Lily", false), (Ids{317}));
    EXPECT_EQ(tok.encode(" 123", false), (Ids{410, 410, 475, 479, 472}));
    EXPECT_EQ(tok.encode("héllo 🦙", false), (Ids{270, 485, 306, 414, 410, 243, 162, 169, 156}));
    EXPECT_EQ(tok.encode("a  b", false), (Ids{261, 410, 268}));
    EXPECT_EQ(tok.encode("Hello\nworld", false), (Ids{346, 306, 414, 13, 424, 304, 341}));
    for (const char* text : {"Once upon a time", " 123", "héllo 🦙", "a  b", "Hello\nworld"})
        EXPECT_EQ(tok.decode(tok.encode(text, true)), text);
}

TEST(Stories260K, ProvenanceExamples) { expectStoriesExamples(stories()); }

// tok512.model beside the model must tokenize like the GGUF's own vocabulary, although its
// normalizer says remove_extra_whitespaces = true.
TEST(Stories260K, Tok512ModelFileMatchesTheGguf) {
    auto tok = fromModelPath(kData + "/tok512.model");
    ASSERT_TRUE(tok);
    EXPECT_EQ(tok->vocabSize(), 512);
    EXPECT_EQ(tok->bosId(), 1);
    expectStoriesExamples(*tok);
}

TEST(Stories260K, GreedyDecodeFromProvenance) {
    const Ids ids = {1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401, 396, 267,
                     337, 410, 408, 419, 292, 411, 322, 265, 282, 295, 433, 426, 385, 328, 432, 358, 394, 261, 370, 432,
                     352, 266, 268, 388, 426, 338, 391, 266, 267, 337, 335, 312, 432, 398, 312, 286, 267, 414, 270, 333,
                     415, 426, 13, 438, 310};
    EXPECT_EQ(stories().decode(ids),
              "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. "
              "One day, she saw a big, red ball. She wanted to play with it, but it was too high.\nLily");
}

// llama.cpp's own tokenization of the golden prompts, and its token_to_piece text of each step.
TEST(GoldenPrompts, MatchLlamaCpp) {
    struct Case { const Tokenizer* tok; const char* file; };
    static auto tiny = fromGgufPath(kData + "/llama-2-tiny-random.gguf");
    ASSERT_TRUE(tiny);
    for (const Case& c : {Case{&stories(), "stories260K-greedy-1.json"}, Case{&stories(), "stories260K-greedy-2.json"},
                          Case{tiny.get(), "tiny-random-greedy-1.json"}}) {
        const auto golden = nlohmann::json::parse(readFile(kData + "/" + c.file));
        const std::string prompt = golden["prompt"];
        EXPECT_EQ(c.tok->encode(prompt, true), golden["prompt_ids"].get<Ids>()) << c.file;
        std::string text;
        Ids all = golden["prompt_ids"].get<Ids>();
        for (const auto& step : golden["steps"]) {
            EXPECT_EQ(c.tok->tokenBytes(step["id"]), step["piece"].get<std::string>()) << c.file;
            text += c.tok->tokenBytes(step["id"]);
            all.push_back(step["id"]);
        }
        EXPECT_EQ(text, golden["text"].get<std::string>()) << c.file;
        EXPECT_EQ(c.tok->decode(all), prompt + text) << c.file;
    }
}

// ---- byte fallback and round trips -----------------------------------------------------------

TEST(ByteFallback, EveryByteToken) {
    for (const Tokenizer* tok : {&stories(), &llamaGguf()}) {
        for (int b = 0; b < 256; ++b) {
            const int32_t id = 3 + b;  // the byte tokens follow <unk>, <s>, </s> in both vocabularies
            char name[8];
            std::snprintf(name, sizeof name, "<0x%02X>", b);
            EXPECT_EQ(tok->piece(id), name);
            EXPECT_EQ(tok->type(id), TokenType::Byte);
            EXPECT_EQ(tok->tokenBytes(id), std::string(1, char(b)));
            // Alone, a byte >= 0x80 is not UTF-8: SentencePiece's decode gives U+FFFD.
            EXPECT_EQ(tok->decode(Ids{id}), b < 0x80 ? std::string(1, char(b)) : kFffd);
        }
    }
}

TEST(ByteFallback, ValidTextRoundTrips) {
    const std::vector<std::string> texts = {
        std::string("nul\0inside", 10), "🦙 emoji 👩‍👩‍👧 family", "שלום עולם", "مرحبا بالعالم", "日本語のテキスト",
        "tabs\tand\r\nCRLF", "  leading and trailing  ", "\xF4\x8F\xBF\xBF" /* U+10FFFF */, "ǅ ﬁ Å",
    };
    for (const Tokenizer* tok : {&stories(), &llamaGguf(), &llamaModel()})
        for (const auto& text : texts) EXPECT_EQ(tok->decode(tok->encode(text, true)), text) << text;
}

// Every byte value 0..255 in one string. SentencePiece's normalizer turns each byte that is not
// part of valid UTF-8 into U+FFFD before encoding, so those cannot round-trip.
TEST(ByteFallback, AllByteValues) {
    std::string all, expected;
    for (int b = 0; b < 256; ++b) {
        all.push_back(char(b));
        expected += b < 0x80 ? std::string(1, char(b)) : kFffd;
    }
    for (const Tokenizer* tok : {&stories(), &llamaGguf()}) {
        const Ids ids = tok->encode(all, false);
        EXPECT_EQ(tok->decode(ids), expected);
        // Streamed token by token the text is the same, plus the dummy-prefix space decode drops.
        Utf8Stream stream;
        std::string streamed;
        for (int32_t id : ids) streamed += stream.push(tok->tokenBytes(id));
        streamed += stream.flush();
        EXPECT_EQ(streamed, " " + expected);
    }
    EXPECT_EQ(stories().decode(stories().encode("a\x80z", false)), "a" + kFffd + "z");
}

TEST(Tokenizer, EmptyText) {
    EXPECT_TRUE(llamaGguf().encode("", false).empty());
    EXPECT_EQ(llamaGguf().encode("", true), (Ids{1}));
    EXPECT_EQ(llamaGguf().decode(Ids{}), "");
}

TEST(Tokenizer, OutOfRangeIdsAreHarmless) {
    const Tokenizer& tok = stories();
    EXPECT_EQ(tok.piece(512), "");
    EXPECT_EQ(tok.piece(-1), "");
    EXPECT_EQ(tok.tokenBytes(100000), "");
    EXPECT_EQ(tok.type(-5), TokenType::Unknown);
    EXPECT_EQ(tok.decode(Ids{403, -1, 512, 407}), "Once upon");
}

TEST(Tokenizer, TokenBytesOfSpecialTokens) {
    EXPECT_EQ(stories().tokenBytes(0), "");  // <unk>
    EXPECT_EQ(stories().tokenBytes(1), "");  // <s>
    EXPECT_EQ(stories().tokenBytes(2), "");  // </s>
    EXPECT_EQ(stories().tokenBytes(3 + '\n'), "\n");
    EXPECT_EQ(stories().piece(1), "<s>");
}

// ---- special tokens in text ------------------------------------------------------------------

TEST(ParseSpecial, ControlPiecesInText) {
    const Tokenizer& tok = llamaGguf();
    EXPECT_EQ(tok.encode("<s>Hello</s>", false, true), (Ids{1, 15043, 2}));
    // The dummy-prefix space is added again after a special token (llama.cpp's SPM path).
    EXPECT_EQ(tok.encode("</s> Hello", false, true), (Ids{2, 29871, 15043}));
    EXPECT_EQ(tok.encode("Hello<s>", true, true), (Ids{1, 15043, 1}));
    EXPECT_EQ(tok.encode("<unk>", false, true), (Ids{0}));
    // Without parseSpecial the markup is plain text.
    const Ids plain = tok.encode("<s>Hello</s>", false);
    for (int32_t id : plain) EXPECT_GT(id, 2);
    EXPECT_EQ(tok.decode(plain), "<s>Hello</s>");
    EXPECT_EQ(tok.findSpecial("</s>"), 2);
    EXPECT_EQ(tok.findSpecial("<unk>"), 0);
    EXPECT_EQ(tok.findSpecial("Hello"), std::nullopt);
    EXPECT_EQ(tok.findSpecial(""), std::nullopt);
}

TEST(Utf8Stream, EmojiSplitAcrossPushes) {
    Utf8Stream s;  // 🦙 = F0 9F A6 99
    EXPECT_EQ(s.push("a\xF0"), "a");
    EXPECT_EQ(s.push("\x9F\xA6"), "");
    EXPECT_EQ(s.push("\x99!"), "🦙!");
    EXPECT_EQ(s.flush(), "");
}

TEST(Utf8Stream, InvalidBytesBecomeReplacementCharacters) {
    Utf8Stream s;
    EXPECT_EQ(s.push("\xFF"), kFffd);
    EXPECT_EQ(s.push("\xC0\x80"), kFffd + kFffd);                 // overlong NUL
    EXPECT_EQ(s.push("\xED\xA0\x80"), kFffd + kFffd + kFffd);     // surrogate
    EXPECT_EQ(s.push("\xE2\x82"), "");                            // could still become €
    EXPECT_EQ(s.push("\xE2\x82\xAC"), kFffd + kFffd + "€");       // it did not; the second one did
    EXPECT_EQ(s.push("\xF0\x9F\xA6"), "");
    EXPECT_EQ(s.flush(), kFffd + kFffd + kFffd);                  // cut short at the end
    EXPECT_EQ(s.flush(), "");
}

// The streamed text of any byte-token sequence equals SentencePiece's decode of it.
TEST(Utf8Stream, AgreesWithDecodeOnRandomBytes) {
    const Tokenizer& tok = stories();
    std::mt19937 rng(1234);
    for (int round = 0; round < 500; ++round) {
        Ids ids;
        const int n = int(rng() % 12) + 1;
        for (int k = 0; k < n; ++k) {
            // Bias toward lead and continuation bytes so that valid characters occur too.
            const uint32_t r = rng();
            const int b = r % 3 == 0 ? int(0x80 + (r >> 8) % 0x40) : r % 3 == 1 ? int(0xC0 + (r >> 8) % 0x40) : int((r >> 8) % 256);
            ids.push_back(3 + b);
        }
        Utf8Stream s;
        std::string streamed;
        for (int32_t id : ids) streamed += s.push(tok.tokenBytes(id));
        streamed += s.flush();
        EXPECT_EQ(streamed, tok.decode(ids)) << "round " << round;
    }
}

// ---- small vocabularies written byte by byte ---------------------------------------------------

// A GGUF v3 image with metadata only (no tensors). GGUF value types: u32 4, i32 5, f32 6, bool 7,
// string 8, array 9.
class GgufImage {
public:
    GgufImage& str(std::string_view key, std::string_view v) { head(key, 8); string(v); return *this; }
    GgufImage& u32(std::string_view key, uint32_t v) { head(key, 4); pod(v); return *this; }
    GgufImage& i32(std::string_view key, int32_t v) { head(key, 5); pod(v); return *this; }
    GgufImage& f32(std::string_view key, float v) { head(key, 6); pod(v); return *this; }
    GgufImage& boolean(std::string_view key, bool v) { head(key, 7); pod(uint8_t(v)); return *this; }
    GgufImage& strings(std::string_view key, const std::vector<std::string>& v) {
        arrayHead(key, 8, v.size());
        for (const auto& s : v) string(s);
        return *this;
    }
    GgufImage& f32s(std::string_view key, const std::vector<float>& v) {
        arrayHead(key, 6, v.size());
        for (float x : v) pod(x);
        return *this;
    }
    GgufImage& i32s(std::string_view key, const std::vector<int32_t>& v) {
        arrayHead(key, 5, v.size());
        for (int32_t x : v) pod(x);
        return *this;
    }
    Result<GgufFile> parse() const {
        std::vector<uint8_t> bytes;
        auto put = [&bytes](auto x) {
            const auto* p = reinterpret_cast<const uint8_t*>(&x);
            bytes.insert(bytes.end(), p, p + sizeof x);
        };
        bytes.insert(bytes.end(), {'G', 'G', 'U', 'F'});
        put(uint32_t(3));   // version
        put(uint64_t(0));   // tensors
        put(nKv_);
        bytes.insert(bytes.end(), body_.begin(), body_.end());
        return GgufFile::parse(MappedFile::fromBytes(std::move(bytes)));
    }

private:
    template <class T> void pod(T v) {
        const auto* p = reinterpret_cast<const uint8_t*>(&v);
        body_.insert(body_.end(), p, p + sizeof v);
    }
    void string(std::string_view s) {
        pod(uint64_t(s.size()));
        body_.insert(body_.end(), s.begin(), s.end());
    }
    void head(std::string_view key, uint32_t type) { ++nKv_; string(key); pod(type); }
    void arrayHead(std::string_view key, uint32_t elemType, uint64_t n) { head(key, 9); pod(elemType); pod(n); }

    std::vector<uint8_t> body_;
    uint64_t nKv_ = 0;
};

// A 12-token vocabulary: special pieces first, then BPE pieces whose scores order the merges.
// No byte tokens, so no byte fallback: "c" is unknown.
struct TinyVocab {
    std::optional<std::string> model = "llama";
    std::optional<std::vector<std::string>> tokens = std::vector<std::string>{
        "<unk>", "<s>", "</s>", "<|im", "<|im_sep|>", "<|eot|>", "<unused0>", "▁", "a", "b", "▁a", "▁b"};
    std::optional<std::vector<float>> scores = std::vector<float>{0, 0, 0, 0, 0, 0, 0, -3, -4, -5, -1, -2};
    std::optional<std::vector<int32_t>> types = std::vector<int32_t>{2, 3, 3, 4, 4, 3, 5, 1, 1, 1, 1, 1};
    std::function<void(GgufImage&)> extra = [](GgufImage& g) {
        g.u32("tokenizer.ggml.unknown_token_id", 0).u32("tokenizer.ggml.bos_token_id", 1)
            .u32("tokenizer.ggml.eos_token_id", 2).u32("tokenizer.ggml.eot_token_id", 5)
            .i32("tokenizer.ggml.padding_token_id", -1);
    };

    Result<std::unique_ptr<Tokenizer>> build() const {
        GgufImage g;
        if (model) g.str("tokenizer.ggml.model", *model);
        if (tokens) g.strings("tokenizer.ggml.tokens", *tokens);
        if (scores) g.f32s("tokenizer.ggml.scores", *scores);
        if (types) g.i32s("tokenizer.ggml.token_type", *types);
        if (extra) extra(g);
        auto file = g.parse();
        if (!file) return std::unexpected(file.error());
        return Tokenizer::fromGguf(*file);
    }
};

enum Tiny : int32_t { kUnk, kBos, kEos, kIm, kImSep, kEot, kUnused, kSpace, kA, kB, kSpaceA, kSpaceB };

TEST(TinyVocab, EncodesWithTheFilesIds) {
    auto tok = TinyVocab{}.build();
    ASSERT_TRUE(tok) << tok.error().message;
    const Tokenizer& t = **tok;
    EXPECT_EQ(t.vocabSize(), 12);
    EXPECT_EQ(t.eotId(), kEot);
    EXPECT_EQ(t.padId(), -1);
    EXPECT_EQ(t.encode("a b", true), (Ids{kBos, kSpaceA, kSpaceB}));
    EXPECT_EQ(t.encode("ab", false), (Ids{kSpaceA, kB}));
    EXPECT_EQ(t.encode("c", false), (Ids{kSpace, kUnk}));  // no byte fallback
    EXPECT_EQ(t.decode(Ids{kSpaceA, kUnk}), "a ⁇ ");       // SentencePiece's unknown surface
    EXPECT_EQ(t.type(kUnused), TokenType::Unused);
    EXPECT_EQ(t.tokenBytes(kUnused), "");
    EXPECT_EQ(t.tokenBytes(kImSep), "<|im_sep|>");          // user-defined pieces are visible
    EXPECT_TRUE(t.isEndOfGeneration(kEos));
    EXPECT_TRUE(t.isEndOfGeneration(kEot));
    EXPECT_FALSE(t.isEndOfGeneration(kBos));
}

TEST(TinyVocab, SpecialPiecesLongestMatchAndDummyPrefix) {
    auto tok = TinyVocab{}.build();
    ASSERT_TRUE(tok) << tok.error().message;
    const Tokenizer& t = **tok;
    // User-defined pieces split the text even without parseSpecial (llama.cpp does the same), the
    // longer "<|im_sep|>" wins over "<|im", and "b" gets the dummy-prefix space again.
    EXPECT_EQ(t.encode("a<|im_sep|>b", false), (Ids{kSpaceA, kImSep, kSpaceB}));
    EXPECT_EQ(t.encode("<|im<|im_sep|>", false), (Ids{kIm, kImSep}));
    EXPECT_EQ(t.decode(Ids{kSpaceA, kImSep, kSpaceB}), "a<|im_sep|> b");
    // Control pieces only with parseSpecial.
    EXPECT_EQ(t.encode("a<|eot|>", false, true), (Ids{kSpaceA, kEot}));
    EXPECT_NE(t.encode("a<|eot|>", false, false), (Ids{kSpaceA, kEot}));
    EXPECT_EQ(t.encode("<s>a</s>", true, true), (Ids{kBos, kBos, kSpaceA, kEos}));
    EXPECT_EQ(t.findSpecial("<|im_sep|>"), kImSep);
    EXPECT_EQ(t.findSpecial("<|eot|>"), kEot);
    EXPECT_EQ(t.findSpecial("▁a"), std::nullopt);
}

// llama.cpp finds end-of-turn tokens by their text when the file names none, makes them CONTROL
// (so plain text never produces them) and ends generation on every one of them.
TEST(TinyVocab, EndOfTurnFoundByText) {
    TinyVocab v;
    (*v.tokens)[4] = "<|im_end|>";  // user-defined in the file
    (*v.tokens)[6] = "<end_of_turn>";
    v.extra = [](GgufImage& g) { g.u32("tokenizer.ggml.unknown_token_id", 0).u32("tokenizer.ggml.eos_token_id", 2); };
    auto tok = v.build();
    ASSERT_TRUE(tok) << tok.error().message;
    const Tokenizer& t = **tok;
    EXPECT_EQ(t.eotId(), kImSep);  // <|im_end|> before <end_of_turn> in llama.cpp's list
    EXPECT_EQ(Ids(t.endOfGenerationIds().begin(), t.endOfGenerationIds().end()), (Ids{kEos, kImSep, kUnused}));
    EXPECT_EQ(t.type(kImSep), TokenType::Control);
    EXPECT_EQ(t.tokenBytes(kImSep), "");
    EXPECT_EQ(t.encode("<|im_end|>", false, true), Ids{kImSep});
    EXPECT_NE(t.encode("<|im_end|>", false, false), Ids{kImSep});
}

TEST(TinyVocab, FlagsAndAbsentIds) {
    TinyVocab v;
    v.extra = [](GgufImage& g) {
        g.u32("tokenizer.ggml.unknown_token_id", 0).boolean("tokenizer.ggml.add_bos_token", false)
            .boolean("tokenizer.ggml.add_space_prefix", false).u32("tokenizer.ggml.eos_token_id", 0xFFFFFFFFu);
    };
    auto tok = v.build();
    ASSERT_TRUE(tok) << tok.error().message;
    const Tokenizer& t = **tok;
    EXPECT_FALSE(t.addBosByDefault());
    EXPECT_EQ(t.bosId(), -1);  // no key: never guessed
    EXPECT_EQ(t.eosId(), -1);  // 0xFFFFFFFF: none
    EXPECT_EQ(t.eotId(), -1);
    EXPECT_FALSE(t.isEndOfGeneration(2));
    EXPECT_EQ(t.encode("a b", true), (Ids{kA, kSpaceB}));  // no BOS to add, no dummy prefix
    EXPECT_EQ(t.encode("a<|im_sep|>b", false), (Ids{kA, kImSep, kB}));
}

// ---- hostile vocabularies: one clear error each ----------------------------------------------

void expectError(const TinyVocab& v, ErrorKind kind, const std::string& message) {
    auto tok = v.build();
    ASSERT_FALSE(tok) << "expected: " << message;
    EXPECT_EQ(tok.error().message, message);
    EXPECT_EQ(tok.error().kind, kind) << message;
}

TEST(HostileVocab, TokenizerModel) {
    TinyVocab v;
    v.model.reset();
    expectError(v, ErrorKind::BadFile, "no tokenizer in this GGUF file: tokenizer.ggml.model is missing");
    v.model = "bert";
    expectError(v, ErrorKind::Unsupported,
                "tokenizer model \"bert\" is not supported: only \"llama\" (SentencePiece) and \"gpt2\" (byte-level BPE) are");
    v.model = "gpt2";  // byte-level BPE needs its merges
    expectError(v, ErrorKind::BadFile, "metadata key tokenizer.ggml.merges is missing");
    v.model.reset();
    v.extra = [](GgufImage& g) { g.u32("tokenizer.ggml.model", 1); };
    expectError(v, ErrorKind::BadFile, "metadata key tokenizer.ggml.model has type u32, expected a string");
}

TEST(HostileVocab, ArraysMissingOrMistyped) {
    TinyVocab v;
    v.tokens.reset();
    expectError(v, ErrorKind::BadFile, "metadata key tokenizer.ggml.tokens is missing");
    v.extra = [](GgufImage& g) { g.i32s("tokenizer.ggml.tokens", {1, 2}); };
    expectError(v, ErrorKind::BadFile, "metadata key tokenizer.ggml.tokens has type array of i32, expected an array of strings");

    TinyVocab s;
    s.scores.reset();
    expectError(s, ErrorKind::BadFile, "metadata key tokenizer.ggml.scores is missing");
    s.extra = [](GgufImage& g) { g.str("tokenizer.ggml.scores", "0"); };
    expectError(s, ErrorKind::BadFile, "metadata key tokenizer.ggml.scores has type string, expected an array of f32");

    TinyVocab t;
    t.types.reset();
    expectError(t, ErrorKind::BadFile, "metadata key tokenizer.ggml.token_type is missing");
    t.extra = [](GgufImage& g) { g.f32s("tokenizer.ggml.token_type", {1, 1}); };
    expectError(t, ErrorKind::BadFile, "metadata key tokenizer.ggml.token_type has type array of f32, expected an array of i32");
}

TEST(HostileVocab, LengthsDisagree) {
    TinyVocab v;
    v.scores->pop_back();
    expectError(v, ErrorKind::BadFile,
                "tokenizer.ggml.scores has 11 entries but tokenizer.ggml.tokens has 12: the vocabulary arrays disagree");
    v = TinyVocab{};
    v.types->push_back(1);
    expectError(v, ErrorKind::BadFile,
                "tokenizer.ggml.token_type has 13 entries but tokenizer.ggml.tokens has 12: the vocabulary arrays disagree");
}

TEST(HostileVocab, VocabularySize) {
    TinyVocab v;
    v.tokens->clear();
    v.scores->clear();
    v.types->clear();
    expectError(v, ErrorKind::BadFile, "tokenizer.ggml.tokens is empty: the vocabulary has no tokens");
    // 2^20 + 1 empty strings: an 8 MiB image whose count alone is refused.
    v.tokens = std::vector<std::string>((1u << 20) + 1);
    expectError(v, ErrorKind::BadFile, "tokenizer.ggml.tokens has 1048577 tokens, more than the 1048576 a vocabulary may have");
}

TEST(HostileVocab, BadTokens) {
    TinyVocab v;
    (*v.tokens)[9] = "";
    expectError(v, ErrorKind::BadFile, "tokenizer.ggml.tokens: token 9 is empty");
    v = TinyVocab{};
    (*v.tokens)[11] = "a";
    expectError(v, ErrorKind::BadFile, "tokenizer.ggml.tokens: token 11 \"a\" duplicates token 8");
    v = TinyVocab{};
    (*v.tokens)[8] = "\n";
    (*v.tokens)[9] = "\n";
    expectError(v, ErrorKind::BadFile, "tokenizer.ggml.tokens: token 9 \"\\x0a\" duplicates token 8");
    v = TinyVocab{};
    (*v.types)[8] = 7;
    expectError(v, ErrorKind::BadFile, "tokenizer.ggml.token_type: token 8 \"a\" has type 7 (valid types are 1 to 6)");
    (*v.types)[8] = 0;
    expectError(v, ErrorKind::BadFile, "tokenizer.ggml.token_type: token 8 \"a\" has type 0 (valid types are 1 to 6)");
    v = TinyVocab{};
    (*v.types)[8] = 3;  // SentencePiece would fail Encode on any text containing "a"
    expectError(v, ErrorKind::BadFile,
                "tokenizer.ggml.token_type: token 8 \"a\" is a control token of a single character, which SentencePiece "
                "cannot encode around");
    v = TinyVocab{};
    (*v.scores)[10] = std::nanf("");
    expectError(v, ErrorKind::BadFile, "tokenizer.ggml.scores: token 10 has score NaN");
}

TEST(HostileVocab, SpecialIds) {
    TinyVocab v;
    v.extra = [](GgufImage& g) { g.u32("tokenizer.ggml.bos_token_id", 12); };
    expectError(v, ErrorKind::BadFile, "tokenizer.ggml.bos_token_id is 12, outside the vocabulary of 12 tokens");
    v.extra = [](GgufImage& g) { g.i32("tokenizer.ggml.eos_token_id", -5); };
    expectError(v, ErrorKind::BadFile, "tokenizer.ggml.eos_token_id is -5, outside the vocabulary of 12 tokens");
    v.extra = [](GgufImage& g) { g.u32("tokenizer.ggml.eot_token_id", 4000000000u); };
    expectError(v, ErrorKind::BadFile, "tokenizer.ggml.eot_token_id is 4000000000, outside the vocabulary of 12 tokens");
    v.extra = [](GgufImage& g) { g.str("tokenizer.ggml.unknown_token_id", "0"); };
    expectError(v, ErrorKind::BadFile, "metadata key tokenizer.ggml.unknown_token_id has type string, expected an integer");
    v.extra = [](GgufImage& g) { g.f32("tokenizer.ggml.padding_token_id", 1.5f); };
    expectError(v, ErrorKind::BadFile, "metadata key tokenizer.ggml.padding_token_id has type f32, expected an integer");
    v.extra = [](GgufImage& g) { g.str("tokenizer.ggml.add_bos_token", "yes"); };
    expectError(v, ErrorKind::BadFile, "metadata key tokenizer.ggml.add_bos_token has type string, expected a bool");
}

// What only SentencePiece checks reaches the user as its own words.
TEST(HostileVocab, SentencePieceRejects) {
    TinyVocab v;
    v.extra = nullptr;  // no unknown_token_id: the pieces' types alone say which is unknown
    (*v.types)[0] = 1;  // no UNKNOWN piece
    expectError(v, ErrorKind::BadFile, "SentencePiece rejected the vocabulary: unk is not defined.");
    (*v.types)[0] = 2;
    (*v.types)[6] = 2;  // two of them
    expectError(v, ErrorKind::BadFile, "SentencePiece rejected the vocabulary: unk is already defined.");
    // With an unknown_token_id the file's word decides (Phi-3 marks <unk> CONTROL and its padding
    // pieces UNKNOWN): that piece is SentencePiece's unknown, the others are never produced.
    v.extra = [](GgufImage& g) { g.u32("tokenizer.ggml.unknown_token_id", 0); };
    (*v.types)[0] = 3;
    auto tok = v.build();
    ASSERT_TRUE(tok) << tok.error().message;
    EXPECT_EQ((*tok)->encode("c", false), (Ids{kSpace, kUnk}));
    v = TinyVocab{};
    (*v.tokens)[9] = "<0x62>";
    (*v.types)[9] = 6;  // one byte token: byte fallback needs all 256
    expectError(v, ErrorKind::BadFile,
                "SentencePiece rejected the vocabulary: there are not 256 byte pieces although `byte_fallback` is true.");
    (*v.tokens)[9] = "<0xZZ>";
    expectError(v, ErrorKind::BadFile, "SentencePiece rejected the vocabulary: byte piece <0xZZ> is invalid.");
}

// Random small vocabularies (random bytes as pieces, random types and scores): each either builds
// and then encodes/decodes random text, or is refused with a message - never a crash (run it
// under ASan/UBSan to make that a strong statement).
TEST(HostileVocab, RandomVocabulariesNeverCrash) {
    std::mt19937 rng(42);
    int built = 0;
    for (int round = 0; round < 300; ++round) {
        TinyVocab v;
        const int n = 1 + int(rng() % 40);
        v.tokens = std::vector<std::string>{"<unk>"};
        v.types = std::vector<int32_t>{2};
        v.scores = std::vector<float>{0};
        for (int k = 1; k < n; ++k) {
            std::string piece(1 + rng() % 4, '\0');
            for (char& c : piece) c = rng() % 4 ? char('a' + rng() % 4) : char(rng() % 256);
            v.tokens->push_back(piece);
            v.types->push_back(rng() % 8 == 0 ? int32_t(rng() % 8) : (rng() % 5 ? 1 : 3 + int32_t(rng() % 3)));
            v.scores->push_back(-float(rng() % 100));
        }
        v.extra = [n, &rng](GgufImage& g) { g.u32("tokenizer.ggml.bos_token_id", uint32_t(rng() % (n + 2))); };
        auto tok = v.build();
        if (!tok) {
            EXPECT_FALSE(tok.error().message.empty());
            continue;
        }
        ++built;
        std::string text(rng() % 30, '\0');
        for (char& c : text) c = rng() % 3 ? char('a' + rng() % 5) : char(rng() % 256);
        for (bool special : {false, true}) {
            const Ids ids = (*tok)->encode(text, true, special);
            for (int32_t id : ids) EXPECT_TRUE(id >= 0 && id < (*tok)->vocabSize());
            Utf8Stream stream;
            for (int32_t id : ids) stream.push((*tok)->tokenBytes(id));
            (void)(*tok)->decode(ids);
        }
    }
    EXPECT_GT(built, 30);  // the test exercises encoding, not only refusals
}

// ---- tokenizer.model files that are not ------------------------------------------------------

std::string writeTemp(const std::string& name, const std::string& bytes) {
    const std::string path = testing::TempDir() + name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
}

void expectModelFileError(const std::string& path, ErrorKind kind, const std::string& message) {
    auto tok = Tokenizer::fromModelFile(path);
    ASSERT_FALSE(tok) << "expected: " << message;
    EXPECT_EQ(tok.error().message, message);
    EXPECT_EQ(tok.error().kind, kind) << message;
}

TEST(HostileModelFile, Errors) {
    expectModelFileError("/nonexistent/tokenizer.model", ErrorKind::Io,
                         "/nonexistent/tokenizer.model: cannot read: No such file or directory");
    expectModelFileError(writeTemp("junk.model", "\xff\xff\xff\xff not a proto"), ErrorKind::BadFile,
                         "junk.model: not a usable SentencePiece model: the data is not a serialized ModelProto");
    expectModelFileError(writeTemp("empty.model", ""), ErrorKind::BadFile,
                         "empty.model: not a usable SentencePiece model: unk is not defined.");
    // pieces { piece: "<unk>" type: UNKNOWN } pieces { piece: "x" type: 9 }: protobuf-lite keeps an
    // unknown enum value aside (SentencePiece sees NORMAL), our reader refuses it.
    const std::string proto = std::string("\x0a\x09\x0a\x05<unk>\x18\x02", 11) + std::string("\x0a\x05\x0a\x01x\x18\x09", 7);
    expectModelFileError(writeTemp("type9.model", proto), ErrorKind::BadFile,
                         "type9.model: not a valid SentencePiece model: piece 1 has type 9");
    const std::string control = std::string("\x0a\x09\x0a\x05<unk>\x18\x02", 11) + std::string("\x0a\x05\x0a\x01" "c\x18\x03", 7) +
                                std::string("\x0a\x03\x0a\x01" "d", 5);  // + a NORMAL piece: SentencePiece needs one
    expectModelFileError(writeTemp("control.model", control), ErrorKind::BadFile,
                         "control.model: piece 1 is a control piece of a single character, which SentencePiece cannot "
                         "encode around");
}

}  // namespace
