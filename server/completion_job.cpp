#include "server/completion_job.h"

#include <algorithm>
#include <optional>

#include "engine/prompt_builder.h"
#include "server/tool_format.h"
#include "tokenizer/tokenizer.h"

namespace inferscope::server {

std::vector<int32_t> promptTokens(const ServeRequest& r, const ChatTemplate& tmpl, const Tokenizer& tokenizer) {
    if (r.endpoint == Endpoint::Completion) return tokenizer.encode(r.prompt, tokenizer.addBosByDefault());
    if (usesToolPrompt(r))  // tools, calls and results: the template family's own tool syntax, one text
        return tokenizer.encode(toolPromptText(r, tmpl), tmpl.tokenizerAddsBos() && tokenizer.addBosByDefault(), true);
    std::string system;
    std::vector<PromptTurn> turns;
    for (const ChatMessage& m : r.messages) {
        if (m.role == ChatRole::System) system += (system.empty() ? "" : "\n\n") + m.content;
        else turns.push_back(PromptTurn{m.role, m.content, {}});
    }
    // The answer to continue: its turn is left open, after the turns before it.
    std::optional<std::string> answerSoFar;
    if (r.continueFinalMessage && !turns.empty() && turns.back().role == ChatRole::Assistant) {
        answerSoFar = std::move(turns.back().text);
        turns.pop_back();
    }
    if (turns.empty() || (answerSoFar && turns.back().role != ChatRole::User))
        turns.push_back(PromptTurn{ChatRole::User, "", {}});  // a system prompt alone (or an answer alone) opens the answer
    const PromptBuilder builder(tmpl, system, tokenizer.addBosByDefault());
    std::vector<int32_t> ids;
    for (const PromptChunk& c : builder.chunks(std::move(turns))) {
        const auto chunk = c.hasTokens ? c.tokens : tokenizer.encode(c.text, c.addBos, true);
        ids.insert(ids.end(), chunk.begin(), chunk.end());
    }
    if (answerSoFar) {  // the model's own text: no special-token markup read in it
        const auto chunk = tokenizer.encode(*answerSoFar, false, false);
        ids.insert(ids.end(), chunk.begin(), chunk.end());
    }
    return ids;
}

std::vector<std::string> stopStringsFor(const ServeRequest& r, const ChatTemplate& tmpl) {
    std::vector<std::string> stops = r.stop;
    if (r.endpoint == Endpoint::Chat)
        for (const std::string& s : tmpl.stopStrings())
            if (std::find(stops.begin(), stops.end(), s) == stops.end()) stops.push_back(s);
    return stops;
}

std::string AnswerText::push(const std::string& piece) {
    generated_ += piece;
    size_t safe = stops_.safeLength(generated_);
    if (const auto stop = stops_.find(generated_)) safe = std::min(safe, *stop);  // a whole stop string is never shown
    if (safe <= emitted_) return {};
    std::string out = utf8_.push(std::string_view(generated_).substr(emitted_, safe - emitted_));
    emitted_ = safe;
    shown_ += out;
    return out;
}

std::string AnswerText::finish(const std::string& summaryText) {
    std::string out;
    if (summaryText.size() > emitted_) out = utf8_.push(std::string_view(summaryText).substr(emitted_));
    emitted_ = std::max(emitted_, summaryText.size());
    out += utf8_.flush();
    shown_ += out;
    return out;
}

void CompletionJob::onStep(const StepRecord& step) {
    if (keepSteps_ && !step.endOfGeneration) steps_.push_back(step);
    send(text_.push(step.piece));
}

void CompletionJob::onFinish(const GenerationSummary& summary) { send(text_.finish(summary.text)); }

void CompletionJob::send(const std::string& delta) {
    if (!onChunk_ || clientGone_ || (delta.empty() && steps_.empty())) return;
    if (!onChunk_(delta, steps_)) clientGone_ = true;
    steps_.clear();
}

}  // namespace inferscope::server
