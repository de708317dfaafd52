// Chat templates: the exact text of each family, detection from GGUF Jinja templates, and the
// tokens the Llama 2 template gives with the real vocabulary.
#include <gtest/gtest.h>

#include "engine/chat_template.h"
#include "gguf/gguf_file.h"
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
