// Generation under a grammar on real models (stories260K, the architecture fixtures: SentencePiece
// and byte-level BPE vocabularies from 512 to 152k tokens), greedy and sampled: every output is
// checked by a parser independent of the grammar engine, and the grammar stage's record (survivors,
// mass removed, forced, the chosen token's probability before the mask) is consistent.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine_test_helpers.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "shared_data.h"

using namespace inferscope;
using namespace inferscope::testing_model;

namespace {

const std::string kData = INFERSCOPE_TEST_DATA_DIR;

std::string readFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::shared_ptr<const grammar::Grammar> grammarText(const std::string& text) {
    auto g = grammar::parseGbnf(text);
    EXPECT_TRUE(g) << g.error().message;
    return std::make_shared<const grammar::Grammar>(std::move(*g));
}

// ---- independent checkers ---------------------------------------------------------------------
// arithmetic.gbnf: lines "expr = term\n", expr = term (op term)*, term = name | digits | "(" expr ")",
// spaces and tabs after each term and "(".
struct Arithmetic {
    std::string_view s;
    size_t i = 0;
    void ws() { while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i; }
    bool term() {
        if (i < s.size() && s[i] >= 'a' && s[i] <= 'z') {
            ++i;
            while (i < s.size() && (std::islower(uint8_t(s[i])) || std::isdigit(uint8_t(s[i])) || s[i] == '_')) ++i;
        } else if (i < s.size() && std::isdigit(uint8_t(s[i]))) {
            while (i < s.size() && std::isdigit(uint8_t(s[i]))) ++i;
        } else if (i < s.size() && s[i] == '(') {
            ++i;
            ws();
            if (!expr() || i >= s.size() || s[i] != ')') return false;
            ++i;
        } else {
            return false;
        }
        ws();
        return true;
    }
    bool expr() {
        if (!term()) return false;
        while (i < s.size() && std::string_view("-+*/").find(s[i]) != std::string_view::npos) {
            ++i;
            if (!term()) return false;
        }
        return true;
    }
    bool all() {
        if (s.empty()) return false;
        while (i < s.size()) {
            if (!expr() || i >= s.size() || s[i] != '=') return false;
            ++i;
            ws();
            if (!term() || i >= s.size() || s[i] != '\n') return false;
            ++i;
        }
        return true;
    }
};

// list.gbnf: one to five lines "- " + at least one character + "\n".
bool validList(std::string_view s) {
    int lines = 0;
    size_t i = 0;
    while (i < s.size()) {
        const size_t end = s.find('\n', i);
        if (end == std::string_view::npos || s.substr(i, 2) != "- " || end < i + 3) return false;
        i = end + 1;
        ++lines;
    }
    return lines >= 1 && lines <= 5;
}

bool validJsonObject(const std::string& s) {
    auto j = nlohmann::json::parse(s, nullptr, false);
    return !j.is_discarded() && j.is_object();
}

struct Case {
    const char* grammarFile;
    bool (*valid)(const std::string&);
    std::string closers;  // characters of the tokens nudged up, so that a random model finishes
};

bool validArithmetic(const std::string& s) { return Arithmetic{s}.all(); }
bool validListText(const std::string& s) { return validList(s); }

const Case kCases[] = {
    {"json.gbnf", validJsonObject, "\"}]:0123456789"},
    {"arithmetic.gbnf", validArithmetic, "=\n"},
    {"list.gbnf", validListText, "\n"},
};

struct Steps : GenerationObserver {
    std::vector<StepRecord> steps;
    void onStep(const StepRecord& r) override { steps.push_back(r); }
};

// Generates under each grammar, greedy and sampled, and checks every output and step record.
void generateUnderGrammars(const std::string& modelPath) {
    auto engine = loadTestEngine(modelPath);
    ASSERT_TRUE(engine);
    const Tokenizer& tok = engine->tokenizer();
    auto prompt = tok.encode("Once upon a time", true, false);
    for (const Case& c : kCases) {
        auto g = grammarText(readFile(kData + "/grammars/" + c.grammarFile));
        // Random weights rarely end a string or a name: tokens made only of closing characters get
        // +20 and the end of generation +40, so that whatever the grammar allows of them wins and
        // the output completes. The grammar must still refuse them wherever they do not fit.
        std::vector<std::pair<int32_t, float>> bias;
        for (int32_t id = 0; id < tok.vocabSize(); ++id) {
            const std::string b = tok.tokenBytes(id);
            if (!b.empty() && b.find_first_not_of(c.closers) == std::string::npos) bias.push_back({id, 20.0f});
        }
        for (int32_t id : tok.endOfGenerationIds()) bias.push_back({id, 40.0f});
        for (int mode = 0; mode < 2; ++mode) {
            SCOPED_TRACE(std::string(c.grammarFile) + (mode == 0 ? " greedy" : " sampled"));
            GenerateRequest req = greedyRequest(prompt, 400, 5);
            req.grammar = g;
            req.sampler.logitBias = bias;
            if (mode == 1) {
                req.sampler.temperature = 1.0f;
                req.sampler.topK = 0;
                req.sampler.topP = 1.0f;
                req.sampler.minP = 0.0f;
                req.sampler.seed = 11;
            }
            Steps obs;
            auto summary = engine->generate(req, &obs);
            ASSERT_TRUE(summary) << summary.error().message;
            ASSERT_EQ(summary->reason, FinishReason::EndOfGeneration) << "ended by " << finishReasonName(summary->reason)
                                                                      << " after: " << summary->text;
            EXPECT_TRUE(c.valid(summary->text)) << summary->text;
            ASSERT_FALSE(obs.steps.empty());
            for (const StepRecord& r : obs.steps) {
                const SampleRecord& s = r.sample;
                ASSERT_TRUE(s.constrained);
                const auto at = [&](SamplerStage st) { return s.survivors[size_t(st)]; };
                EXPECT_LE(at(SamplerStage::Grammar), at(SamplerStage::Penalty));
                EXPECT_GE(at(SamplerStage::Grammar), 1);
                EXPECT_GE(s.grammarMassRemoved, 0.0f);
                EXPECT_LE(s.grammarMassRemoved, 1.0f);
                EXPECT_GE(s.pBeforeGrammar, 0.0f);
                EXPECT_LE(s.pBeforeGrammar, 1.0f + 1e-6f);
                if (s.forced()) EXPECT_FLOAT_EQ(s.pFinal, 1.0f);
            }
            EXPECT_TRUE(obs.steps.back().endOfGeneration);
        }
    }
}

}  // namespace

