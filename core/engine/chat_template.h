#pragma once
// Chat templates: how a conversation becomes the model's input text. Each message is rendered on
// its own (its "chunk"), so the app can tokenize chunk by chunk and keep the exact tokens of
// earlier turns — the next turn then reuses the KV cache for everything before it.
// Special tokens are written as their pieces ("<s>", "<|im_start|>") and tokenized with
// parseSpecial; a chunk that starts the context gets BOS from the tokenizer when the template
// does not write it itself.

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace inferscope {

class Tokenizer;

enum class ChatTemplateKind {
    Completion,  // no template: the text continues as written (story models, base models)
    Llama2,      // <s>[INST] <<SYS>>\n{system}\n<</SYS>>\n\n{user} [/INST] {answer} </s>
    Mistral,     // <s>[INST] {system}\n\n{user} [/INST]{answer}</s>
    ChatML,      // <|im_start|>{role}\n{content}<|im_end|>\n ... <|im_start|>assistant\n
    Zephyr,      // <|system|>\n{system}</s>\n<|user|>\n{user}</s>\n<|assistant|>\n (TinyLlama chat)
    Llama3,      // <|start_header_id|>{role}<|end_header_id|>\n\n{content}<|eot_id|> ... (Llama 3.x)
    Gemma,       // <start_of_turn>user\n{system}\n\n{user}<end_of_turn>\n<start_of_turn>model\n (Gemma 2/3)
    Phi3,        // <|system|>\n{system}<|end|>\n<|user|>\n{user}<|end|>\n<|assistant|>\n (Phi-3)
};

// "completion", "llama2", "mistral", "chatml", "zephyr", "llama3", "gemma", "phi3"
std::string_view chatTemplateName(ChatTemplateKind kind);
std::optional<ChatTemplateKind> chatTemplateFromName(std::string_view name);
std::span<const ChatTemplateKind> allChatTemplateKinds();  // in the order above
// Recognises the family of a GGUF tokenizer.chat_template (a Jinja string) by its markers;
// nullopt when none is recognised.
std::optional<ChatTemplateKind> detectChatTemplate(std::string_view jinja);
// For a file without tokenizer.chat_template: the family whose turn markers the vocabulary has as
// special tokens (<|start_header_id|>, <|im_start|>, <start_of_turn>, <|user|> with <|end|>);
// nullopt when it has none of them.
std::optional<ChatTemplateKind> chatTemplateFromVocabulary(const Tokenizer& tokenizer);
// The template a chat uses when none is chosen: the file's (`fromFile`, detectChatTemplate of its
// tokenizer.chat_template), else the family whose turn markers the vocabulary has (a Qwen or Gemma
// base model), else Llama 2, the most common family for SentencePiece vocabularies.
ChatTemplateKind defaultChatTemplate(std::optional<ChatTemplateKind> fromFile, const Tokenizer* tokenizer);

enum class ChatRole { System, User, Assistant };

struct ChatTemplate {
    ChatTemplateKind kind = ChatTemplateKind::Completion;

    // The chunk for a user message. `first`: no earlier turn in the context (the system prompt
    // goes here, where the template has a place for it).
    std::string userTurn(std::string_view content, std::string_view system, bool first) const;
    // What opens the assistant's answer after a user turn (generation starts after it).
    std::string assistantPrefix() const;
    // What closes an answer the model did not end itself (stopped, length): the end-of-turn marker.
    // An answer ended by the model's own end token needs nothing more.
    std::string assistantSuffix() const;
    // An assistant message rendered from text (when its generated tokens are not known).
    std::string assistantTurn(std::string_view content) const { return assistantPrefix() + std::string(content) + assistantSuffix(); }
    // Strings that end an answer besides the end-of-generation token (a model starting a new turn).
    std::vector<std::string> stopStrings() const;
    // Whether the tokenizer should add BOS before the first chunk (the template does not write it).
    bool tokenizerAddsBos() const;
};

}  // namespace inferscope
