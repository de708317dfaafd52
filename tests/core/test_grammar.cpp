// GBNF parsing (its errors, with line and column), incremental matching over bytes, and the
// token mask against a brute-force check of every token.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

#include "grammar/gbnf.h"
#include "grammar/grammar_matcher.h"
#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"

using namespace inferscope;
using namespace inferscope::grammar;

namespace {

const std::string kData = INFERSCOPE_TEST_DATA_DIR;

std::string readFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::shared_ptr<const Grammar> grammarOf(std::string_view text) {
    auto g = parseGbnf(text);
    EXPECT_TRUE(g.has_value()) << (g ? "" : g.error().message);
    if (!g) return nullptr;
    return std::make_shared<const Grammar>(std::move(*g));
}

std::shared_ptr<const Grammar> grammarFile(const std::string& name) { return grammarOf(readFile(kData + "/grammars/" + name)); }

std::string parseError(std::string_view text, const GbnfLimits& limits = {}) {
    auto g = parseGbnf(text, limits);
    return g ? std::string("(parsed)") : g.error().message;
}

// Whether the whole text is a sentence of the grammar.
bool matches(const std::shared_ptr<const Grammar>& g, std::string_view text) {
    GrammarMatcher m(g);
    return m.acceptBytes(text).has_value() && m.isComplete();
}

}  // namespace

TEST(Gbnf, ParsesTheExampleGrammars) {
    for (const char* name : {"json.gbnf", "arithmetic.gbnf", "list.gbnf"}) {
        auto g = parseGbnf(readFile(kData + "/grammars/" + name));
        ASSERT_TRUE(g) << name << ": " << g.error().message;
        EXPECT_EQ(g->rules[g->root].name, "root");
    }
}

TEST(Gbnf, SyntaxOfLiteralsClassesAndRepetitions) {
    auto g = grammarOf(R"(root ::= "a\x41\u00e9\n" [^0-9\]]? [\-x-z]{2} ( "p" | "q" )* "!"{1,3} . # comment
)");
    ASSERT_TRUE(g);
    EXPECT_TRUE(matches(g, "aAé\n-z!?"));
    EXPECT_TRUE(matches(g, "aAé\nk-xpqp!!!\xF0\x9F\x98\x80"));
    EXPECT_FALSE(matches(g, "aAé\n]-x!!?"));          // ']' is excluded
    EXPECT_FALSE(matches(g, "aAé\nk-x!!!!?"));        // four '!'
    EXPECT_FALSE(matches(g, "aAé\nk-x!"));            // '.' missing
    EXPECT_FALSE(matches(g, "aAé\n5-x!?"));           // a digit is excluded
}

TEST(Gbnf, RulesSpanLinesInsideGroupsAndAfterBars) {
    auto g = grammarOf("root ::= (\n  \"a\"\n  | \"b\" ) |\n  \"c\"\nother ::= \"d\"\n");
    ASSERT_TRUE(g);
    EXPECT_TRUE(matches(g, "a"));
    EXPECT_TRUE(matches(g, "b"));
    EXPECT_TRUE(matches(g, "c"));
    EXPECT_FALSE(matches(g, "d"));
}