TEST(GrammarGeneration, Stories260K) { generateUnderGrammars(std::string(INFERSCOPE_RESOURCES_DIR) + "/models/stories260K.gguf"); }

TEST(GrammarGeneration, Qwen2ByteLevelBpe152k) {
    INFERSCOPE_SHARED_FILE_OR_SKIP(path, "models/arch/qwen2-tiny.gguf");
    generateUnderGrammars(path);
}

TEST(GrammarGeneration, Llama3ByteLevelBpe128k) {
    INFERSCOPE_SHARED_FILE_OR_SKIP(path, "models/arch/llama3-tiny.gguf");
    generateUnderGrammars(path);
}

TEST(GrammarGeneration, Phi3SentencePiece) {
    INFERSCOPE_SHARED_FILE_OR_SKIP(path, "models/arch/phi3-tiny.gguf");
    generateUnderGrammars(path);
}

TEST(GrammarGeneration, GemmaSentencePiece) {
    INFERSCOPE_SHARED_FILE_OR_SKIP(path, "models/arch/gemma2-tiny.gguf");
    generateUnderGrammars(path);
}

// A JSON schema's grammar: the output parses and has the required members of the right types.
TEST(GrammarGeneration, JsonSchemaOutputHasTheRequiredMembers) {
    auto engine = loadTestEngine(std::string(INFERSCOPE_RESOURCES_DIR) + "/models/stories260K.gguf");
    ASSERT_TRUE(engine);
    auto text = grammar::jsonSchemaToGbnf(R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 8},
        "age": {"type": "integer"}, "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 3}},
        "required": ["name", "age", "tags"], "additionalProperties": false})");
    ASSERT_TRUE(text) << text.error().message;
    GenerateRequest req = greedyRequest(engine->tokenizer().encode("Once", true, false), 300, 5);
    req.grammar = grammarText(*text);
    req.sampler.temperature = 1.0f;
    req.sampler.seed = 3;
    auto summary = engine->generate(req, nullptr);
    ASSERT_TRUE(summary) << summary.error().message;
    ASSERT_EQ(summary->reason, FinishReason::EndOfGeneration) << summary->text;
    auto j = nlohmann::json::parse(summary->text, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << summary->text;
    ASSERT_TRUE(j["name"].is_string()) << summary->text;
    EXPECT_LE(j["name"].get_ref<const std::string&>().size(), 8u * 4) << summary->text;  // 8 characters
    EXPECT_TRUE(j["age"].is_number_integer()) << summary->text;
    ASSERT_TRUE(j["tags"].is_array()) << summary->text;
    EXPECT_LE(j["tags"].size(), 3u);
    EXPECT_EQ(j.size(), 3u);
}

