// OpenAiServer::handleCompletion: one POST /v1/chat/completions or /v1/completions, from its body
// to the answer (whole, or streamed as server-sent events), on a slot of the pool.
#include <httplib.h>

#include <fmt/format.h>
#include <random>

#include "server/completion_job.h"
#include "server/connection_watch.h"
#include "server/http_server.h"
#include "server/openai_response.h"
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

// Everything one streamed answer needs after the handler has returned (httplib calls the content
// provider later, on the same connection thread).
struct StreamState {
    std::unique_ptr<SlotPool::Lease> lease;
    std::shared_ptr<ConnectionWatch> watch;
    ServeRequest request;
    GenerateRequest generate;
    std::vector<std::string> stops;
    ResponseHeader header;
    StepPieceLookup pieceOf;
};

void runStream(StreamState& st, httplib::DataSink& sink, std::atomic<uint64_t>& cancelled) {
    bool first = true;
    size_t offset = 0;  // of the next listed token in the answer's bytes
    auto write = [&sink](const std::string& event) { return sink.write(event.data(), event.size()); };
    CompletionJob job(st.request, st.stops, [&](const std::string& delta, std::vector<StepRecord>& steps) {
        const bool ok = write(sseEvent(completionChunk(st.header, delta, steps, st.request, st.pieceOf, first, {}, offset)));
        for (const StepRecord& s : steps) offset += s.piece.size();
        first = false;
        return ok;
    });
    std::optional<Result<GenerationSummary>> ran;  // set on the slot's thread
    st.lease->run([&](Engine& engine) { ran = engine.generate(st.generate, &job, [&] { return job.clientGone() || st.watch->closed(); }); });
    const Result<GenerationSummary>& result = *ran;
    if (!result) {
        write(sseEvent(errorJson(engineError(result.error()))));
    } else if (result->reason == FinishReason::Cancelled) {
        ++cancelled;
    } else {
        const std::vector<StepRecord> none;
        write(sseEvent(completionChunk(st.header, "", none, st.request, st.pieceOf, first, openAiFinishReason(result->reason))));
        if (st.request.includeUsage) write(sseEvent(usageChunk(st.header, *result)));
    }
    write(std::string(kSseDone));
    sink.done();
}

}  // namespace

void OpenAiServer::handleCompletion(const httplib::Request& req, httplib::Response& res, Endpoint endpoint) {
    if (!ready_) return sendError(res, {503, "the model is loading; try again when GET /health answers 200", "server_error", {}, "model_loading"});
    auto parsed = parseServeRequest(req.body, endpoint);
    if (!parsed) return sendError(res, parsed.error());
    ServeRequest& r = *parsed;
    if (!r.model.empty() && r.model != options_.modelId)
        return sendError(res, {404, fmt::format("the model '{}' does not exist on this server; it serves '{}'", r.model, options_.modelId),
                               "invalid_request_error", "model", "model_not_found"});
    auto st = std::make_shared<StreamState>();
    st->generate.prompt = promptTokens(r, template_, *tokenizer_);
    if (st->generate.prompt.empty()) return sendError(res, badParameter(endpoint == Endpoint::Chat ? "messages" : "prompt", "the prompt is empty"));
    if (int64_t(st->generate.prompt.size()) >= contextLength_)
        return sendError(res, {400, fmt::format("the prompt is {} tokens but the context holds {}; shorten it", st->generate.prompt.size(), contextLength_),
                               "invalid_request_error", endpoint == Endpoint::Chat ? "messages" : "prompt", "context_length_exceeded"});
    st->generate.sampler = r.sampler;
    st->generate.sampler.seed = r.seed.value_or(freshSeed());
    st->generate.maxTokens = r.maxTokens.value_or(contextLength_);
    st->stops = stopStringsFor(r, template_);
    st->generate.stopStrings = st->stops;
    st->watch = std::make_shared<ConnectionWatch>(req.remote_addr, req.remote_port, req.local_port);
    auto acquired = slots_.acquire(st->generate.prompt, [watch = st->watch] { return watch->closed(); });
    if (!acquired.lease) {
        if (acquired.refusal == SlotPool::Refusal::Cancelled) {  // the client is gone: nobody reads an answer
            ++cancelled_;
            return;
        }
        return sendError(res, {429, fmt::format("every slot is busy and {} requests are waiting; retry later", options_.queue),
                               "rate_limit_error", {}, "rate_limit_exceeded"});
    }
    st->lease = std::move(acquired.lease);
    const uint64_t n = ++requests_;
    st->header = {endpoint, fmt::format("{}-{:x}{:04x}", endpoint == Endpoint::Chat ? "chatcmpl" : "cmpl", created_, n), options_.modelId, int64_t(std::time(nullptr))};
    st->pieceOf = [tok = tokenizer_](int32_t id) { return std::optional(tok->tokenBytes(id)); };
    st->request = std::move(r);

    if (st->request.stream) {
        res.set_header("Cache-Control", "no-cache");
        res.set_chunked_content_provider("text/event-stream", [st, this](size_t, httplib::DataSink& sink) {
            runStream(*st, sink, cancelled_);
            st->lease.reset();  // free the slot now, not when httplib drops the provider
            return true;
        });
        return;
    }
    CompletionJob job(st->request, st->stops);
    std::optional<Result<GenerationSummary>> ran;  // set on the slot's thread
    st->lease->run([&](Engine& engine) { ran = engine.generate(st->generate, &job, [&] { return st->watch->closed(); }); });
    const Result<GenerationSummary>& result = *ran;
    st->lease.reset();
    if (!result) return sendError(res, engineError(result.error()));
    if (result->reason == FinishReason::Cancelled) {
        ++cancelled_;
        return;
    }
    res.set_content(dumpJson(completionResponse(st->header, job.text(), *result, job.steps(), st->request, st->pieceOf)), "application/json");
}

}  // namespace inferscope::server
