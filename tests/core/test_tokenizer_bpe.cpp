// Byte-level BPE and the vocabularies of today's models (Llama 3, Qwen 2/2.5/3, GPT-2, Phi-3,
// Llama 2): llama.cpp's test vectors with exact ids, the special ids and end-of-generation set
// llama.cpp derives (vocab-info.json), special-token splitting, BOS/EOS flags, detokenization and
// invalid UTF-8. The vocabularies are read from ../shared/models/tokenizer (skipped without it).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include <random>

#include "vocab_vectors.h"
#include "gguf/gguf_file.h"
#include "tools/gguf_writer.h"
#include "shared_data.h"
#include "tiny_bpe_vocab.h"
#include "tokenizer/tokenizer.h"

using namespace inferscope;

namespace {

using Ids = std::vector<int32_t>;

using testing_vocab::readFile;

// Built once per vocabulary (the 150k-token ones take ~0.3 s); nullptr when ../shared is absent.
const Tokenizer* sharedVocab(const std::string& name) {
    static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
    if (auto it = cache.find(name); it != cache.end()) return it->second.get();
    const auto path = testing_shared::sharedFile("models/tokenizer/ggml-vocab-" + name + ".gguf");
    std::unique_ptr<Tokenizer> tok;
    if (path) {
        auto file = GgufFile::open(*path);
        EXPECT_TRUE(file) << file.error().message;
        if (file) {
            auto made = Tokenizer::fromGguf(*file);
            EXPECT_TRUE(made) << made.error().message;
            if (made) tok = std::move(*made);
        }
    }
    return (cache[name] = std::move(tok)).get();
}

#define VOCAB_OR_SKIP(var, name)                                                                        \
    const Tokenizer* var##_ptr = sharedVocab(name);                                                     \
    if (!var##_ptr) GTEST_SKIP() << "../shared/models/tokenizer/ggml-vocab-" << (name) << ".gguf not found"; \
    const Tokenizer& var = *var##_ptr

using testing_vocab::Vector;

std::vector<Vector> readVectors(const std::string& name) {
    return testing_vocab::readVectors(testing_shared::sharedDir().string() + "/models/tokenizer/ggml-vocab-" + name + ".gguf");
}

std::string idsText(const Ids& ids) {
    std::string s;
    for (int32_t id : ids) s += std::to_string(id) + " ";
    return s;
}

class LlamaCppVectors : public ::testing::TestWithParam<std::string> {};

// test-tokenizer-0's convention: no BOS/EOS, special-token text not parsed.
TEST_P(LlamaCppVectors, ExactIds) {
    VOCAB_OR_SKIP(tok, GetParam());
    const auto vectors = readVectors(GetParam());
    ASSERT_GT(vectors.size(), 30u);
    for (const auto& v : vectors)
        EXPECT_EQ(tok.encode(v.text, false, false), v.ids)
            << "text \"" << v.text << "\"\n got: " << idsText(tok.encode(v.text, false, false));
}

INSTANTIATE_TEST_SUITE_P(AllVocabularies, LlamaCppVectors,
                         ::testing::Values("llama-bpe", "qwen2", "gpt-2", "phi-3", "llama-spm"),
                         [](const auto& info) {
                             std::string n = info.param;
                             for (char& c : n) if (c == '-') c = '_';
                             return n;
                         });

// ---- what llama.cpp derives from each file (vocab-info.json, llama_cpp_effective) ----------------

class DerivedValues : public ::testing::TestWithParam<std::string> {};

TEST_P(DerivedValues, SpecialIdsFlagsAndEndOfGeneration) {
    VOCAB_OR_SKIP(tok, GetParam());
    const auto info = nlohmann::json::parse(
        readFile(testing_shared::sharedDir().string() + "/models/tokenizer/vocab-info.json"))[GetParam()]["llama_cpp_effective"];
    EXPECT_EQ(tok.vocabSize(), info["n_tokens"].get<int>());
    EXPECT_EQ(tok.bosId(), info["bos"].get<int>());
    EXPECT_EQ(tok.eosId(), info["eos"].get<int>());
    EXPECT_EQ(tok.eotId(), info["eot"].get<int>());
    EXPECT_EQ(tok.padId(), info["pad"].get<int>());
    EXPECT_EQ(tok.addBosByDefault(), info["add_bos"].get<bool>());
    EXPECT_EQ(tok.addEosByDefault(), info["add_eos"].get<bool>());
    const auto eog = info["eog_ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(Ids(tok.endOfGenerationIds().begin(), tok.endOfGenerationIds().end()), eog);
    for (int32_t id : eog) EXPECT_TRUE(tok.isEndOfGeneration(id)) << id;
    EXPECT_FALSE(tok.isEndOfGeneration(tok.encode("Hello", false)[0]));
    EXPECT_EQ(tok.familyName(), info["vocab_type"] == "BPE" ? "bpe" : "sentencepiece");
}

INSTANTIATE_TEST_SUITE_P(AllVocabularies, DerivedValues,
                         ::testing::Values("llama-bpe", "qwen2", "gpt-2", "phi-3", "llama-spm"),
                         [](const auto& info) {
                             std::string n = info.param;
                             for (char& c : n) if (c == '-') c = '_';
                             return n;
                         });

TEST(PreTokenizerName, AsTheFileNamesIt) {
    VOCAB_OR_SKIP(llama3, "llama-bpe");
    VOCAB_OR_SKIP(qwen, "qwen2");
    EXPECT_EQ(llama3.preTokenizerName(), "llama-bpe");
    EXPECT_EQ(qwen.preTokenizerName(), "qwen2");
}

// ---- special tokens split before pre-tokenization ------------------------------------------

Ids concat(std::initializer_list<Ids> parts) {
    Ids all;
    for (const Ids& p : parts) all.insert(all.end(), p.begin(), p.end());
    return all;
}

TEST(SpecialTokens, Llama3HeaderParsedOnlyWhenAsked) {
    VOCAB_OR_SKIP(tok, "llama-bpe");
    const std::string text = "<|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>";
    // The fragments between special tokens are tokenized on their own: the regex never crosses them.
    EXPECT_EQ(tok.encode(text, false, true),
              concat({{128006}, tok.encode("user", false), {128007}, tok.encode("\n\nHi there", false), {128009}}));
    const Ids plain = tok.encode(text, false, false);
    for (int32_t id : {128006, 128007, 128009}) EXPECT_EQ(std::count(plain.begin(), plain.end(), id), 0) << id;
    EXPECT_EQ(tok.decode(plain), text);
}

TEST(SpecialTokens, QwenUserDefinedAlwaysSplitControlOnlyWhenParsed) {
    VOCAB_OR_SKIP(tok, "qwen2");
    // <think> 151667 and </think> 151668 are USER_DEFINED: matched even without parse_special.
    EXPECT_EQ(tok.encode("<think>hmm</think>ok", false, false),
              concat({{151667}, tok.encode("hmm", false), {151668}, tok.encode("ok", false)}));
    // <|im_start|> 151644 and <|im_end|> 151645 are CONTROL: text unless special tokens are parsed.
    EXPECT_EQ(tok.encode("<|im_start|>user\nHi<|im_end|>\n", false, true),
              concat({{151644}, tok.encode("user\nHi", false), {151645}, tok.encode("\n", false)}));
    const Ids plain = tok.encode("<|im_start|>", false, false);
    EXPECT_GT(plain.size(), 1u);
    EXPECT_EQ(tok.decode(plain), "<|im_start|>");
    // The FIM tokens are CONTROL in llama.cpp (HF would always match them).
    EXPECT_GT(tok.encode("<|fim_prefix|>", false, false).size(), 1u);
    EXPECT_EQ(tok.encode("<|fim_prefix|>", false, true), Ids{151659});
}

TEST(SpecialTokens, Phi3NameRuleEatsTheNewlineAfterSpecials) {
    VOCAB_OR_SKIP(tok, "phi-3");
    // README 3.4: llama.cpp gives [32010, 6324, 32007, 32001]: the newlines are eaten and "Hi"
    // gets SentencePiece's prefix space.
    EXPECT_EQ(tok.encode("<|user|>\nHi<|end|>\n<|assistant|>\n", false, true), (Ids{32010, 6324, 32007, 32001}));
    // <|endoftext|> keeps what follows.
    EXPECT_EQ(tok.encode("<|endoftext|>\nHi", false, true), concat({{32000}, tok.encode("\nHi", false)}));
}

// ---- BOS / EOS as the file says -------------------------------------------------------------

TEST(BosEos, AddedPerTheFilesFlags) {
    VOCAB_OR_SKIP(llama3, "llama-bpe");
    VOCAB_OR_SKIP(qwen, "qwen2");
    VOCAB_OR_SKIP(gpt2, "gpt-2");
    EXPECT_EQ(llama3.encode("", llama3.addBosByDefault()), Ids{128000});
    EXPECT_EQ(qwen.encode("", qwen.addBosByDefault()), Ids{});
    EXPECT_EQ(gpt2.encode("", gpt2.addBosByDefault()), Ids{});
    EXPECT_EQ(llama3.encode("Hi", true, false, true), concat({{128000}, llama3.encode("Hi", false), {128001}}));
    // llama.cpp does not deduplicate a BOS written in the text.
    EXPECT_EQ(llama3.encode("<|begin_of_text|>Hi", true, true), concat({{128000, 128000}, llama3.encode("Hi", false)}));
}

// ---- detokenization -------------------------------------------------------------------------

TEST(Detokenize, ByteLevelRoundTripsEveryVector) {
    VOCAB_OR_SKIP(tok, "qwen2");  // clean_spaces off: decode gives back the exact text
    for (const auto& v : readVectors("qwen2")) EXPECT_EQ(tok.decode(v.ids), v.text);
}

TEST(Detokenize, CleanSpacesWhereLlamaCppAppliesIt) {
    VOCAB_OR_SKIP(llama3, "llama-bpe");
    VOCAB_OR_SKIP(qwen, "qwen2");
    // README 3.4 (cases code_cpp and punct_runs).
    EXPECT_EQ(llama3.decode(llama3.encode("v[0] != 0", false)), "v[0]!= 0");
    EXPECT_EQ(llama3.decode(llama3.encode("??? ...", false)), "???...");
    EXPECT_EQ(llama3.decode(llama3.encode("it ' s he 's I 'm we 're they 've don 't", false)),
              "it's he's I'm we're they've don 't");
    EXPECT_EQ(qwen.decode(qwen.encode("??? ...", false)), "??? ...");
}

TEST(Detokenize, TokenBytesAreTheDecodedAlphabet) {
    VOCAB_OR_SKIP(tok, "llama-bpe");
    const Ids ids = tok.encode(" hello\n", false);
    ASSERT_EQ(ids.size(), 2u);
    EXPECT_EQ(tok.tokenBytes(ids[0]), " hello");
    EXPECT_EQ(tok.piece(ids[0]), "\xC4\xA0hello");  // Ġhello
    EXPECT_EQ(tok.tokenBytes(ids[1]), "\n");
    EXPECT_EQ(tok.tokenBytes(128009), "");           // control: nothing visible
    EXPECT_EQ(tok.tokenBytes(-1), "");
}

// ---- invalid UTF-8 as llama.cpp's BPE handles it --------------------------------------------

TEST(InvalidUtf8, ReplacementCharacterPerBadByteOverlongReadSurrogatesKept) {
    VOCAB_OR_SKIP(tok, "qwen2");
    const std::string fffd = "\xEF\xBF\xBD";
    EXPECT_EQ(tok.encode("a\xFF" "b", false), tok.encode("a" + fffd + "b", false));
    EXPECT_EQ(tok.encode("\xE2\x82", false), tok.encode(fffd + fffd, false));  // truncated: one per byte
    EXPECT_EQ(tok.encode("\xC0\xAF", false), tok.encode("/", false));         // overlong accepted
    // Above U+10FFFF llama.cpp aborts; here it is one U+FFFD.
    EXPECT_EQ(tok.encode("x\xF4\x90\x80\x80", false), tok.encode("x" + fffd, false));
    // A surrogate passes through as its three bytes.
    EXPECT_EQ(tok.decode(tok.encode("a\xED\xA0\x80 b", false)), "a\xED\xA0\x80 b");
}

// ---- invalid UTF-8 with SentencePiece vocabularies: byte fallback, as llama.cpp ---------------

// Ids from llama.cpp c392e50's llama-tokenize (--no-bos --no-parse-special --no-escape, the text
// read from a file) on both SentencePiece vocabularies: where SentencePiece would write U+FFFD,
// llama.cpp keeps the bytes. A lead byte claims its sequence's length even when the bytes after it
// do not continue it ("\xE2\x82" + "b": <0xE2> <0x82> <0x62>; "\xE9" takes two bytes of the ▁ after
// it), which a split around the bad bytes would not give.
TEST(InvalidUtf8, SentencePieceKeepsTheBytesAsLlamaCpp) {
    const std::vector<std::pair<std::string, Ids>> cases = {
        {"\xFF", {29871, 258}},
        {"a\xE2\x82" "b c", {263, 229, 133, 101, 274}},
        {"Hello \x80world", {15043, 29871, 131, 11526}},
        {"\xC0\xAF", {29871, 195, 178}},                       // overlong '/'
        {"\xED\xA0\x80", {29871, 240, 163, 131}},              // a surrogate
        {"caf\xE9 au lait", {274, 2142, 236, 229, 153, 132, 585, 425, 277}},
        {"\xF0\x9F\xA6", {29871, 243, 162, 169}},              // cut short at the end
        {"日本\x80語", {29871, 30325, 30346, 131, 30968}},
        {" \xFE\xFF ", {259, 257, 258, 229, 153, 132}},
        {"🦙\xF4\x90\x80\x80", {29871, 243, 162, 169, 156, 247, 147, 131, 131}},  // past U+10FFFF
        {"\x80\x80\x80the", {29871, 131, 131, 131, 1552}},
        {"the\xE2\x96", {278, 229, 153}},
        {"  \xE2\x96\x81\x81x", {268, 132, 29916}},
    };
    for (const char* name : {"llama-spm", "phi-3"}) {
        VOCAB_OR_SKIP(tok, name);
        SCOPED_TRACE(name);
        for (const auto& [text, ids] : cases) EXPECT_EQ(tok.encode(text, false), ids) << idsText(tok.encode(text, false));
    }
    // A user-defined piece splits the text first (Phi-3's </s>); each side is its own fragment.
    VOCAB_OR_SKIP(llama, "llama-spm");
    EXPECT_EQ(llama.encode("a</s>\x80" "b", false), (Ids{263, 829, 29879, 29958, 131, 29890}));
    VOCAB_OR_SKIP(phi3, "phi-3");
    EXPECT_EQ(phi3.encode("a</s>\x80" "b", false), (Ids{263, 2, 29871, 131, 29890}));
    // Every byte comes back: the tokens' bytes joined are the text behind the dummy-prefix space.
    std::string all;
    for (int b = 1; b < 256; ++b) all.push_back(char(b));
    std::string joined;
    for (int32_t id : llama.encode(all, false)) joined += llama.tokenBytes(id);
    EXPECT_EQ(joined, " " + all);
}

TEST(LongText, LongRunsOfOneClass) {
    VOCAB_OR_SKIP(tok, "llama-bpe");
    // One pre-token of 256 KiB (letters), and 256 KiB of spaces: PCRE2 and the merge queue cope.
    const std::string letters(1 << 18, 'a');
    const Ids ids = tok.encode(letters, false);
    EXPECT_FALSE(ids.empty());
    EXPECT_EQ(tok.decode(ids), letters);
    const std::string spaces(1 << 18, ' ');
    EXPECT_EQ(tok.decode(tok.encode(spaces + "x", false)), spaces + "x");
}

// ---- a tiny vocabulary whose every id can be worked out by hand (fuzz/tiny_bpe_vocab.h) ---------

Result<std::unique_ptr<Tokenizer>> buildFrom(const GgufWriter& w) {
    auto bytes = w.toBytes();
    if (!bytes) return std::unexpected(bytes.error());
    auto file = GgufFile::parse(MappedFile::fromBytes(std::move(*bytes)));
    if (!file) return std::unexpected(file.error());
    return Tokenizer::fromGguf(*file);
}

std::unique_ptr<Tokenizer> tinyBpe(const std::string& pre) {
    GgufWriter w;
    tiny_bpe::addVocabulary(w, pre);
    auto tok = buildFrom(w);
    EXPECT_TRUE(tok) << tok.error().message;
    return tok ? std::move(*tok) : nullptr;
}

using namespace tiny_bpe;

TEST(TinyBpe, MergesByRankLeftmostOnTies) {
    auto tok = tinyBpe("gpt-2");
    ASSERT_TRUE(tok);
    EXPECT_EQ(tok->encode("the", false), (Ids{'t', kHe}));     // "h e" merges, "t he" is no merge
    EXPECT_EQ(tok->encode(" the", false), (Ids{kSpaceThe}));   // h+e (rank 0), Ġ+t (1), Ġt+he (2)
    EXPECT_EQ(tok->encode("aaa", false), (Ids{kAa, 'a'}));     // two equal pairs: the left one
    EXPECT_EQ(tok->encode("zz", false), (Ids{'z', 'z'}));
    EXPECT_EQ(tok->encode(" ", false), (Ids{' '}));            // the byte 0x20 is the token "Ġ", id 32
}

TEST(TinyBpe, DigitsPerPreTokenizer) {
    auto gpt2 = tinyBpe("gpt-2"), llama3 = tinyBpe("llama-bpe"), qwen2 = tinyBpe("qwen2");
    ASSERT_TRUE(gpt2 && llama3 && qwen2);
    // GPT-2: one run of digits, merged: 1+2 at 0 and at 5 (rank 4) before 12+3 (rank 5).
    EXPECT_EQ(gpt2->encode("1234512", false), (Ids{k123, '4', '5', k12}));
    // Llama 3: digits in threes from the left: 123 | 451 | 2.
    EXPECT_EQ(llama3->encode("1234512", false), (Ids{k123, '4', '5', '1', '2'}));
    // Qwen2: one by one.
    EXPECT_EQ(qwen2->encode("1234512", false), (Ids{'1', '2', '3', '4', '5', '1', '2'}));
}

TEST(TinyBpe, IgnoreMergesOnlyForLlama3) {
    auto gpt2 = tinyBpe("gpt-2"), llama3 = tinyBpe("llama-bpe");
    ASSERT_TRUE(gpt2 && llama3);
    EXPECT_EQ(llama3->encode(" xyz", false), (Ids{kSpaceXyz}));
    EXPECT_EQ(gpt2->encode(" xyz", false), (Ids{' ', 'x', 'y', 'z'}));
}

TEST(TinyBpe, ContractionsCaseByPreTokenizer) {
    auto gpt2 = tinyBpe("gpt-2"), llama3 = tinyBpe("llama-bpe"), qwen2 = tinyBpe("qwen2");
    ASSERT_TRUE(gpt2 && llama3 && qwen2);
    // Llama 3 and Qwen2: "'M" is a contraction (any case), one piece, merged by "' M".
    EXPECT_EQ(llama3->encode("I'M", false), (Ids{'I', kQuoteM}));
    EXPECT_EQ(qwen2->encode("I'M", false), (Ids{'I', kQuoteM}));
    // GPT-2: lowercase contractions only, so ' and M are separate pieces and cannot merge.
    EXPECT_EQ(gpt2->encode("I'M", false), (Ids{'I', '\'', 'M'}));
}

TEST(TinyBpe, SpecialTokensFlagsAndEndOfGeneration) {
    auto tok = tinyBpe("qwen2");
    ASSERT_TRUE(tok);
    EXPECT_EQ(tok->encode("<think>x<|im_end|>", false, true), (Ids{kThink, 'x', kImEnd}));
    const Ids plain = tok->encode("<think>x<|im_end|>", false, false);  // user-defined still split
    ASSERT_GE(plain.size(), 3u);
    EXPECT_EQ(plain[0], kThink);
    EXPECT_EQ(std::count(plain.begin(), plain.end(), kImEnd), 0);
    EXPECT_EQ(tok->decode(plain), "<think>x<|im_end|>");
    EXPECT_EQ(tok->eotId(), kImEnd);  // <|im_end|> is preferred over <|endoftext|>
    EXPECT_EQ(Ids(tok->endOfGenerationIds().begin(), tok->endOfGenerationIds().end()), (Ids{kEndOfText, kImEnd}));
    EXPECT_FALSE(tok->addBosByDefault());
    EXPECT_TRUE(tinyBpe("llama-bpe")->addBosByDefault());  // llama.cpp's default for Llama 3
    EXPECT_FALSE(tinyBpe("gpt-2")->addBosByDefault());
    EXPECT_EQ(tinyBpe("")->preTokenizerName(), "");
}

TEST(TinyBpe, CharacterOutsideTheAlphabetDecodesAsLlamaCppSaysIt) {
    GgufWriter w;
    const std::vector<std::string> tokens = {"a", "\xE2\x82\xAC"};  // "€" is no GPT-2 alphabet character
    const std::vector<std::string> merges;
    w.add("tokenizer.ggml.model", GgufMetaValue::string("gpt2"));
    w.add("tokenizer.ggml.tokens", GgufMetaValue::stringArray(std::span<const std::string>(tokens)));
    w.add("tokenizer.ggml.merges", GgufMetaValue::stringArray(std::span<const std::string>(merges)));
    auto tok = buildFrom(w);
    ASSERT_TRUE(tok) << tok.error().message;
    EXPECT_EQ((*tok)->tokenBytes(1), "[UNK_BYTE_0xe282ac\xE2\x82\xAC]");
    EXPECT_EQ((*tok)->encode("ab", false), (Ids{0}));  // "b" is no token: dropped, as llama.cpp does
}

// Overlapping special pieces split as llama.cpp's tokenizer_st_partition does: the longest piece
// first, wherever it is, then the shorter ones in what is left. "ab" (256) and "bcd" (257), both
// user-defined: in "abcd" the longer "bcd" wins though "ab" starts first; in "abab bcd" nothing
// overlaps. (Taking the longest piece at each position from the left gave "ab" + "c" + "d".)
TEST(TinyBpe, OverlappingSpecialsSplitLongestFirstAsLlamaCpp) {
    GgufWriter w;
    std::vector<std::string> tokens;
    for (unsigned b = 0; b < 256; ++b) tokens.push_back(alphabetChar(b));
    tokens.push_back("ab");
    tokens.push_back("bcd");
    tokens.push_back("<x>");
    std::vector<int32_t> types(tokens.size(), 1);
    types[256] = types[257] = 4;
    types[258] = 3;
    const std::vector<std::string> merges;
    w.add("tokenizer.ggml.model", GgufMetaValue::string("gpt2"));
    w.add("tokenizer.ggml.pre", GgufMetaValue::string("gpt-2"));
    w.add("tokenizer.ggml.tokens", GgufMetaValue::stringArray(std::span<const std::string>(tokens)));
    w.add("tokenizer.ggml.token_type", GgufMetaValue::array(std::span<const int32_t>(types)));
    w.add("tokenizer.ggml.merges", GgufMetaValue::stringArray(std::span<const std::string>(merges)));
    auto tok = buildFrom(w);
    ASSERT_TRUE(tok) << tok.error().message;
    EXPECT_EQ((*tok)->encode("abcd", false), (Ids{'a', 257}));
    EXPECT_EQ((*tok)->encode("xabcdab", false), (Ids{'x', 'a', 257, 256}));
    EXPECT_EQ((*tok)->encode("abab bcd", false), (Ids{256, 256, ' ', 257}));
    // A control piece splits only when special tokens are parsed.
    EXPECT_EQ((*tok)->encode("a<x>bcd", false, true), (Ids{'a', 258, 257}));
    EXPECT_EQ((*tok)->encode("a<x>bcd", false, false), (Ids{'a', '<', 'x', '>', 257}));
}

TEST(TinyBpe, RefusedWithAReason) {
    auto expectError = [](const std::function<void(GgufWriter&)>& edit, ErrorKind kind, const std::string& message) {
        GgufWriter w;
        edit(w);
        auto tok = buildFrom(w);
        ASSERT_FALSE(tok) << message;
        EXPECT_EQ(tok.error().kind, kind);
        EXPECT_EQ(tok.error().message, message);
    };
    expectError([](GgufWriter& w) { addVocabulary(w, "tekken"); }, ErrorKind::Unsupported,
                "pre-tokenizer \"tekken\" (tokenizer.ggml.pre) is not supported: llama-bpe/llama3, qwen2, gpt-2 and their aliases are");
    expectError(
        [](GgufWriter& w) {
            const std::vector<std::string> tokens = {"a"};
            w.add("tokenizer.ggml.model", GgufMetaValue::string("gpt2"));
            w.add("tokenizer.ggml.tokens", GgufMetaValue::stringArray(std::span<const std::string>(tokens)));
        },
        ErrorKind::BadFile, "metadata key tokenizer.ggml.merges is missing");
    expectError(
        [](GgufWriter& w) {
            const std::vector<std::string> tokens = {"a"};
            w.add("tokenizer.ggml.model", GgufMetaValue::string("gpt2"));
            w.add("tokenizer.ggml.tokens", GgufMetaValue::stringArray(std::span<const std::string>(tokens)));
            w.add("tokenizer.ggml.merges", GgufMetaValue::u32(3));
        },
        ErrorKind::BadFile, "metadata key tokenizer.ggml.merges has type u32, expected an array of strings");
}

// Random vocabularies (random byte strings as tokens and merges, random types and pre-tokenizer)
// and random text: each vocabulary builds or is refused with a message, encoding gives ids of the
// vocabulary, nothing crashes (run under ASan/UBSan in scripts/ci-sanitize.sh).
TEST(TinyBpe, RandomVocabulariesAndTextNeverCrash) {
    std::mt19937 rng(7);
    auto randomBytes = [&](size_t maxLen) {
        std::string s(1 + rng() % maxLen, '\0');
        for (char& c : s) c = char(rng() % 4 == 0 ? rng() % 256 : "ab \n1'<|>"[rng() % 10]);
        return s;
    };
    const char* pres[] = {"llama-bpe", "qwen2", "gpt-2", "default", "", "nonsense"};
    int built = 0;
    for (int round = 0; round < 200; ++round) {
        std::vector<std::string> tokens, merges;
        const int n = 1 + int(rng() % 30);
        for (int i = 0; i < n; ++i) tokens.push_back(i < 12 && rng() % 2 ? tiny_bpe::alphabetChar(rng() % 256) : randomBytes(6));
        for (int i = int(rng() % 20); i > 0; --i) merges.push_back(randomBytes(5));
        std::vector<int32_t> types;
        for (int i = 0; i < n; ++i) types.push_back(int32_t(1 + rng() % 6));
        GgufWriter w;
        w.add("tokenizer.ggml.model", GgufMetaValue::string("gpt2"));
        if (const char* pre = pres[rng() % 6]; *pre) w.add("tokenizer.ggml.pre", GgufMetaValue::string(pre));
        w.add("tokenizer.ggml.tokens", GgufMetaValue::stringArray(std::span<const std::string>(tokens)));
        w.add("tokenizer.ggml.token_type", GgufMetaValue::array(std::span<const int32_t>(types)));
        w.add("tokenizer.ggml.merges", GgufMetaValue::stringArray(std::span<const std::string>(merges)));
        w.add("tokenizer.ggml.eos_token_id", GgufMetaValue::u32(rng() % (n + 2)));
        auto tok = buildFrom(w);
        if (!tok) {
            EXPECT_FALSE(tok.error().message.empty());
            continue;
        }
        ++built;
        for (int k = 0; k < 5; ++k) {
            const std::string text = randomBytes(40);
            for (bool special : {false, true}) {
                const Ids ids = (*tok)->encode(text, true, special, true);
                for (int32_t id : ids) ASSERT_TRUE(id >= 0 && id < n) << id;
                (void)(*tok)->decode(ids);
            }
        }
    }
    EXPECT_GT(built, 50);
}

}  // namespace
