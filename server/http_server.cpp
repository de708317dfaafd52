#include "server/http_server.h"

#include <httplib.h>

#include <ctime>
#include <fmt/format.h>

#include "server/connection_watch.h"
#include "server/openai_response.h"

namespace inferscope::server {
namespace {

ApiError errorForStatus(int status, const httplib::Request& req, size_t maxBody) {
    switch (status) {
        case 404: return {404, fmt::format("no route {} {}: this server has GET /health, GET /v1/models, POST /v1/chat/completions and POST /v1/completions", req.method, req.path), "invalid_request_error", {}, "unknown_url"};
        case 405: return {405, fmt::format("{} is not allowed on {}", req.method, req.path), "invalid_request_error", {}, "method_not_allowed"};
        case 413: return {413, fmt::format("the request body is over this server's limit of {} bytes", maxBody), "invalid_request_error", {}, "request_too_large"};
        default: return {status, fmt::format("the request could not be served (HTTP {})", status), status >= 500 ? "server_error" : "invalid_request_error", {}, {}};
    }
}

}  // namespace

OpenAiServer::OpenAiServer(ServeOptions options)
    : options_(std::move(options)), http_(std::make_unique<httplib::Server>()), slots_(size_t(std::max(0, options_.queue))) {
    created_ = int64_t(std::time(nullptr));
    // Enough connection threads for every slot, a full queue and a few clients kept alive beside
    // them, so that a request past the queue reaches the handler and gets its 429.
    const size_t threads = size_t(options_.parallel + options_.queue + 8);
    http_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    http_->set_payload_max_length(options_.maxBodyBytes);
    http_->set_keep_alive_timeout(5);
    http_->set_read_timeout(10, 0);
    route();
}

OpenAiServer::~OpenAiServer() { stop(); }

int OpenAiServer::bind() {
    const int port = options_.port == 0 ? http_->bind_to_any_port(options_.host)
                                        : http_->bind_to_port(options_.host, options_.port) ? options_.port : -1;
    if (port > 0) widenListenBacklog(port);
    return port;
}

bool OpenAiServer::listen() { return http_->listen_after_bind(); }

void OpenAiServer::stop() {
    if (http_ && http_->is_running()) http_->stop();
}

Result<void> OpenAiServer::loadSlots() {
    for (int32_t i = 0; i < options_.parallel; ++i) {
        auto engine = slots_.addSlot(options_.engine);
        if (!engine) return std::unexpected(engine.error());
        if (i == 0) {
            tokenizer_ = (*engine)->sharedTokenizer();
            contextLength_ = (*engine)->contextLength();
            template_.kind = options_.chatTemplate.value_or(
                defaultChatTemplate(detectChatTemplate((*engine)->info().chatTemplate), tokenizer_.get()));
        }
    }
    ready_ = true;
    return {};
}

void OpenAiServer::sendError(httplib::Response& res, const ApiError& error) const {
    res.status = error.status;
    res.set_content(dumpJson(errorJson(error)), "application/json");
}

bool OpenAiServer::authorised(const httplib::Request& req, httplib::Response& res) const {
    if (options_.apiKey.empty() || req.get_header_value("Authorization") == "Bearer " + options_.apiKey) return true;
    sendError(res, {401, req.has_header("Authorization") ? "the API key is not this server's" : "this server needs an API key: send Authorization: Bearer <key>",
                    "invalid_request_error", {}, "invalid_api_key"});
    return false;
}

void OpenAiServer::route() {
    http_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
        return authorised(req, res) ? httplib::Server::HandlerResponse::Unhandled : httplib::Server::HandlerResponse::Handled;
    });
    http_->set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
        if (res.body.empty()) sendError(res, errorForStatus(res.status, req, options_.maxBodyBytes));
    });
    http_->set_exception_handler([this](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown error";
        try {
            std::rethrow_exception(ep);
        } catch (const std::exception& e) {
            what = e.what();
        } catch (...) {
        }
        sendError(res, {500, "the server failed: " + what, "server_error", {}, {}});
    });
    http_->Get("/health", [this](const httplib::Request&, httplib::Response& res) {
        if (!ready_) return sendError(res, {503, "the model is loading", "server_error", {}, "model_loading"});
        res.set_content(dumpJson({{"status", "ok"}, {"slots", slots_.size()}, {"slots_idle", slots_.idle()}, {"requests", requests_.load()},
                                   {"requests_cancelled", cancelled_.load()}}),
                        "application/json");
    });
    http_->Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
        Json model = {{"id", options_.modelId}, {"object", "model"}, {"created", created_}, {"owned_by", "inferscope"}};
        if (ready_) model["context_length"] = contextLength_;
        res.set_content(dumpJson({{"object", "list"}, {"data", Json::array({model})}}), "application/json");
    });
    http_->Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) { handleCompletion(req, res, Endpoint::Chat); });
    http_->Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) { handleCompletion(req, res, Endpoint::Completion); });
}

}  // namespace inferscope::server
