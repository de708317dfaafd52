#pragma once
// The OpenAI-compatible HTTP server (cpp-httplib): routes, the API key, body limits and errors as
// OpenAI's error JSON, the slots' loading (503 until every slot is loaded), and each request's
// run on a slot (serve_handlers.cpp).
//
//   GET  /health               {"status": "ok", "slots", "slots_idle", "requests", "requests_cancelled"}
//                              (requests_cancelled: generations stopped because their client left; 503 while loading)
//   GET  /v1/models            the one served model
//   POST /v1/chat/completions  messages through the model's chat template
//   POST /v1/completions       a prompt continued as written

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "engine/chat_template.h"
#include "engine/engine.h"
#include "server/openai_request.h"
#include "server/slot_pool.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace inferscope::server {

struct ServeOptions {
    std::string host = "127.0.0.1";
    int port = 8080;                      // 0: any free port (bind() returns it)
    std::string apiKey;                   // non-empty: every request needs "Authorization: Bearer <key>"
    int32_t parallel = 1;                 // slots, each an engine with its own KV cache
    int32_t queue = 16;                   // requests that may wait for a slot; more get 429
    size_t maxBodyBytes = 4u << 20;       // larger bodies get 413
    std::string modelId;                  // the id /v1/models lists and requests may name
    EngineOptions engine;                 // threads: per slot
    std::optional<ChatTemplateKind> chatTemplate;  // none: the file's (defaultChatTemplate)
};

class OpenAiServer {
public:
    explicit OpenAiServer(ServeOptions options);
    ~OpenAiServer();
    // Binds the listening socket: the port, or -1 (the error is the OS's, e.g. the port is taken).
    int bind();
    // Serves until stop(); call after bind(), typically on its own thread.
    bool listen();
    // Loads the slots one after another (the server answers 503 meanwhile). Error: the first load's.
    Result<void> loadSlots();
    void stop();

private:
    void route();
    bool authorised(const httplib::Request& req, httplib::Response& res) const;
    void handleCompletion(const httplib::Request& req, httplib::Response& res, Endpoint endpoint);
    void sendError(httplib::Response& res, const ApiError& error) const;

    ServeOptions options_;
    std::unique_ptr<httplib::Server> http_;
    SlotPool slots_;
    std::atomic<bool> ready_{false};
    ChatTemplate template_;
    std::shared_ptr<const Tokenizer> tokenizer_;
    int32_t contextLength_ = 0;
    int64_t created_ = 0;
    std::atomic<uint64_t> requests_{0};
    std::atomic<uint64_t> cancelled_{0};
};

}  // namespace inferscope::server
