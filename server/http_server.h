#pragma once
// The OpenAI-compatible server behind `inferscope-cli serve`: what each route answers, on the
// transport of http/listener.h (bounded reads, one network thread) and the rules of
// request_policy.h (Host, Origin, key, framing), with a request thread that parses bodies and
// tokenizes prompts, a first-in-first-out line for the slots (admission.h) and the slots' own
// threads that generate.
//
//   GET  /health               {"status": "ok", "slots", "slots_idle", "queue", "requests",
//                              "requests_cancelled", "connections"} (public: no key; 503 while loading)
//   GET  /v1/models            the one served model
//   POST /v1/chat/completions  messages through the model's chat template
//   POST /v1/completions       a prompt continued as written
//
// A request's way: head checked (refused unread), body read, parsed on the request thread (JSON
// shape bounded first), a place in line taken (429 past the queue), the prompt bounded by bytes
// and only then tokenized, a slot when its turn comes, the answer whole or streamed. shutdown():
// no new connections, queued requests 503, running ones stopped with finish_reason "abort".

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/chat_template.h"
#include "engine/engine.h"
#include "server/access_log.h"
#include "server/admission.h"
#include "server/api_keys.h"
#include "server/http/listener.h"
#include "server/openai_request.h"
#include "server/request_policy.h"
#include "server/server_metrics.h"
#include "server/slot_pool.h"
#include "server/task_thread.h"

namespace inferscope::server {

struct ServeOptions {
    std::string host = "127.0.0.1";
    int port = 8080;                      // 0: any free port (bind() returns it)
    ApiKeys keys;                         // none: no key needed
    std::vector<std::string> allowedHosts;  // Host names accepted besides loopback ones (loopback bind)
    std::vector<std::string> corsOrigins;   // origins allowed cross-origin ("*": any)
    int32_t parallel = 1;                 // slots, each a session with its own KV cache (one model)
    int32_t queue = 16;                   // requests that may wait for a slot; more get 429
    http::Limits limits;                  // connections, head, body, timeouts (maxBodyBytes: 413)
    std::string logFile;                  // the access log; empty: stderr
    std::string modelId;                  // the id /v1/models lists and requests may name
    EngineOptions engine;                 // contextLength: the KV budget of all the slots
    std::optional<EngineOptions> draftModel;   // speculative decoding with a draft model (one per slot)
    std::optional<SpeculativeOptions> speculative;  // the drafts' settings (draftModel set per slot)
    std::optional<ChatTemplateKind> chatTemplate;  // none: the file's (defaultChatTemplate)
};

// An OpenAI error object as a whole reply.
http::Reply errorReply(const ApiError& error);

class OpenAiServer final : public http::Handler {
public:
    explicit OpenAiServer(ServeOptions options);
    ~OpenAiServer() override;
    // Binds the listening socket: the port, or nothing with the reason in `error`.
    std::optional<int> bind(std::string& error);
    // Serves on the calling thread until shutdown() has finished.
    void run();
    // Loads the model and makes the slots (the server answers 503 meanwhile).
    Result<void> loadSlots();
    // Any thread: stop (see above). run() returns when every answer is written, 2 s at most.
    void shutdown();
    bool accessLogOpen() const { return log_.ok(); }

private:
    struct Job;
    http::HeadVerdict onHead(const http::RequestHead& head) override;
    void onRequest(std::shared_ptr<http::Exchange> exchange, const http::HeadVerdict& verdict) override;
    void onAccess(const AccessRecord& record) override;
    void handleCompletion(const std::shared_ptr<http::Exchange>& exchange, Endpoint endpoint);
    void start(const std::shared_ptr<Job>& job, size_t slot);
    void interrupt(const std::shared_ptr<Job>& job);
    std::function<void()> run(Job& job, Engine& engine, Engine* draft);
    std::string health() const;
    ServerFigures figures() const;

    ServeOptions options_;
    AccessPolicy policy_;
    // Destroyed in reverse order: the request thread first (its tasks may post to the slots), the
    // slots (their jobs release into admission), then the transport.
    http::Listener listener_;
    AccessLog log_;
    std::unique_ptr<Admission> admission_;
    SlotPool slots_;
    std::atomic<bool> ready_{false};
    ChatTemplate template_;
    std::shared_ptr<const Tokenizer> tokenizer_;
    int32_t contextLength_ = 0;
    size_t maxTokenBytes_ = 1;  // the vocabulary's longest token: a prompt of more bytes than
                                // context × this cannot fit, and is refused before tokenizing
    int64_t created_ = 0;
    std::atomic<uint64_t> requests_{0};
    std::atomic<uint64_t> cancelled_{0};
    std::atomic<uint64_t> promptTokens_{0}, generatedTokens_{0};  // of finished generations
    std::unique_ptr<TaskThread> requestThread_;
};

}  // namespace inferscope::server
