#pragma once
// One request run on one engine: the prompt's tokens (the chat template for messages, the text as
// the CLI's generate tokenizes it for a completion) and the generation's events turned into text
// a client may be shown (whole UTF-8 characters, never the start of a stop string) with the tokens
// that came with it.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/chat_template.h"
#include "engine/generation.h"
#include "engine/stop_strings.h"
#include "server/openai_request.h"
#include "tokenizer/utf8_stream.h"

namespace inferscope {
class Tokenizer;
}

namespace inferscope::server {

// The prompt's token ids: chat messages rendered by `tmpl` (system messages joined into its system
// prompt, one chunk per message as the app renders them), or the completion prompt with BOS as the
// vocabulary asks.
std::vector<int32_t> promptTokens(const ServeRequest& request, const ChatTemplate& tmpl, const Tokenizer& tokenizer);
// The strings that end the answer: the request's, and for chat the template's turn markers.
std::vector<std::string> stopStringsFor(const ServeRequest& request, const ChatTemplate& tmpl);

// The text of an answer as it may be shown while it streams.
class AnswerText {
public:
    explicit AnswerText(std::vector<std::string> stops) : stops_(std::move(stops)) {}
    std::string push(const std::string& piece);              // what can be shown now
    std::string finish(const std::string& summaryText);      // the rest (summaryText: cut at a stop string)
    const std::string& shown() const { return shown_; }

private:
    StopStringMatcher stops_;
    Utf8Stream utf8_;
    std::string generated_, shown_;
    size_t emitted_ = 0;
};

// Observes a generation; with a chunk callback (streaming) hands over each piece of text with the
// steps listed in logprobs since the last call. The callback returns false when the client is gone:
// `clientGone()` is then true and the caller's cancel check stops the generation before its next pass.
class CompletionJob : public GenerationObserver {
public:
    using ChunkFn = std::function<bool(const std::string& delta, std::vector<StepRecord>& steps)>;
    CompletionJob(const ServeRequest& request, std::vector<std::string> stops, ChunkFn onChunk = {})
        : keepSteps_(request.logprobs), text_(std::move(stops)), onChunk_(std::move(onChunk)) {}
    void onStep(const StepRecord& step) override;
    void onFinish(const GenerationSummary& summary) override;
    bool clientGone() const { return clientGone_; }
    const std::string& text() const { return text_.shown(); }
    std::vector<StepRecord>& steps() { return steps_; }  // not streaming: every listed step

private:
    void send(const std::string& delta);
    bool keepSteps_;
    AnswerText text_;
    ChunkFn onChunk_;
    std::vector<StepRecord> steps_;
    bool clientGone_ = false;
};

}  // namespace inferscope::server
