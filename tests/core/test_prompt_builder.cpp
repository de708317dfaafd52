// PromptBuilder: the chunks a conversation becomes (exact text, which chunk gets BOS, tokens
// reused as they are) and the tokens a finished answer leaves in the context, for every way an
// answer ends. No model: the templates' text, and the real Llama 2 vocabulary where tokens matter.
#include <gtest/gtest.h>

#include "engine/prompt_builder.h"
#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"

using namespace inferscope;

namespace {

PromptTurn user(std::string text) { return {ChatRole::User, std::move(text), {}}; }
PromptTurn answer(std::string text) { return {ChatRole::Assistant, std::move(text), {}}; }

StepRecord step(int32_t id, std::string piece) {
    StepRecord s;
    s.sample.id = id;
    s.piece = std::move(piece);
    return s;
}

std::unique_ptr<Tokenizer> llamaVocabulary() {
    auto file = GgufFile::open(std::string(INFERSCOPE_TEST_DATA_DIR) + "/ggml-vocab-llama-spm.gguf");
    if (!file) return nullptr;
    auto tok = Tokenizer::fromGguf(*file);
    return tok ? std::move(*tok) : nullptr;
}

}  // namespace

TEST(PromptBuilder, Llama2ConversationOneChunkPerMessage) {
    const PromptBuilder b({ChatTemplateKind::Llama2}, "Be brief.", true);
    const auto chunks = b.chunks({user("Hi"), answer("Hello"), user("More")});
    ASSERT_EQ(chunks.size(), 3u);
    // The system prompt goes into the first user turn only; each user turn opens the answer.
    EXPECT_EQ(chunks[0].text, "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST]");
    EXPECT_EQ(chunks[1].text, "Hello </s>");
    EXPECT_EQ(chunks[2].text, "<s>[INST] More [/INST]");
    // Llama 2 writes <s> itself: the tokenizer must not add another.
    for (const PromptChunk& c : chunks) {
        EXPECT_FALSE(c.addBos);
        EXPECT_FALSE(c.hasTokens);
    }
}

TEST(PromptBuilder, BosFromTheTokenizerOnlyWhenTemplateAndVocabularyAskForIt) {
    const auto withBos = PromptBuilder({ChatTemplateKind::ChatML}, "", true).chunks({user("Hi"), answer("Yo"), user("Again")});
    EXPECT_TRUE(withBos[0].addBos);
    EXPECT_FALSE(withBos[1].addBos);
    EXPECT_FALSE(withBos[2].addBos);
    EXPECT_EQ(withBos[1].text, "Yo<|im_end|>\n");
    EXPECT_EQ(withBos[2].text, "<|im_start|>user\nAgain<|im_end|>\n<|im_start|>assistant\n");
    // Qwen's vocabulary has add_bos_token = false: no BOS at all.
    EXPECT_FALSE(PromptBuilder({ChatTemplateKind::ChatML}, "", false).chunks({user("Hi")})[0].addBos);
}

TEST(PromptBuilder, KnownTokensAreReusedAsTheyAre) {
    const PromptBuilder b({ChatTemplateKind::ChatML}, "S", true);
    // The first message was sent before: its tokens stay exactly (the KV cache holds them), even
    // though the system prompt it was rendered with is no longer what the builder has.
    const auto chunks = b.chunks({{ChatRole::User, "ignored", {1, 2, 3}}, {ChatRole::Assistant, "", {4, 5}}, user("Next")});
    ASSERT_EQ(chunks.size(), 3u);
    EXPECT_TRUE(chunks[0].hasTokens);
    EXPECT_EQ(chunks[0].tokens, (std::vector<int32_t>{1, 2, 3}));
    EXPECT_EQ(chunks[0].text, "");
    EXPECT_FALSE(chunks[0].addBos);
    EXPECT_EQ(chunks[1].tokens, (std::vector<int32_t>{4, 5}));
    EXPECT_EQ(chunks[2].text, "<|im_start|>user\nNext<|im_end|>\n<|im_start|>assistant\n");
}

TEST(PromptBuilder, CompletionModeIsTheTextAsWritten) {
    const auto chunks = PromptBuilder({ChatTemplateKind::Completion}, "ignored", true).chunks({user("Once upon"), answer(" a time")});
    EXPECT_EQ(chunks[0].text, "Once upon");
    EXPECT_TRUE(chunks[0].addBos);
    EXPECT_EQ(chunks[1].text, " a time");
}

TEST(PromptBuilder, KeptStepsOfABranch) {
    const std::vector<StepRecord> kept{step(10, "a"), step(11, "b"), step(42, "z")};
    const PromptChunk c = PromptBuilder::keptSteps(kept);
    EXPECT_TRUE(c.hasTokens);
    EXPECT_EQ(c.tokens, (std::vector<int32_t>{10, 11, 42}));
}

TEST(PromptBuilder, AnswerTokensForEveryWayAnAnswerEnds) {
    const auto tok = llamaVocabulary();
    ASSERT_TRUE(tok);
    const PromptBuilder b({ChatTemplateKind::Llama2}, "", false);
    GenerationSummary s;
    s.tokens = {15043, 29991};  // "Hello", "!"
    s.text = " Hello!";

    // The model ended the turn: its tokens (the end token among them) are the context as it is.
    s.reason = FinishReason::EndOfGeneration;
    s.tokens.push_back(2);
    EXPECT_EQ(b.answerTokens({}, s, tok.get()), (std::vector<int32_t>{15043, 29991, 2}));
    s.tokens.pop_back();

    // Stopped or cut by length: closed with the template's end of turn (" </s>": ▁ and </s>).
    const auto suffix = tok->encode(" </s>", false, true);
    ASSERT_EQ(suffix.back(), 2);
    for (FinishReason r : {FinishReason::MaxTokens, FinishReason::Cancelled, FinishReason::ContextFull}) {
        s.reason = r;
        std::vector<int32_t> want = s.tokens;
        want.insert(want.end(), suffix.begin(), suffix.end());
        EXPECT_EQ(b.answerTokens({}, s, tok.get()), want) << finishReasonName(r);
    }

    // A branch: the kept steps come first.
    s.reason = FinishReason::MaxTokens;
    const std::vector<StepRecord> kept{step(7, "x")};
    EXPECT_EQ(b.answerTokens(kept, s, tok.get()).front(), 7);
    EXPECT_EQ(b.answerTokens(kept, s, tok.get()).size(), 1 + s.tokens.size() + suffix.size());

    // Cut at a stop string: the generated tokens ran past the cut, so the kept text is re-tokenized.
    s.reason = FinishReason::StopString;
    s.tokens = {15043, 29991, 518, 25580};  // "Hello! [INST", the stop string's tokens included
    const auto cut = b.answerTokens({}, s, tok.get());
    EXPECT_EQ(cut, tok->encode(" Hello! </s>", false, true));
    // The text up to the cut, then the end of turn (</s>, which decode leaves out): nothing of "[INST".
    EXPECT_EQ(tok->decode(cut), " Hello! ");
    EXPECT_EQ(cut.back(), 2);

    // No model (unloaded meanwhile): nothing is made up.
    EXPECT_EQ(b.answerTokens({}, s, nullptr), std::vector<int32_t>{});
    s.reason = FinishReason::MaxTokens;
    EXPECT_EQ(b.answerTokens({}, s, nullptr), s.tokens);
}
