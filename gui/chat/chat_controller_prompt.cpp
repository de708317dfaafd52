// ChatController, what a job sends: the template, the prompt's chunks for the local engine (each
// message with the tokens it put in the context) and the messages for a server, which applies
// its own template (a backend without a tokenizer: BackendAbilities::tokenizes).
#include "chat/chat_controller.h"
#include "engine/engine_controller.h"
#include "settings/sampling_settings.h"

namespace inferscope {

QStringList ChatController::templateNames() const {
    QStringList names{QStringLiteral("auto")};
    for (ChatTemplateKind kind : allChatTemplateKinds()) names << QString::fromLatin1(chatTemplateName(kind).data());
    return names;
}

ChatTemplate ChatController::chatTemplate() const {
    if (mode_ == Mode::Completion) return {ChatTemplateKind::Completion};
    if (auto k = chatTemplateFromName(templateChoice_.toStdString()); k && templateChoice_ != QLatin1String("auto")) return {*k};
    if (engine_->model()) return {defaultChatTemplate(engine_->model()->detectedTemplate, engine_->model()->tokenizer.get())};
    return {defaultChatTemplate(std::nullopt, nullptr)};
}

PromptBuilder ChatController::promptBuilder() const {
    const auto& model = engine_->model();
    return PromptBuilder(chatTemplate(), systemPrompt_.toStdString(), model && model->tokenizer && model->tokenizer->addBosByDefault());
}

// One chunk per message before the answer; a message keeps the tokens it had (the KV cache
// holds them), the others are rendered from their text.
std::vector<PromptChunk> ChatController::contextChunks(const PromptBuilder& prompt, size_t contextRows) const {
    const auto& msgs = model_.messages();
    std::vector<PromptTurn> turns(contextRows);
    for (size_t r = 0; r < contextRows; ++r) {
        const ChatMessage& m = msgs[r];
        turns[r].role = m.role == Message::User ? ChatRole::User : ChatRole::Assistant;
        if (m.tokens.empty()) turns[r].text = m.text.toStdString();
        else turns[r].tokens = m.tokens;
    }
    return prompt.chunks(std::move(turns));
}

std::optional<ChatController::AnswerContext> ChatController::answerContext(int row) const {
    if (row < 0 || row >= model_.count() || !engine_->abilities().tokenizes) return std::nullopt;
    const ChatMessage& m = model_.at(row);
    if (m.role != Message::Assistant || m.streaming || m.steps.empty()) return std::nullopt;
    AnswerContext c;
    c.chunks = contextChunks(promptBuilder(), size_t(row));
    for (const StepRecord& step : m.steps) c.answer.push_back(step.sample.id);
    return c;
}

GenerationJob ChatController::singleTurnJob(const QString& text) const {
    GenerationJob job;
    std::vector<PromptTurn> turns(1);
    turns[0].role = ChatRole::User;
    turns[0].text = text.toStdString();
    job.chunks = promptBuilder().chunks(std::move(turns));
    job.sampler = samplerOverride_ ? *samplerOverride_ : sampling_->params();
    job.maxTokens = maxTokensOverride_.value_or(sampling_->maxTokens());
    job.threads = sampling_->threads();
    return job;
}

std::vector<std::pair<std::string, std::string>> ChatController::remoteMessages(size_t contextRows) const {
    std::vector<std::pair<std::string, std::string>> out;
    if (!systemPrompt_.trimmed().isEmpty()) out.emplace_back("system", systemPrompt_.toStdString());
    for (size_t r = 0; r < contextRows; ++r) {
        const ChatMessage& m = model_.messages()[r];
        out.emplace_back(m.role == Message::User ? "user" : "assistant", m.text.toStdString());
    }
    return out;
}

}  // namespace inferscope
