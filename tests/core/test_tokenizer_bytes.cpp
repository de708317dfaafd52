// Arbitrary bytes through the tokenizer: decode(encode(text)) is text with exactly two
// normalizations, and no other change (NUL, control characters, BOMs, runs of spaces, any valid
// UTF-8 character come back as they were, through byte fallback when the vocabulary lacks them):
//   1. each byte that is not part of a valid UTF-8 character (stray continuation bytes, C0/C1 and
//      F5..FF leads, overlong forms, surrogates, code points past U+10FFFF, a sequence cut short)
//      becomes U+FFFD - SentencePiece's decode does it (and, for a tokenizer.model, its normalizer
//      before encoding);
//   2. U+2581 (▁, SentencePiece's escaped space) comes back as a space (GGUF vocabularies: unless
//      a cut-short sequence before it took its bytes into byte tokens, as llama.cpp's merge does;
//      then it comes back as ▁, so those are compared with every ▁ read as a space).
// The streamed form (tokenBytes through Utf8Stream, what the app and the CLI show) is the same
// text with the dummy-prefix space in front. GGUF vocabularies keep every byte, as llama.cpp
// does: the token bytes joined are exactly " " + text, up to ▁ and space. The reference below is
// written independently of Utf8Stream and of SentencePiece.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"

using namespace inferscope;

namespace {

const std::string kFffd = "\xEF\xBF\xBD";

// The reference: the two normalizations above, by the Unicode standard's table of well-formed
// byte sequences (Table 3-7), replacing one byte at a time.
std::string normalized(std::string_view s) {
    std::string out;
    auto byte = [&](size_t i) { return uint8_t(s[i]); };
    for (size_t i = 0; i < s.size();) {
        const uint8_t b = byte(i);
        size_t len = 0;
        uint8_t lo = 0x80, hi = 0xBF;
        if (b < 0x80) len = 1;
        else if (b >= 0xC2 && b <= 0xDF) len = 2;
        else if (b == 0xE0) len = 3, lo = 0xA0;
        else if (b >= 0xE1 && b <= 0xEC) len = 3;
        else if (b == 0xED) len = 3, hi = 0x9F;
        else if (b >= 0xEE && b <= 0xEF) len = 3;
        else if (b == 0xF0) len = 4, lo = 0x90;
        else if (b >= 0xF1 && b <= 0xF3) len = 4;
        else if (b == 0xF4) len = 4, hi = 0x8F;
        bool ok = len > 0 && i + len <= s.size();
        for (size_t k = 1; ok && k < len; ++k) ok = byte(i + k) >= (k == 1 ? lo : 0x80) && byte(i + k) <= (k == 1 ? hi : 0xBF);
        if (!ok) {
            out += kFffd;
            ++i;
            continue;
        }
        const std::string_view ch = s.substr(i, len);
        out += ch == "\xE2\x96\x81" ? std::string_view(" ") : ch;
        i += len;
    }
    return out;
}

// Random bytes of every kind: ASCII (controls and NUL included), spaces, valid characters of 2, 3
// and 4 bytes (U+2581, U+FFFD and the BOM among them), lone continuation and lead bytes, overlong
// and surrogate forms, sequences cut short.
std::string randomBytes(std::mt19937& rng) {
    static const std::vector<std::string> pieces = {
        " ", "  ", "\t", "\n", "\r\n", std::string(1, '\0'), "\x7f", "\xE2\x96\x81", "\xEF\xBF\xBD", "\xEF\xBB\xBF", "é", "ß",
        "日本", "🦙", "👩‍👩‍👧", "\xF4\x8F\xBF\xBF", "\xC0\x80", "\xC1\xBF", "\xE0\x80\x80", "\xED\xA0\x80", "\xF4\x90\x80\x80",
        "\xF8\x88\x80\x80\x80", "\xE2\x82", "\xF0\x9F\xA6", "\x80", "\xBF", "\xFE", "\xFF", "<s>", "</s>", "<0x41>"};
    std::string s;
    const int parts = int(rng() % 12);
    for (int p = 0; p < parts; ++p) {
        const uint32_t r = rng();
        if (r % 4 == 0) s += pieces[(r >> 2) % pieces.size()];
        else if (r % 4 == 1) s += char(r >> 8);                  // any byte
        else s += char('a' + (r >> 8) % 26);                      // text the vocabulary has
    }
    return s;
}

// Every U+2581 as a space.
std::string spaced(std::string_view s) {
    std::string out;
    for (size_t i = 0; i < s.size();) {
        if (s.substr(i).starts_with("\xE2\x96\x81")) {
            out.push_back(' ');
            i += 3;
        } else {
            out.push_back(s[i++]);
        }
    }
    return out;
}

const Tokenizer& tok(int which) {
    static auto stories = Tokenizer::fromGguf(*GgufFile::open(std::string(INFERSCOPE_RESOURCES_DIR) + "/models/stories260K.gguf"));
    static auto llama = Tokenizer::fromGguf(*GgufFile::open(std::string(INFERSCOPE_TEST_DATA_DIR) + "/ggml-vocab-llama-spm.gguf"));
    static auto model = Tokenizer::fromModelFile(std::string(INFERSCOPE_TEST_DATA_DIR) + "/tokenizer.model");
    return which == 0 ? **stories : which == 1 ? **llama : **model;
}

}  // namespace

TEST(TokenizerBytes, ReferenceNormalization) {
    EXPECT_EQ(normalized("a\xC0\xAFz"), "a" + kFffd + kFffd + "z");
    EXPECT_EQ(normalized("\xE2\x96\x81x\xE2\x96"), " x" + kFffd + kFffd);
    EXPECT_EQ(normalized(std::string("\0\xEF\xBB\xBF", 4)), std::string("\0\xEF\xBB\xBF", 4));
}

TEST(TokenizerBytes, RandomByteStringsRoundTripUpToTheTwoNormalizations) {
    std::mt19937 rng(20240611);
    for (int which : {0, 1, 2}) {
        SCOPED_TRACE(which == 0 ? "stories260K (512 tokens)" : which == 1 ? "Llama 2 GGUF vocabulary" : "Llama 2 tokenizer.model");
        const Tokenizer& t = tok(which);
        int fallbacks = 0;
        for (int round = 0; round < 1500; ++round) {
            const std::string text = randomBytes(rng);
            const std::vector<int32_t> ids = t.encode(text, false);
            const std::string expected = normalized(text);
            const bool gguf = which != 2;
            ASSERT_EQ(gguf ? spaced(t.decode(ids)) : t.decode(ids), expected) << "round " << round;
            Utf8Stream stream;
            std::string streamed, joined;
            for (int32_t id : ids) {
                streamed += stream.push(t.tokenBytes(id));
                joined += t.tokenBytes(id);
                fallbacks += t.type(id) == TokenType::Byte;
            }
            streamed += stream.flush();
            ASSERT_EQ(gguf ? spaced(streamed) : streamed, text.empty() ? "" : " " + expected) << "round " << round;
            if (gguf) {
                ASSERT_EQ(spaced(joined), text.empty() ? "" : " " + spaced(text)) << "round " << round;  // every byte kept
            }
            if (expected == text) {
                EXPECT_EQ(t.decode(ids), text);  // valid UTF-8 without U+2581: exact
            }
        }
        EXPECT_GT(fallbacks, 1000);  // byte fallback was exercised, not only whole pieces
    }
}
