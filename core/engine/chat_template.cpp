#include "engine/chat_template.h"

namespace inferscope {

std::string_view chatTemplateName(ChatTemplateKind kind) {
    switch (kind) {
        case ChatTemplateKind::Completion: return "completion";
        case ChatTemplateKind::Llama2: return "llama2";
        case ChatTemplateKind::Mistral: return "mistral";
        case ChatTemplateKind::ChatML: return "chatml";
        case ChatTemplateKind::Zephyr: return "zephyr";
    }
    return "completion";
}

std::optional<ChatTemplateKind> chatTemplateFromName(std::string_view name) {
    for (auto k : {ChatTemplateKind::Completion, ChatTemplateKind::Llama2, ChatTemplateKind::Mistral,
                   ChatTemplateKind::ChatML, ChatTemplateKind::Zephyr})
        if (chatTemplateName(k) == name) return k;
    return std::nullopt;
}

std::optional<ChatTemplateKind> detectChatTemplate(std::string_view jinja) {
    auto has = [jinja](std::string_view s) { return jinja.find(s) != std::string_view::npos; };
    if (has("<|im_start|>")) return ChatTemplateKind::ChatML;
    if (has("<|user|>") && has("<|assistant|>")) return ChatTemplateKind::Zephyr;
    if (has("[INST]")) return has("<<SYS>>") ? ChatTemplateKind::Llama2 : ChatTemplateKind::Mistral;
    return std::nullopt;
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
    }
    return c;
}

std::string ChatTemplate::assistantPrefix() const {
    switch (kind) {
        case ChatTemplateKind::ChatML: return "<|im_start|>assistant\n";
        case ChatTemplateKind::Zephyr: return "<|assistant|>\n";
        default: return "";
    }
}

std::string ChatTemplate::assistantSuffix() const {
    switch (kind) {
        case ChatTemplateKind::Llama2: return " </s>";
        case ChatTemplateKind::Mistral: return "</s>";
        case ChatTemplateKind::ChatML: return "<|im_end|>\n";
        case ChatTemplateKind::Zephyr: return "</s>\n";
        default: return "";
    }
}

std::vector<std::string> ChatTemplate::stopStrings() const {
    switch (kind) {
        case ChatTemplateKind::Llama2:
        case ChatTemplateKind::Mistral: return {"[INST]"};
        case ChatTemplateKind::ChatML: return {"<|im_end|>", "<|im_start|>"};
        case ChatTemplateKind::Zephyr: return {"<|user|>", "<|system|>"};
        default: return {};
    }
}

bool ChatTemplate::tokenizerAddsBos() const {
    return kind != ChatTemplateKind::Llama2 && kind != ChatTemplateKind::Mistral;
}

}  // namespace inferscope
