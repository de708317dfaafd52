#include "server/http_server.h"

#include <fmt/format.h>

#include <ctime>

#include "server/openai_response.h"
#include "tokenizer/tokenizer.h"

namespace inferscope::server {
http::Reply errorReply(const ApiError& error) {
    return http::Reply{error.status, "application/json", {}, dumpJson(errorJson(error))};
}

OpenAiServer::OpenAiServer(ServeOptions options)
    : options_(std::move(options)), listener_(options_.limits, *this), log_(options_.logFile) {
    created_ = int64_t(std::time(nullptr));
    policy_.loopbackBind = isLoopbackAddress(options_.host);
    policy_.allowedHosts = options_.allowedHosts;
    policy_.corsOrigins = options_.corsOrigins;
    policy_.keys = &options_.keys;
    policy_.maxBodyBytes = options_.limits.maxBodyBytes;
    requestThread_ = std::make_unique<TaskThread>();
}

OpenAiServer::~OpenAiServer() = default;

std::optional<int> OpenAiServer::bind(std::string& error) { return listener_.bind(options_.host, options_.port, error); }

void OpenAiServer::run() { listener_.run(); }

void OpenAiServer::shutdown() { listener_.shutdown(std::chrono::milliseconds(1800)); }

Result<void> OpenAiServer::loadSlots() {
    if (auto ok = slots_.load(options_.engine, options_.parallel, options_.draftModel); !ok) return ok;
    const Engine& engine = slots_.engine(0);
    tokenizer_ = engine.sharedTokenizer();
    contextLength_ = engine.contextLength();  // a slot's share of the budget
    template_.kind = options_.chatTemplate.value_or(defaultChatTemplate(detectChatTemplate(engine.info().chatTemplate), tokenizer_.get()));
    for (int32_t id = 0; id < tokenizer_->vocabSize(); ++id)
        maxTokenBytes_ = std::max({maxTokenBytes_, tokenizer_->tokenBytes(id).size(), tokenizer_->piece(id).size()});
    admission_ = std::make_unique<Admission>(slots_.size(), size_t(std::max(0, options_.queue)),
                                             [this](size_t slot) { return slots_.cachedTokens(slot); });
    ready_ = true;
    return {};
}

std::string OpenAiServer::health() const {
    return dumpJson({{"status", "ok"},
                     {"slots", admission_->slots()},
                     {"slots_idle", admission_->idle()},
                     {"queue", admission_->waiting()},
                     {"requests", requests_.load()},
                     {"requests_cancelled", cancelled_.load()},
                     {"connections", listener_.openConnections()}});
}

ServerFigures OpenAiServer::figures() const {
    ServerFigures f;
    for (size_t i = 0; i < slots_.size(); ++i) f.slots.push_back(slots_.state(i));
    f.passes = slots_.passStats();
    f.requests = requests_.load();
    f.cancelled = cancelled_.load();
    f.promptTokens = promptTokens_.load();
    f.generatedTokens = generatedTokens_.load();
    f.queued = admission_->waiting();
    f.connections = listener_.openConnections();
    return f;
}

http::HeadVerdict OpenAiServer::onHead(const http::RequestHead& head) {
    const HeadDecision d = decideHead(head, policy_);
    http::HeadVerdict v;
    v.headers = d.headers;
    v.tag = int(d.route);
    v.logKey = d.keyIndex >= 0 ? options_.keys.masked(d.keyIndex) : "-";
    if (d.refusal) v.refusal = errorReply(*d.refusal);
    else if ((d.route == Route::ChatCompletions || d.route == Route::Completions) && !ready_)
        v.refusal = errorReply({503, "the model is loading; try again when GET /health answers 200", "server_error", {}, "model_loading"});
    return v;
}

void OpenAiServer::onRequest(std::shared_ptr<http::Exchange> exchange, const http::HeadVerdict& verdict) {
    switch (Route(verdict.tag)) {
        case Route::Preflight: return exchange->reply(http::Reply{204, "", {}, {}});
        case Route::Health:
            if (!ready_) return exchange->reply(errorReply({503, "the model is loading", "server_error", {}, "model_loading"}));
            return exchange->reply(http::Reply{200, "application/json", {}, health()});
        case Route::Metrics:
        case Route::Slots: {
            if (!ready_) return exchange->reply(errorReply({503, "the model is loading", "server_error", {}, "model_loading"}));
            const ServerFigures f = figures();
            if (Route(verdict.tag) == Route::Slots) return exchange->reply(http::Reply{200, "application/json", {}, slotsJson(f)});
            return exchange->reply(http::Reply{200, "text/plain; version=0.0.4; charset=utf-8", {}, prometheusText(f)});
        }
        case Route::Models: {
            Json model = {{"id", options_.modelId}, {"object", "model"}, {"created", created_}, {"owned_by", "inferscope"}};
            if (ready_) model["context_length"] = contextLength_;
            return exchange->reply(http::Reply{200, "application/json", {}, dumpJson({{"object", "list"}, {"data", Json::array({model})}})});
        }
        case Route::ChatCompletions:
        case Route::Completions: {
            const Endpoint endpoint = Route(verdict.tag) == Route::ChatCompletions ? Endpoint::Chat : Endpoint::Completion;
            requestThread_->post([this, exchange, endpoint] { handleCompletion(exchange, endpoint); });
            return;
        }
    }
}

void OpenAiServer::onAccess(const AccessRecord& record) { log_.write(record); }

}  // namespace inferscope::server
