#pragma once
// What the server sends back, shaped as OpenAI's API: completion objects, streamed chunks (SSE),
// logprobs, usage, plus our timings and a per-token extension. Pure functions of plain values.
//
// logprobs are of the model's own distribution (the raw softmax, before any sampler stage):
// logit - logSumExp in double; with logprobs_mode "processed_logprobs", of the distribution each
// token was drawn from. Per token, "inferscope" holds the step record in the schema the
// CLI's --json and the app's export share (record/step_record_json.h): p_final (the probability
// in the distribution drawn from), survivors after each stage, and each top candidate's
// probability after every stage. The end-of-generation token adds no text and is not listed,
// as OpenAI does; usage counts it.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/generation.h"
#include "record/step_record_json.h"
#include "server/openai_request.h"

namespace inferscope::server {

using Json = nlohmann::ordered_json;

// Who answered: the values every object of one response repeats.
struct ResponseHeader {
    Endpoint endpoint = Endpoint::Chat;
    std::string id;     // "chatcmpl-…" / "cmpl-…"
    std::string model;
    int64_t created = 0;  // Unix seconds
};

std::string_view openAiFinishReason(FinishReason reason);  // "stop" or "length" (nothing for cancelled)
// The finish_reason of an answer the server stopped because it is shutting down (vLLM's word for
// an aborted request): the text so far, marked as cut.
inline constexpr std::string_view kFinishAborted = "abort";
// OpenAI's usage; prompt_tokens_details.cached_tokens: the prompt's tokens whose KV cache was
// reused (the slot's own, or copied from another slot's).
Json usageJson(const GenerationSummary& summary);
// Ours, beside usage: prompt_tokens_reused, prompt_tokens_copied (of those, from another slot's
// cache), prefill_ms, prefill_tokens_per_s, decode_ms,
// decode_tokens_per_s, time_to_first_token_ms; with speculative decoding draft_n and
// draft_n_accepted (llama.cpp's server's names).
Json timingsJson(const GenerationSummary& summary);

// The chat endpoint's entry for one token: {token, logprob, bytes, top_logprobs: [{token, logprob,
// bytes}], inferscope: step record}. pieceOf gives the alternatives' text.
// mode Processed: logprob is of the distribution the token was drawn from (log pFinal) and
// top_logprobs its most probable survivors (SampleRecord::finalTop); a token with no probability
// there (never drawn: only a described pick) gets OpenAI's floor, -9999. With namedIds (the step's
// namedLogits were kept for them), `token_id_logprobs`: [{id, token, logprob}], raw in either mode.
Json chatTokenLogprob(const StepRecord& step, int32_t topLogprobs, const StepPieceLookup& pieceOf,
                      LogprobsMode mode = LogprobsMode::Raw, std::span<const int32_t> namedIds = {});
// The legacy endpoint's logprobs object for these tokens: {tokens, token_logprobs, top_logprobs:
// [{token: logprob}], text_offset, inferscope: [step records]}; text offsets count from textStart.
// mode and namedIds as chatTokenLogprob (token_id_logprobs: one array per token).
Json completionLogprobs(const std::vector<StepRecord>& steps, int32_t topLogprobs, const StepPieceLookup& pieceOf, size_t textStart,
                        LogprobsMode mode = LogprobsMode::Raw, std::span<const int32_t> namedIds = {});

// vLLM's prompt_logprobs, one entry per prompt token: null for the first, else an object keyed by
// token id ("12") of {logprob, rank, decoded_token}, the prompt's own token first, then the most
// probable tokens at its position (the prompt's token not repeated).
struct PromptPositionLogprobs {
    int32_t id = 0;
    std::optional<double> logprob;  // none: the first token
    int32_t rank = 0;               // 1 = the highest raw logit (ties: lower id first)
    std::vector<std::pair<int32_t, double>> top;  // (id, logprob), descending
};
Json promptLogprobsJson(const std::vector<PromptPositionLogprobs>& positions, const StepPieceLookup& pieceOf);

// The prompt's tokens as echo lists them: each token's text and its log-probability given the
// tokens before it (the first has none), with the most probable tokens at its position.
struct PromptTokenLogprob {
    std::string piece;
    std::optional<double> logprob;
    std::vector<std::pair<std::string, double>> top;
};
// Puts the prompt in front of a legacy completion choice (or a stream's first chunk): its text, and
// with logprobs its tokens first (their token_logprobs, top_logprobs and inferscope null where
// there is nothing: the first token; the prompt's entries of inferscope always, no sampler ran),
// the answer's text offsets moved past the prompt. A prompt token's text_offset is the bytes of
// the token texts before it (SentencePiece's added leading space counts).
void prependEcho(Json& choice, const std::string& prompt, const std::vector<PromptTokenLogprob>& tokens, bool logprobs);

// A whole answer (stream: false). steps: the tokens to list in logprobs (empty when not asked).
// finish: the finish_reason, when not the summary's own.
Json completionResponse(const ResponseHeader& h, const std::string& text, const GenerationSummary& summary,
                        const std::vector<StepRecord>& steps, const ServeRequest& request, const StepPieceLookup& pieceOf,
                        std::optional<std::string_view> finish = std::nullopt);
// One streamed chunk: the text added and the tokens it came with; finish set on the last one.
// textOffset: where the first of these tokens starts in the answer (the legacy endpoint's text_offset).
Json completionChunk(const ResponseHeader& h, const std::string& delta, const std::vector<StepRecord>& steps,
                     const ServeRequest& request, const StepPieceLookup& pieceOf, bool first, std::string_view finish = {},
                     size_t textOffset = 0);
// The chunk after the last (stream_options.include_usage): no choices, usage and timings.
Json usageChunk(const ResponseHeader& h, const GenerationSummary& summary);

// "data: <json>\n\n"; dumped with invalid UTF-8 replaced by U+FFFD (a token may be part of a character).
std::string sseEvent(const Json& j);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";
std::string dumpJson(const Json& j);

}  // namespace inferscope::server