// A character the 512-token English vocabulary has no piece for is written with its byte tokens
// (<0xE4> <0xB8> <0xAD>): the mask allows a token that ends inside a UTF-8 character.
TEST(GrammarGeneration, ACharacterWithoutAPieceIsWrittenByteByByte) {
    auto engine = loadTestEngine(std::string(INFERSCOPE_RESOURCES_DIR) + "/models/stories260K.gguf");
    ASSERT_TRUE(engine);
    GenerateRequest req = greedyRequest(engine->tokenizer().encode("Once", true, false), 20, 5);
    req.grammar = grammarText("root ::= \"\\u4E2D\"\n");  // 中
    Steps obs;
    auto summary = engine->generate(req, &obs);
    ASSERT_TRUE(summary) << summary.error().message;
    EXPECT_EQ(summary->reason, FinishReason::EndOfGeneration);
    EXPECT_EQ(summary->text, "\xE4\xB8\xAD");
    ASSERT_EQ(obs.steps.size(), 4u);  // three bytes, then the end
    for (size_t k = 0; k < 4; ++k) EXPECT_TRUE(obs.steps[k].sample.forced()) << k;  // one token allowed each time
    EXPECT_EQ(engine->tokenizer().piece(obs.steps[0].sample.id), "<0xE4>");
}

// A branch keeps the start of an answer and continues it: the grammar goes on from after the kept
// bytes (here inside "yes"), not from its start; kept bytes the grammar refuses fail the request
// before anything runs.
TEST(GrammarGeneration, AGrammarPrefixContinuesFromWhereTheKeptBytesLeftIt) {
    auto engine = loadTestEngine(std::string(INFERSCOPE_RESOURCES_DIR) + "/models/stories260K.gguf");
    ASSERT_TRUE(engine);
    std::vector<int32_t> prompt = engine->tokenizer().encode("Once", true, false);
    const std::vector<int32_t> kept = engine->tokenizer().encode("y", false, false);
    prompt.insert(prompt.end(), kept.begin(), kept.end());  // the kept token ends the prompt
    GenerateRequest req = greedyRequest(prompt, 20, 5);
    req.grammar = grammarText("root ::= (\"yes\" | \"no\") \".\"\n");
    req.grammarPrefix = "y";
    auto summary = engine->generate(req, nullptr);
    ASSERT_TRUE(summary) << summary.error().message;
    EXPECT_EQ(summary->reason, FinishReason::EndOfGeneration);
    EXPECT_EQ(summary->text, "es.");  // from the root it could have been "no." or "yes."

    req.grammarPrefix = "maybe";
    auto refused = engine->generate(req, nullptr);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().message, "the kept start of the answer does not match the grammar: byte 0 (0x6D) is not allowed by the grammar here");
    req.grammar = nullptr;
    req.grammarPrefix = "y";
    EXPECT_FALSE(engine->generate(req, nullptr));
}