TEST(Gbnf, HostileGrammarsGetErrorsWithLineAndColumn) {
    EXPECT_EQ(parseError("root ::= item\n"), "grammar line 1, column 10: rule 'item' is used but never defined");
    EXPECT_EQ(parseError("item ::= \"x\"\n"), "grammar line 2, column 1: no rule named 'root'");
    EXPECT_EQ(parseError("root ::= \"a\"\nroot ::= \"b\"\n"),
              "grammar line 2, column 1: rule 'root' is defined twice (first at line 1, column 1)");
    EXPECT_EQ(parseError("root ::= expr\nexpr ::= expr \"+\" num | num\nnum ::= [0-9]+\n"),
              "grammar line 2, column 1: left recursion: rule 'expr' can reach itself before matching any character");
    EXPECT_EQ(parseError("root ::= a\na ::= b? a \"x\"\nb ::= \"y\"\n"),
              "grammar line 2, column 1: left recursion: rule 'a' can reach itself before matching any character");
    EXPECT_EQ(parseError("root ::= (\"a\"?)*\n"),
              "grammar line 1, column 16: this repetition repeats something that can match nothing (left recursion)");
    EXPECT_EQ(parseError("root ::= \"a\"{3000}\n"), "grammar line 1, column 14: repetition bound above the limit of 2000");
    EXPECT_EQ(parseError("root ::= \"a\"{5,2}\n"),
              "grammar line 1, column 13: repetition {5,2} has its maximum below its minimum");
    EXPECT_EQ(parseError("root ::= " + std::string(70, '(') + "\"a\"" + std::string(70, ')') + "\n"),
              "grammar line 1, column 74: groups nested more than 64 deep");
    EXPECT_EQ(parseError("root ::= \"abc\n"), "grammar line 1, column 10: unterminated literal");
    EXPECT_EQ(parseError("root ::= [a-z\n"), "grammar line 1, column 10: unterminated character class");
    EXPECT_EQ(parseError("root ::= [z-a]\n"), "grammar line 1, column 13: range end U+0061 is below its start U+007A");
    EXPECT_EQ(parseError("root ::= \"\\q\"\n"), "grammar line 1, column 11: unknown escape '\\q'");
    EXPECT_EQ(parseError("root ::= \"\\xZ1\"\n"), "grammar line 1, column 11: escape expects 2 hexadecimal digits");
    EXPECT_EQ(parseError("root ::= * \"a\"\n"), "grammar line 1, column 10: '*' repeats nothing");
    EXPECT_EQ(parseError("root ::= \"a\" )\n"), "grammar line 1, column 14: unexpected ')'");
    EXPECT_EQ(parseError("root = \"a\"\n"), "grammar line 1, column 6: expected '::=' after the rule name 'root'");
    EXPECT_EQ(parseError("root<x> ::= \"a\"\n"), "grammar line 1, column 5: token references (<...>) are not supported");
    GbnfLimits small;
    small.maxTextBytes = 16;
    EXPECT_EQ(parseError("root ::= \"aaaaaaaaaaaaaaa\"\n", small), "grammar of 27 bytes, more than the limit of 16");
    small = {};
    small.maxElements = 1000;
    EXPECT_EQ(parseError("x ::= \"abcdefghij\"\nroot ::= x{2000}\n", small),
              "grammar line 2, column 11: the grammar expands to more than 1000 elements");
}

TEST(GrammarMatcher, JsonAcceptsValidAndRefusesInvalidAtTheByte) {
    auto g = grammarFile("json.gbnf");
    ASSERT_TRUE(g);
    EXPECT_TRUE(matches(g, R"({"a": [1, -2.5e+3, "x\u00e9\n"], "b": {"c": null, "d": true}})"));
    EXPECT_TRUE(matches(g, "{\"名前\": \"😀 é\"}"));
    EXPECT_TRUE(matches(g, "{}"));
    EXPECT_FALSE(matches(g, R"({"a": 1)"));  // not complete
    GrammarMatcher m(g);
    auto r = m.acceptBytes(R"({"a" 1})");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message, "byte 5 (0x31) is not allowed by the grammar here");
    EXPECT_TRUE(m.acceptBytes(R"({"a")"));  // the failed call left the state unchanged
    EXPECT_FALSE(m.isComplete());
    auto zero = m.acceptBytes(": 01");
    ASSERT_FALSE(zero);
    EXPECT_EQ(zero.error().message, "byte 3 (0x31) is not allowed by the grammar here");  // no leading zeros
    GrammarMatcher bad(g);
    EXPECT_FALSE(bad.acceptBytes("{\"\xC3\x28\"}"));  // invalid UTF-8 continuation
    GrammarMatcher partial(g);
    EXPECT_TRUE(partial.acceptBytes("{\"\xE2\x82"));  // half of '€': fine so far
    EXPECT_TRUE(partial.acceptBytes("\xAC\": 1}"));
    EXPECT_TRUE(partial.isComplete());
    EXPECT_TRUE(partial.isFinished() == false);  // trailing whitespace may still follow
}

