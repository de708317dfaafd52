#include "engine/chat_template.h"

#include "tokenizer/tokenizer.h"

namespace inferscope {
namespace {

constexpr ChatTemplateKind kAllKinds[] = {ChatTemplateKind::Completion, ChatTemplateKind::Llama2, ChatTemplateKind::Mistral,
                                          ChatTemplateKind::ChatML,     ChatTemplateKind::Zephyr, ChatTemplateKind::Llama3,
                                          ChatTemplateKind::Gemma,      ChatTemplateKind::Phi3};

// Jinja's `| trim` (Python's str.strip()), which the Llama 3 and Gemma templates apply to content.
std::string trimmed(std::string_view s) {
    constexpr std::string_view kSpace = " \t\n\r\f\v";
    const size_t begin = s.find_first_not_of(kSpace);
    if (begin == std::string_view::npos) return {};
    return std::string(s.substr(begin, s.find_last_not_of(kSpace) - begin + 1));
}

}  // namespace

std::string_view chatTemplateName(ChatTemplateKind kind) {
    switch (kind) {
        case ChatTemplateKind::Completion: return "completion";
        case ChatTemplateKind::Llama2: return "llama2";
        case ChatTemplateKind::Mistral: return "mistral";
        case ChatTemplateKind::ChatML: return "chatml";
        case ChatTemplateKind::Zephyr: return "zephyr";
        case ChatTemplateKind::Llama3: return "llama3";
        case ChatTemplateKind::Gemma: return "gemma";
        case ChatTemplateKind::Phi3: return "phi3";
    }
    return "completion";
}

std::optional<ChatTemplateKind> chatTemplateFromName(std::string_view name) {
    for (auto k : kAllKinds)
        if (chatTemplateName(k) == name) return k;
    return std::nullopt;
}

std::optional<ChatTemplateKind> detectChatTemplate(std::string_view jinja) {
    auto has = [jinja](std::string_view s) { return jinja.find(s) != std::string_view::npos; };
    if (has("<|im_start|>")) return ChatTemplateKind::ChatML;
    if (has("<|start_header_id|>")) return ChatTemplateKind::Llama3;
    if (has("<start_of_turn>")) return ChatTemplateKind::Gemma;
    // Phi-3 and Zephyr share <|user|> / <|assistant|>; Phi-3 ends turns with <|end|>, Zephyr with </s>.
    if (has("<|user|>") && has("<|assistant|>")) return has("<|end|>") ? ChatTemplateKind::Phi3 : ChatTemplateKind::Zephyr;
    if (has("[INST]")) return has("<<SYS>>") ? ChatTemplateKind::Llama2 : ChatTemplateKind::Mistral;
    return std::nullopt;
}

std::span<const ChatTemplateKind> allChatTemplateKinds() { return kAllKinds; }

std::optional<ChatTemplateKind> chatTemplateFromVocabulary(const Tokenizer& tokenizer) {
    auto has = [&](std::string_view piece) { return tokenizer.findSpecial(piece).has_value(); };
    if (has("<|start_header_id|>") && has("<|eot_id|>")) return ChatTemplateKind::Llama3;
    if (has("<|im_start|>") && has("<|im_end|>")) return ChatTemplateKind::ChatML;
    if (has("<start_of_turn>") && has("<end_of_turn>")) return ChatTemplateKind::Gemma;
    if (has("<|user|>") && has("<|assistant|>") && has("<|end|>")) return ChatTemplateKind::Phi3;
    return std::nullopt;
}

ChatTemplateKind defaultChatTemplate(std::optional<ChatTemplateKind> fromFile, const Tokenizer* tokenizer) {
    if (fromFile) return *fromFile;
    if (tokenizer)
        if (auto k = chatTemplateFromVocabulary(*tokenizer)) return *k;
    return ChatTemplateKind::Llama2;
}

std::string ChatTemplate::userTurn(std::string_view content, std::string_view system, bool first) const {
    const std::string c(content), sys(system);
    switch (kind) {
        case ChatTemplateKind::Completion:
            return c;
        case ChatTemplateKind::Llama2:
            if (first && !sys.empty()) return "<s>[INST] <<SYS>>\n" + sys + "\n<</SYS>>\n\n" + c + " [/INST]";
            return "<s>[INST] " + c + " [/INST]";
        case ChatTemplateKind::Mistral:
            if (first && !sys.empty()) return "<s>[INST] " + sys + "\n\n" + c + " [/INST]";
            return (first ? "<s>[INST] " : "[INST] ") + c + " [/INST]";
        case ChatTemplateKind::ChatML: {
            std::string out;
            if (first && !sys.empty()) out += "<|im_start|>system\n" + sys + "<|im_end|>\n";
            return out + "<|im_start|>user\n" + c + "<|im_end|>\n";
        }
        case ChatTemplateKind::Zephyr: {
            std::string out;
            if (first && !sys.empty()) out += "<|system|>\n" + sys + "</s>\n";
            return out + "<|user|>\n" + c + "</s>\n";
        }
        case ChatTemplateKind::Llama3: {
            std::string out;
            if (first && !sys.empty()) out += "<|start_header_id|>system<|end_header_id|>\n\n" + trimmed(sys) + "<|eot_id|>";
            return out + "<|start_header_id|>user<|end_header_id|>\n\n" + trimmed(c) + "<|eot_id|>";
        }
        case ChatTemplateKind::Gemma:  // no system role: Gemma's template puts it before the first message
            return "<start_of_turn>user\n" + trimmed(first && !sys.empty() ? sys + "\n\n" + c : c) + "<end_of_turn>\n";
        case ChatTemplateKind::Phi3: {
            std::string out;
            if (first && !sys.empty()) out += "<|system|>\n" + sys + "<|end|>\n";
            return out + "<|user|>\n" + c + "<|end|>\n";
        }
    }
    return c;
}

std::string ChatTemplate::assistantPrefix() const {
    switch (kind) {
        case ChatTemplateKind::ChatML: return "<|im_start|>assistant\n";
        case ChatTemplateKind::Zephyr: return "<|assistant|>\n";
        case ChatTemplateKind::Llama3: return "<|start_header_id|>assistant<|end_header_id|>\n\n";
        case ChatTemplateKind::Gemma: return "<start_of_turn>model\n";
        case ChatTemplateKind::Phi3: return "<|assistant|>\n";
        default: return "";
    }
}

std::string ChatTemplate::assistantSuffix() const {
    switch (kind) {
        case ChatTemplateKind::Llama2: return " </s>";
        case ChatTemplateKind::Mistral: return "</s>";
        case ChatTemplateKind::ChatML: return "<|im_end|>\n";
        case ChatTemplateKind::Zephyr: return "</s>\n";
        case ChatTemplateKind::Llama3: return "<|eot_id|>";
        case ChatTemplateKind::Gemma: return "<end_of_turn>\n";
        case ChatTemplateKind::Phi3: return "<|end|>\n";
        default: return "";
    }
}

std::vector<std::string> ChatTemplate::stopStrings() const {
    switch (kind) {
        case ChatTemplateKind::Llama2:
        case ChatTemplateKind::Mistral: return {"[INST]"};
        case ChatTemplateKind::ChatML: return {"<|im_end|>", "<|im_start|>"};
        case ChatTemplateKind::Zephyr: return {"<|user|>", "<|system|>"};
        case ChatTemplateKind::Llama3: return {"<|eot_id|>", "<|start_header_id|>"};
        case ChatTemplateKind::Gemma: return {"<end_of_turn>", "<start_of_turn>"};
        case ChatTemplateKind::Phi3: return {"<|end|>", "<|user|>", "<|system|>"};
        default: return {};
    }
}

bool ChatTemplate::tokenizerAddsBos() const {
    return kind != ChatTemplateKind::Llama2 && kind != ChatTemplateKind::Mistral;
}

}  // namespace inferscope
