// OpenAiServer's completions: a POST /v1/chat/completions or /v1/completions from its body to the
// answer (whole, or streamed as server-sent events). handleCompletion runs on the request thread,
// start() wherever the slot became free, run() on the slot's thread (it returns the answer's last
// step, sent once the slot is released).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <random>

#include "server/completion_job.h"
#include "server/http_server.h"
#include "server/openai_response.h"
#include "server/openai_tool_response.h"
#include "grammar/gbnf.h"
#include "tokenizer/tokenizer.h"

namespace inferscope::server {
namespace {

uint64_t freshSeed() {
    static std::random_device device;
    static std::mutex mutex;
    std::lock_guard lock(mutex);
    return (uint64_t(device()) << 32) | device();
}

ApiError engineError(const Error& e) {
    const bool invalid = e.kind == ErrorKind::InvalidArgument;
    return {invalid ? 400 : 500, e.message, invalid ? "invalid_request_error" : "server_error", {}, {}};
}

const ApiError kShuttingDown{503, "the server is shutting down", "server_error", {}, "server_shutting_down"};

// The bytes of what will be tokenized: the messages' contents and calls, the tools shown (or the prompt).
size_t promptBytes(const ServeRequest& r) {
    if (r.endpoint == Endpoint::Completion) return r.prompt.size();
    size_t n = 0;
    for (const ChatMessage& m : r.messages) {
        n += m.content.size();
        for (const ToolCall& c : m.toolCalls) n += c.name.size() + c.arguments.size();
    }
    if (r.toolChoice != ToolChoice::None)
        for (const ToolFunction& t : r.tools) n += t.declaration.dump().size();
    return n;
}

// echo with logprobs, prompt_logprobs: each prompt token's log-probability given the tokens before
// it (the first has none), its rank and the `top` most probable tokens there, teacher-forced in
// prefill batches (Engine::scoreRows). The cache is left holding the prompt but its last token, so
// the generation that follows reuses it.
Result<std::vector<PromptPositionLogprobs>> scorePrompt(Engine& engine, const std::vector<int32_t>& prompt, int32_t top,
                                                        const std::function<bool()>& cancel) {
    const int32_t n = int32_t(prompt.size());
    std::vector<PromptPositionLogprobs> out(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i) out[size_t(i)].id = prompt[size_t(i)];
    std::vector<float> logits;
    std::vector<int32_t> order;
    const int32_t step = engine.maxScoreRows();
    for (int32_t from = 0; from < n - 1; from += step) {
        if (cancel()) return fail(ErrorKind::Cancelled, "cancelled");
        const int32_t count = std::min(step, n - 1 - from);
        if (auto ok = engine.scoreRows(prompt, from, count, logits); !ok) return std::unexpected(ok.error());
        const size_t vocab = logits.size() / size_t(count);
        for (int32_t row = 0; row < count; ++row) {
            const std::span<const float> l(logits.data() + size_t(row) * vocab, vocab);
            const float max = *std::max_element(l.begin(), l.end());
            double sum = 0;
            for (float x : l) sum += std::exp(double(x) - double(max));
            const double lse = double(max) + std::log(sum);
            PromptPositionLogprobs& t = out[size_t(from + row + 1)];
            const float own = l[size_t(t.id)];
            t.logprob = double(own) - lse;
            t.rank = 1;
            for (size_t id = 0; id < vocab; ++id) t.rank += l[id] > own || (l[id] == own && int32_t(id) < t.id) ? 1 : 0;
            if (top <= 0) continue;
            order.resize(vocab);
            for (size_t id = 0; id < vocab; ++id) order[id] = int32_t(id);
            const size_t k = std::min(vocab, size_t(top));
            std::partial_sort(order.begin(), order.begin() + ptrdiff_t(k), order.end(), [&](int32_t a, int32_t b) {
                return l[size_t(a)] > l[size_t(b)] || (l[size_t(a)] == l[size_t(b)] && a < b);
            });
            for (size_t j = 0; j < k; ++j) t.top.emplace_back(order[j], double(l[size_t(order[j])]) - lse);
        }
    }
    return out;
}

// What echo lists of the scored prompt: the tokens' text and their `top` alternatives.
std::vector<PromptTokenLogprob> echoTokens(const std::vector<PromptPositionLogprobs>& scored, const Tokenizer& tokenizer, int32_t top) {
    std::vector<PromptTokenLogprob> out;
    out.reserve(scored.size());
    for (const PromptPositionLogprobs& p : scored) {
        PromptTokenLogprob& t = out.emplace_back();
        t.piece = tokenizer.tokenBytes(p.id);
        t.logprob = p.logprob;
        for (size_t j = 0; j < p.top.size() && j < size_t(top); ++j) t.top.emplace_back(tokenizer.tokenBytes(p.top[j].first), p.top[j].second);
    }
    return out;
}

// prompt_logprobs as asked: each position's alternatives cut to `top`.
std::vector<PromptPositionLogprobs> cutTo(std::vector<PromptPositionLogprobs> scored, int32_t top) {
    for (PromptPositionLogprobs& p : scored)
        if (p.top.size() > size_t(top)) p.top.resize(size_t(top));
    return scored;
}

}  // namespace

// One request from its place in line to its answer.
struct OpenAiServer::Job {
    std::shared_ptr<http::Exchange> exchange;
    ServeRequest request;
    GenerateRequest generate;
    std::vector<std::string> stops;
    ResponseHeader header;
    Admission::Ticket ticket = 0;
    enum class Phase { Waiting, Running, Done };
    std::mutex mutex;
    Phase phase = Phase::Waiting;
};

void OpenAiServer::handleCompletion(const std::shared_ptr<http::Exchange>& exchange, Endpoint endpoint) {
    http::Exchange& ex = *exchange;
    if (ex.stopping()) return ex.reply(errorReply(kShuttingDown));
    if (ex.gone()) {  // nobody reads an answer
        ++cancelled_;
        return ex.reply(errorReply(kShuttingDown));
    }
    auto parsed = parseServeRequest(ex.body(), endpoint);
    ex.releaseBody();
    if (!parsed) return ex.reply(errorReply(parsed.error()));
    ServeRequest& r = *parsed;
    const char* promptField = endpoint == Endpoint::Chat ? "messages" : "prompt";
    if (!r.model.empty() && r.model != options_.modelId)
        return ex.reply(errorReply({404, fmt::format("the model asked for is not served here; this server serves '{}'", options_.modelId),
                                    "invalid_request_error", "model", "model_not_found"}));
    for (const auto& [id, bias] : r.sampler.logitBias)
        if (id >= tokenizer_->vocabSize())
            return ex.reply(errorReply(badParameter("logit_bias", fmt::format("logit_bias names a token past the vocabulary of {} tokens", tokenizer_->vocabSize()))));
    if (r.ignoreEos) {  // every token that would end the answer: a generated BOS ends it too (engine.h)
        for (int32_t id : tokenizer_->endOfGenerationIds()) r.sampler.logitBias.emplace_back(id, -1e9f);
        if (tokenizer_->bosId() >= 0) r.sampler.logitBias.emplace_back(tokenizer_->bosId(), -1e9f);
    }
    for (int32_t id : r.logprobTokenIds)
        if (id >= tokenizer_->vocabSize())
            return ex.reply(errorReply(badParameter("logprob_token_ids", fmt::format("logprob_token_ids names a token past the vocabulary of {} tokens", tokenizer_->vocabSize()))));
    if (r.toolChoice != ToolChoice::None) {  // the calls' grammar, in the served template's syntax
        grammar::GbnfLimits limits;
        limits.quoteInput = false;
        auto g = grammar::parseGbnf(toolCallGbnf(toolSyntaxFor(template_.kind), r), limits);
        if (!g) return ex.reply(errorReply(badParameter("tools", "the tools' grammar could not be compiled: " + g.error().message)));
        r.grammar = std::make_shared<const grammar::Grammar>(std::move(*g));
    }
    if (promptBytes(r) > size_t(contextLength_) * maxTokenBytes_)
        return ex.reply(errorReply({400, fmt::format("the prompt is longer than the context of {} tokens can hold; shorten it", contextLength_),
                                    "invalid_request_error", promptField, "context_length_exceeded"}));

    auto job = std::make_shared<Job>();
    job->exchange = exchange;
    const auto ticket = admission_->enter();
    if (!ticket)
        return ex.reply(errorReply({429, fmt::format("every slot is busy and {} requests are waiting; retry later", options_.queue),
                                    "rate_limit_error", {}, "rate_limit_exceeded"}));
    job->ticket = *ticket;
    ex.onInterrupt([this, weak = std::weak_ptr<Job>(job)] {  // weak: the job holds the exchange
        if (auto held = weak.lock()) interrupt(held);
    });
    if (ex.gone() || ex.stopping()) return interrupt(job);  // before onInterrupt was set

    job->generate.prompt = promptTokens(r, template_, *tokenizer_);
    auto refuse = [&](ApiError error) {
        {
            std::lock_guard lock(job->mutex);
            if (job->phase != Job::Phase::Waiting || !admission_->leave(job->ticket)) return;
            job->phase = Job::Phase::Done;
        }
        ex.reply(errorReply(error));
    };
    if (job->generate.prompt.empty()) return refuse(badParameter(promptField, "the prompt is empty"));
    if (int64_t(job->generate.prompt.size()) >= contextLength_)
        return refuse({400, fmt::format("the prompt is {} tokens but the context holds {}; shorten it", job->generate.prompt.size(), contextLength_),
                       "invalid_request_error", promptField, "context_length_exceeded"});
    job->generate.sampler = r.sampler;
    job->generate.sampler.seed = r.seed.value_or(freshSeed());
    job->generate.maxTokens = r.maxTokens.value_or(contextLength_);
    job->stops = stopStringsFor(r, template_);
    job->generate.stopStrings = job->stops;
    job->generate.grammar = r.grammar;  // structured output: every step masked by it
    job->generate.namedTokens = r.logprobTokenIds;
    job->request = std::move(r);
    const std::vector<int32_t> prompt = job->generate.prompt;
    admission_->ready(job->ticket, prompt, [this, job](size_t slot) { start(job, slot); });
}

void OpenAiServer::interrupt(const std::shared_ptr<Job>& job) {
    {
        std::lock_guard lock(job->mutex);
        if (job->phase != Job::Phase::Waiting || !admission_->leave(job->ticket)) return;  // running: its cancel check sees it
        job->phase = Job::Phase::Done;
    }
    if (job->exchange->gone()) ++cancelled_;
    job->exchange->reply(errorReply(kShuttingDown));  // written only if the client is still there
}

void OpenAiServer::start(const std::shared_ptr<Job>& job, size_t slot) {
    {
        std::lock_guard lock(job->mutex);
        if (job->phase != Job::Phase::Waiting) {
            admission_->release(slot);
            return;
        }
        job->phase = Job::Phase::Running;
    }
    const uint64_t n = ++requests_;
    const Endpoint endpoint = job->request.endpoint;
    job->header = {endpoint, fmt::format("{}-{:x}{:04x}", endpoint == Endpoint::Chat ? "chatcmpl" : "cmpl", created_, n), options_.modelId,
                   int64_t(std::time(nullptr))};
    // The slot is free before the client hears the end of its answer: a follow-up sent the moment
    // the answer ends finds its conversation's slot free, with that conversation in its cache.
    slots_.post(slot, [this, job, slot](Engine& engine, Engine* draft) {
        const auto complete = run(*job, engine, draft);
        admission_->release(slot);
        complete();
    });
}

std::function<void()> OpenAiServer::run(Job& job, Engine& engine, Engine* draft) {
    http::Exchange& ex = *job.exchange;
    if (options_.speculative && !job.generate.grammar) {  // a grammar is followed one token at a time
        job.generate.speculative = options_.speculative;
        job.generate.speculative->draftModel = draft;
    }
    const ServeRequest& r = job.request;
    const StepPieceLookup pieceOf = [tok = tokenizer_](int32_t id) { return std::optional(tok->tokenBytes(id)); };
    auto cancel = [&ex] { return ex.gone() || ex.stopping(); };
    // echo, prompt_logprobs: the prompt's own log-probabilities first; max_tokens 0 asks for nothing more.
    std::vector<PromptTokenLogprob> echoed;
    std::vector<PromptPositionLogprobs> promptScores;
    std::optional<Error> echoError;
    const bool echoScores = r.echo && r.logprobs;
    if (echoScores || r.promptLogprobs) {
        const int32_t top = std::max(echoScores ? r.topLogprobs : 0, r.promptLogprobs.value_or(0));
        auto scored = scorePrompt(engine, job.generate.prompt, top, cancel);
        if (!scored) {
            echoError = scored.error();
        } else {
            if (echoScores) echoed = echoTokens(*scored, *tokenizer_, r.topLogprobs);
            if (r.promptLogprobs) promptScores = cutTo(std::move(*scored), *r.promptLogprobs);
        }
    }
    const bool generateNothing = r.maxTokens && *r.maxTokens == 0;
    auto generate = [&](GenerationObserver* observer) -> Result<GenerationSummary> {
        if (echoError && echoError->kind != ErrorKind::Cancelled) return std::unexpected(*echoError);
        if (!generateNothing && !echoError) {
            auto result = engine.generate(job.generate, observer, cancel);
            if (result) {
                promptTokens_ += uint64_t(result->prefill.nPrompt);
                generatedTokens_ += uint64_t(result->nGenerated);
            }
            return result;
        }
        GenerationSummary none;  // the prompt alone, as scored (or the client left while it was)
        none.reason = echoError || cancel() ? FinishReason::Cancelled : FinishReason::MaxTokens;
        none.prefill.nPrompt = int32_t(job.generate.prompt.size());
        if (observer) observer->onFinish(none);
        return none;
    };
    if (!r.stream) {
        CompletionJob completion(r, job.stops);
        auto result = generate(&completion);
        http::Reply reply;
        if (!result) {
            reply = errorReply(engineError(result.error()));
        } else if (result->reason == FinishReason::Cancelled && ex.gone()) {
            ++cancelled_;
            reply = errorReply(kShuttingDown);  // not written: nobody is there
        } else {
            // Cancelled and not gone: the server is stopping; what was generated, marked so.
            const std::string_view finish = result->reason == FinishReason::Cancelled ? kFinishAborted : openAiFinishReason(result->reason);
            Json body = completionResponse(job.header, completion.text(), *result, completion.steps(), r, pieceOf, finish);
            if (r.toolChoice != ToolChoice::None && result->reason != FinishReason::Cancelled)
                if (ParsedAnswer answer = parseToolAnswer(toolSyntaxFor(template_.kind), completion.text(), r.tools); !answer.calls.empty())
                    setToolCalls(body["choices"][0], answer);
            if (r.echo) prependEcho(body["choices"][0], r.prompt, echoed, r.logprobs);
            if (r.promptLogprobs)  // vLLM's places: in the choice (completions), beside the choices (chat)
                (r.endpoint == Endpoint::Chat ? body : body["choices"][0])["prompt_logprobs"] = promptLogprobsJson(promptScores, pieceOf);
            reply = http::Reply{200, "application/json", {}, dumpJson(body)};
        }
        return [&ex, reply = std::move(reply)]() mutable { ex.reply(std::move(reply)); };
    }

    ex.startStream(200, "text/event-stream", {{"Cache-Control", "no-cache"}});
    bool first = true;
    size_t offset = r.echo ? r.prompt.size() : 0;  // of the next listed token in the answer's bytes
    if (r.echo && !echoError) {  // the prompt (and its tokens) in the first chunk
        Json chunk = completionChunk(job.header, "", {}, r, pieceOf, true);
        prependEcho(chunk["choices"][0], r.prompt, echoed, r.logprobs);
        ex.send(sseEvent(chunk));
        first = false;
    }
    const bool tools = r.toolChoice != ToolChoice::None;
    ToolCallStream stream(toolSyntaxFor(template_.kind), r.tools);  // tools: calls as tool_calls deltas, never as content
    CompletionJob completion(r, job.stops, [&](const std::string& delta, std::vector<StepRecord>& steps) {
        StreamPart part = tools ? stream.push(delta) : StreamPart{delta, {}};
        bool ok = true;
        if (!part.content.empty() || !steps.empty()) {
            ok = ex.send(sseEvent(completionChunk(job.header, part.content, steps, r, pieceOf, first, {}, offset)));
            first = false;
        }
        for (const StepRecord& s : steps) offset += s.piece.size();
        part.content.clear();
        if (!part.calls.empty()) ok = ex.send(toolStreamEvents(job.header, r, part, first)) && ok;
        return ok;
    });
    auto result = generate(&completion);
    std::string last;
    if (!result) {
        last = sseEvent(errorJson(engineError(result.error())));
    } else if (result->reason == FinishReason::Cancelled && ex.gone()) {
        ++cancelled_;
    } else {
        std::string_view finish = result->reason == FinishReason::Cancelled ? kFinishAborted : openAiFinishReason(result->reason);
        const std::vector<StepRecord> none;
        if (tools) {
            bool calls = false;
            const StreamPart rest = stream.finish(result->reason != FinishReason::Cancelled, calls);
            last = toolStreamEvents(job.header, r, rest, first);
            if (calls) finish = kFinishToolCalls;
        }
        last += sseEvent(completionChunk(job.header, "", none, r, pieceOf, first, finish));
        if (r.includeUsage) last += sseEvent(usageChunk(job.header, *result));
    }
    last += kSseDone;
    return [&ex, last = std::move(last)] {
        ex.send(last);
        ex.finish();
    };
}

}  // namespace inferscope::server