TEST(GrammarMatcher, FinishedWhenNothingCanFollow) {
    auto g = grammarOf("root ::= \"ab\" \"c\"?\n");
    GrammarMatcher m(g);
    ASSERT_TRUE(m.acceptBytes("ab"));
    EXPECT_TRUE(m.isComplete());
    EXPECT_FALSE(m.isFinished());
    ASSERT_TRUE(m.acceptBytes("c"));
    EXPECT_TRUE(m.isFinished());
}

TEST(GrammarMatcher, MaskOfASmallVocabulary) {
    auto g = grammarOf("root ::= \"{\" [a-z]+ \"é\" \"}\"\n");
    const std::vector<std::string> vocab{"{", "{a", "}", "ab", "a}", "é", "\xC3", "\xA9", "\xC3\xA9}", "", "z\xC3", "z\xC2", "A"};
    const TokenTrie trie = TokenTrie::build(vocab);
    GrammarMatcher m(g);
    std::vector<uint8_t> mask(vocab.size());
    m.fillMask(trie, mask);
    EXPECT_EQ(mask, (std::vector<uint8_t>{1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
    ASSERT_TRUE(m.acceptBytes("{"));
    m.fillMask(trie, mask);
    // "ab", "z\xC3" (the first byte of é after a letter) but not "z\xC2" (no U+0080..U+00BF allowed)
    EXPECT_EQ(mask, (std::vector<uint8_t>{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0}));
    ASSERT_TRUE(m.acceptBytes("a"));
    m.fillMask(trie, mask);
    EXPECT_EQ(mask, (std::vector<uint8_t>{0, 0, 0, 1, 0, 1, 1, 0, 1, 0, 1, 0, 0}));
    ASSERT_TRUE(m.acceptBytes("\xC3"));
    m.fillMask(trie, mask);
    EXPECT_EQ(mask, (std::vector<uint8_t>{0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0}));
}

// The trie walk against canAccept for every token, along random walks through the JSON grammar
// over the 32,000-token Llama vocabulary.
TEST(GrammarMatcher, MaskEqualsTokenByTokenCheckOnARealVocabulary) {
    auto file = GgufFile::open(kData + "/ggml-vocab-llama-spm.gguf");
    ASSERT_TRUE(file) << file.error().message;
    auto tok = Tokenizer::fromGguf(*file);
    ASSERT_TRUE(tok) << tok.error().message;
    std::vector<std::string> bytes((*tok)->vocabSize());
    for (size_t id = 0; id < bytes.size(); ++id) bytes[id] = (*tok)->tokenBytes(int32_t(id));
    const TokenTrie trie = TokenTrie::build(bytes);
    auto g = grammarFile("json.gbnf");
    std::mt19937 rng(7);
    std::vector<uint8_t> mask(bytes.size());
    for (int walk = 0; walk < 3; ++walk) {
        GrammarMatcher m(g);
        GrammarMatcher check(g);
        for (int step = 0; step < 25 && !m.isFinished(); ++step) {
            m.fillMask(trie, mask);
            std::vector<int32_t> allowed;
            for (size_t id = 0; id < bytes.size(); ++id) {
                const bool expected = !bytes[id].empty() && check.canAccept(bytes[id]);
                ASSERT_EQ(mask[id] != 0, expected) << "token " << id << " '" << bytes[id] << "' at step " << step;
                if (expected) allowed.push_back(int32_t(id));
            }
            ASSERT_FALSE(allowed.empty());
            const int32_t pick = allowed[rng() % allowed.size()];
            ASSERT_TRUE(m.acceptBytes(bytes[size_t(pick)]));
            ASSERT_TRUE(check.acceptBytes(bytes[size_t(pick)]));
        }
    }
}
