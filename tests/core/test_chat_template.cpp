// Chat templates: the exact text of each family, detection from GGUF Jinja templates, and the
// tokens the Llama 2 template gives with the real vocabulary.
#include <gtest/gtest.h>

#include "engine/chat_template.h"
#include "gguf/gguf_file.h"
#include "shared_data.h"
#include "tokenizer/tokenizer.h"

using namespace inferscope;

TEST(ChatTemplate, Llama2Text) {
    ChatTemplate t{ChatTemplateKind::Llama2};
    EXPECT_EQ(t.userTurn("Hi", "Be brief.", true), "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST]");
    EXPECT_EQ(t.userTurn("Hi", "", true), "<s>[INST] Hi [/INST]");
    EXPECT_EQ(t.userTurn("More", "Be brief.", false), "<s>[INST] More [/INST]");
    EXPECT_EQ(t.assistantTurn("Hello"), "Hello </s>");
    EXPECT_FALSE(t.tokenizerAddsBos());
}

TEST(ChatTemplate, ChatMLText) {
    ChatTemplate t{ChatTemplateKind::ChatML};
    EXPECT_EQ(t.userTurn("Hi", "Be brief.", true) + t.assistantPrefix(),
              "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    EXPECT_EQ(t.assistantSuffix(), "<|im_end|>\n");
    EXPECT_TRUE(t.tokenizerAddsBos());
}

TEST(ChatTemplate, ZephyrAndMistralText) {
    ChatTemplate z{ChatTemplateKind::Zephyr};
    EXPECT_EQ(z.userTurn("Hi", "S", true) + z.assistantPrefix(), "<|system|>\nS</s>\n<|user|>\nHi</s>\n<|assistant|>\n");
    ChatTemplate m{ChatTemplateKind::Mistral};
    EXPECT_EQ(m.userTurn("Hi", "S", true), "<s>[INST] S\n\nHi [/INST]");
    EXPECT_EQ(m.userTurn("Again", "S", false), "[INST] Again [/INST]");
}

TEST(ChatTemplate, CompletionIsTheTextItself) {
    ChatTemplate t{ChatTemplateKind::Completion};
    EXPECT_EQ(t.userTurn("Once upon a time", "ignored", true), "Once upon a time");
    EXPECT_EQ(t.assistantPrefix(), "");
    EXPECT_TRUE(t.stopStrings().empty());
}

TEST(ChatTemplate, DetectionFromJinja) {
    // Abbreviated from real GGUF tokenizer.chat_template values.
    EXPECT_EQ(detectChatTemplate("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n'}}"), ChatTemplateKind::ChatML);
    EXPECT_EQ(detectChatTemplate("{% if message['role'] == 'user' %}{{ '<|user|>\\n' + message['content'] + eos_token }}"
                                 "{% elif message['role'] == 'assistant' %}{{ '<|assistant|>\\n' }}"),
              ChatTemplateKind::Zephyr);
    EXPECT_EQ(detectChatTemplate("{{ bos_token + '[INST] ' + '<<SYS>>\\n' + system_message }}"), ChatTemplateKind::Llama2);
    EXPECT_EQ(detectChatTemplate("{{ bos_token }}{% for message in messages %}{{ '[INST] ' + message['content'] + ' [/INST]' }}"),
              ChatTemplateKind::Mistral);
    EXPECT_EQ(detectChatTemplate("{{ messages }}"), std::nullopt);
    for (auto k : {ChatTemplateKind::Completion, ChatTemplateKind::Llama2, ChatTemplateKind::Mistral, ChatTemplateKind::ChatML,
                   ChatTemplateKind::Zephyr})
        EXPECT_EQ(chatTemplateFromName(chatTemplateName(k)), k);
    EXPECT_EQ(chatTemplateFromName("alpaca"), std::nullopt);
}

TEST(ChatTemplate, Llama2TokensWithTheRealVocabulary) {
    auto file = GgufFile::open(std::string(INFERSCOPE_TEST_DATA_DIR) + "/ggml-vocab-llama-spm.gguf");
    ASSERT_TRUE(file);
    auto tok = Tokenizer::fromGguf(*file);
    ASSERT_TRUE(tok);
    ChatTemplate t{ChatTemplateKind::Llama2};
    const auto ids = (*tok)->encode(t.userTurn("Hi", "", true), false, true);
    // <s> is BOS (1); "[INST]" and "[/INST]" are plain text in Llama 2's vocabulary.
    ASSERT_FALSE(ids.empty());
    EXPECT_EQ(ids.front(), 1);
    EXPECT_EQ((*tok)->decode(std::span(ids).subspan(1)), "[INST] Hi [/INST]");
    const auto end = (*tok)->encode(t.assistantSuffix(), false, true);
    EXPECT_EQ(end.back(), 2);  // </s>
}

// ---- today's families: Llama 3, ChatML (Qwen), Gemma, Phi-3 ---------------------------------

TEST(ChatTemplate, Llama3Text) {
    ChatTemplate t{ChatTemplateKind::Llama3};
    EXPECT_EQ(t.userTurn(" Hi \n", "Be brief.", true) + t.assistantPrefix(),
              "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
              "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"  // content | trim, as the template
              "<|start_header_id|>assistant<|end_header_id|>\n\n");
    EXPECT_EQ(t.userTurn("More", "Be brief.", false), "<|start_header_id|>user<|end_header_id|>\n\nMore<|eot_id|>");
    EXPECT_EQ(t.assistantTurn("Hello"), "<|start_header_id|>assistant<|end_header_id|>\n\nHello<|eot_id|>");
    EXPECT_TRUE(t.tokenizerAddsBos());  // <|begin_of_text|> is the file's BOS, added by the tokenizer
}

TEST(ChatTemplate, GemmaText) {
    ChatTemplate t{ChatTemplateKind::Gemma};
    EXPECT_EQ(t.userTurn("Hi", "Be brief.", true) + t.assistantPrefix(),
              "<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\n");
    EXPECT_EQ(t.userTurn("More", "Be brief.", false), "<start_of_turn>user\nMore<end_of_turn>\n");
    EXPECT_EQ(t.assistantSuffix(), "<end_of_turn>\n");
    EXPECT_TRUE(t.tokenizerAddsBos());
}

TEST(ChatTemplate, Phi3Text) {
    ChatTemplate t{ChatTemplateKind::Phi3};
    EXPECT_EQ(t.userTurn("Hi", "", true) + t.assistantPrefix(), "<|user|>\nHi<|end|>\n<|assistant|>\n");
    EXPECT_EQ(t.userTurn("Hi", "S", true), "<|system|>\nS<|end|>\n<|user|>\nHi<|end|>\n");
    EXPECT_EQ(t.assistantTurn("Hello"), "<|assistant|>\nHello<|end|>\n");
}

TEST(ChatTemplate, DetectionOfTodaysFamilies) {
    EXPECT_EQ(detectChatTemplate("{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' }}"), ChatTemplateKind::Llama3);
    EXPECT_EQ(detectChatTemplate("{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}"),
              ChatTemplateKind::Gemma);
    EXPECT_EQ(detectChatTemplate("{{'<|user|>' + '\\n' + message['content'] + '<|end|>' + '\\n' + '<|assistant|>' + '\\n'}}"),
              ChatTemplateKind::Phi3);
    for (auto k : {ChatTemplateKind::Llama3, ChatTemplateKind::Gemma, ChatTemplateKind::Phi3})
        EXPECT_EQ(chatTemplateFromName(chatTemplateName(k)), k);
}

// The real templates carried by the architecture models (../shared; Gemma's files carry none).
TEST(ChatTemplate, DetectedFromRealFiles) {
    const std::pair<const char*, std::optional<ChatTemplateKind>> cases[] = {
        {"llama3-tiny.gguf", ChatTemplateKind::Llama3}, {"qwen2-tiny.gguf", ChatTemplateKind::ChatML},
        {"qwen3-tiny.gguf", ChatTemplateKind::ChatML},  {"phi3-tiny.gguf", ChatTemplateKind::Phi3},
        {"gemma2-tiny.gguf", std::nullopt},             {"gemma3-tiny.gguf", std::nullopt}};
    int n = 0;
    for (const auto& [name, expected] : cases) {
        const auto path = testing_shared::sharedFile(std::string("models/arch/") + name);
        if (!path) continue;
        auto file = GgufFile::open(*path);
        ASSERT_TRUE(file) << file.error().message;
        auto jinja = file->getString("tokenizer.chat_template");
        ASSERT_TRUE(jinja);
        EXPECT_EQ(detectChatTemplate(jinja->value_or("")), expected) << name;
        ++n;
    }
    if (n == 0) GTEST_SKIP() << "../shared/models/arch not found";
}

namespace {
std::unique_ptr<Tokenizer> sharedVocab(const std::string& name) {
    const auto path = testing_shared::sharedFile("models/tokenizer/ggml-vocab-" + name + ".gguf");
    if (!path) return nullptr;
    auto file = GgufFile::open(*path);
    if (!file) return nullptr;
    auto tok = Tokenizer::fromGguf(*file);
    return tok ? std::move(*tok) : nullptr;
}
std::vector<int32_t> concat(std::initializer_list<std::vector<int32_t>> parts) {
    std::vector<int32_t> all;
    for (const auto& p : parts) all.insert(all.end(), p.begin(), p.end());
    return all;
}
}  // namespace

// Rendered prompts are tokenized with parseSpecial: every marker is its one special token.
TEST(ChatTemplate, SpecialTokensOfRenderedPrompts) {
    auto llama3 = sharedVocab("llama-bpe");
    auto qwen = sharedVocab("qwen2");
    auto phi3 = sharedVocab("phi-3");
    if (!llama3 || !qwen || !phi3) GTEST_SKIP() << "../shared/models/tokenizer not found";
    ChatTemplate l{ChatTemplateKind::Llama3};
    auto enc = [](const Tokenizer& t, const char* s) { return t.encode(s, false); };
    EXPECT_EQ(llama3->encode(l.userTurn("Hi", "", true) + l.assistantPrefix(), true, true),
              concat({{128000, 128006}, enc(*llama3, "user"), {128007}, enc(*llama3, "\n\nHi"), {128009, 128006},
                      enc(*llama3, "assistant"), {128007}, enc(*llama3, "\n\n")}));
    ChatTemplate c{ChatTemplateKind::ChatML};
    EXPECT_EQ(qwen->encode(c.userTurn("Hi", "Be brief.", true) + c.assistantPrefix(), qwen->addBosByDefault(), true),
              concat({{151644}, enc(*qwen, "system\nBe brief."), {151645}, enc(*qwen, "\n"), {151644}, enc(*qwen, "user\nHi"),
                      {151645}, enc(*qwen, "\n"), {151644}, enc(*qwen, "assistant\n")}));
    // Phi-3: llama.cpp's ids for this exact prompt (README of the vocabularies, 3.4).
    ChatTemplate p{ChatTemplateKind::Phi3};
    EXPECT_EQ(phi3->encode(p.userTurn("Hi", "", true) + p.assistantPrefix(), false, true), (std::vector<int32_t>{32010, 6324, 32007, 32001}));
}

// A file without tokenizer.chat_template (a base model) is talked to in the family its vocabulary's
// turn markers name; a vocabulary with none of them (Llama 2's, GPT-2's) names no family.
TEST(ChatTemplate, GuessedFromTheVocabularysSpecialTokens) {
    const std::pair<const char*, std::optional<ChatTemplateKind>> cases[] = {
        {"llama-bpe", ChatTemplateKind::Llama3}, {"qwen2", ChatTemplateKind::ChatML}, {"phi-3", ChatTemplateKind::Phi3},
        {"llama-spm", std::nullopt},             {"gpt-2", std::nullopt}};
    int n = 0;
    for (const auto& [name, expected] : cases) {
        auto tok = sharedVocab(name);
        if (!tok) continue;
        EXPECT_EQ(chatTemplateFromVocabulary(*tok), expected) << name;
        // The default a chat uses (the app, the server): the file's template first, then this, then Llama 2.
        EXPECT_EQ(defaultChatTemplate(std::nullopt, tok.get()), expected.value_or(ChatTemplateKind::Llama2)) << name;
        EXPECT_EQ(defaultChatTemplate(ChatTemplateKind::Gemma, tok.get()), ChatTemplateKind::Gemma) << name;
        ++n;
    }
    if (n == 0) GTEST_SKIP() << "../shared/models/tokenizer not found";
}

TEST(ChatTemplate, DefaultWithoutAVocabularyIsTheFilesElseLlama2) {
    EXPECT_EQ(defaultChatTemplate(ChatTemplateKind::ChatML, nullptr), ChatTemplateKind::ChatML);
    EXPECT_EQ(defaultChatTemplate(std::nullopt, nullptr), ChatTemplateKind::Llama2);
}

TEST(ChatTemplate, EveryKindIsListedOnceByName) {
    std::vector<std::string> names;
    for (ChatTemplateKind k : allChatTemplateKinds()) names.emplace_back(chatTemplateName(k));
    EXPECT_EQ(names, (std::vector<std::string>{"completion", "llama2", "mistral", "chatml", "zephyr", "llama3", "gemma", "phi3"}));
}
