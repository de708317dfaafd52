// inferscope-cli serve: the OpenAI-compatible HTTP server (server/). Binds first and prints
// "listening on http://HOST:PORT" (the port chosen when --port 0), answers 503 while the slots
// load, prints "ready" once they have, and serves until SIGINT or SIGTERM.
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <thread>

#include "engine_choices.h"
#include "commands.h"
#include "engine/bundled_model.h"
#include "option_checks.h"
#include "server/http_server.h"

namespace inferscope::cli {
namespace {

struct ServeArgs {
    bool noMmap = false;  // --no-mmap: EngineOptions::privateWeights
    std::string model, host = "127.0.0.1", apiKey, modelId, chatTemplate = "auto", device = "auto", compute = "auto", kv = "f32";
    int port = 8080;
    int32_t parallel = 1, queue = 16, ctx = 0, threads = 0, batch = 512;
    size_t maxBody = 4u << 20;
};

int run(const ServeArgs& a) {
    server::ServeOptions o;
    o.host = a.host;
    o.port = a.port;
    o.apiKey = a.apiKey;
    o.parallel = a.parallel;
    o.queue = a.queue;
    o.maxBodyBytes = a.maxBody;
    if (auto ok = applyEngineChoices(a.device, a.compute, a.kv, o.engine); !ok) return reportError(ok.error().message);
    auto model = modelOrBundled(a.model);
    if (!model) return reportError(model.error().message);
    o.engine.modelPath = *model;
    if (!std::filesystem::exists(o.engine.modelPath)) return reportError("no such model file: " + o.engine.modelPath.string());
    if (a.chatTemplate != "auto") {
        auto kind = chatTemplateFromName(a.chatTemplate);
        if (!kind) return reportError("unknown chat template '" + a.chatTemplate + "'");
        o.chatTemplate = *kind;
    }
    o.engine.contextLength = a.ctx;
    o.engine.batchSize = a.batch;
    // Slots generate at the same time: by default they share the cores instead of each taking all.
    const int32_t cores = int32_t(std::max(1u, std::thread::hardware_concurrency()));
    o.engine.privateWeights = a.noMmap;
    o.engine.threads = a.threads > 0 ? a.threads : a.parallel > 1 ? std::max(1, cores / a.parallel) : 0;
    o.modelId = a.modelId.empty() ? o.engine.modelPath.stem().string() : a.modelId;

    // A client that closes its connection must not kill the server with SIGPIPE; SIGINT and SIGTERM
    // are waited for by one thread, blocked in every other (the set is inherited by httplib's threads).
    ::signal(SIGPIPE, SIG_IGN);
    sigset_t stopSignals;
    sigemptyset(&stopSignals);
    sigaddset(&stopSignals, SIGINT);
    sigaddset(&stopSignals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stopSignals, nullptr);

    server::OpenAiServer srv(o);
    const int port = srv.bind();
    if (port < 0) return reportError("cannot listen on " + a.host + ":" + std::to_string(a.port) + " (in use, or not an address of this machine)");
    std::printf("inferscope-cli serve: listening on http://%s:%d (model '%s', %d slot%s)\n", a.host.c_str(), port, o.modelId.c_str(),
                a.parallel, a.parallel == 1 ? "" : "s");
    std::fflush(stdout);
    std::thread listener([&srv] { srv.listen(); });
    std::thread waiter([&srv, stopSignals] {
        int sig = 0;
        sigwait(&stopSignals, &sig);
        srv.stop();
    });
    waiter.detach();
    int code = 0;
    if (auto loaded = srv.loadSlots(); !loaded) {
        code = reportError(loaded.error().message);
        srv.stop();
    } else {
        std::printf("inferscope-cli serve: ready\n");
        std::fflush(stdout);
    }
    listener.join();
    return code;
}

}  // namespace

void addServeCommand(CLI::App& app, int& exitCode) {
    auto a = std::make_shared<ServeArgs>();
    CLI::App* cmd = app.add_subcommand("serve", "OpenAI-compatible HTTP server: /v1/chat/completions, /v1/completions (logprobs, streaming), /v1/models, /health");
    cmd->add_option("--model,-m", a->model, "GGUF model file (default: the bundled stories260K)")->check(kNotEmpty);
    cmd->add_option("--host", a->host, "address to listen on (only this machine by default)")->capture_default_str()->check(kNotEmpty);
    cmd->add_option("--port", a->port, "TCP port (0: any free port, printed at start)")->capture_default_str()->check(CLI::Range(0, 65535));
    cmd->add_option("--api-key", a->apiKey, "require 'Authorization: Bearer KEY' on every request")->check(kNotEmpty);
    cmd->add_option("--parallel", a->parallel, "slots: requests generated at once, each with its own KV cache")->capture_default_str()->check(CLI::Range(1, 64));
    cmd->add_option("--queue", a->queue, "requests that may wait for a slot; more get HTTP 429")->capture_default_str()->check(CLI::Range(0, 1024));
    cmd->add_option("--max-body", a->maxBody, "largest request body in bytes; larger get HTTP 413")->capture_default_str()->check(CLI::Range(1024, 1 << 30));
    cmd->add_option("--model-id", a->modelId, "the model's id in /v1/models and requests (default: the file name without .gguf)")->check(kNotEmpty);
    cmd->add_option("--chat-template", a->chatTemplate, "auto (the file's), completion, llama2, mistral, chatml, zephyr, llama3, gemma or phi3")->capture_default_str();
    cmd->add_option("--ctx,-c", a->ctx, "context length per slot (0 = the model's, at most 4096)")->capture_default_str()->check(CLI::NonNegativeNumber);
    cmd->add_option("--threads,-t", a->threads, "compute threads per slot (0: the cores shared among the slots)")->capture_default_str()->check(CLI::NonNegativeNumber);
    cmd->add_option("--batch", a->batch, "most prompt tokens per prefill pass")->capture_default_str();
    cmd->add_option("--device", a->device, "auto, cpu or gpu")->capture_default_str();
    cmd->add_option("--compute", a->compute, "matmul precision: auto (the file's), f32, bf16 or int8")->capture_default_str();
    cmd->add_flag("--no-mmap", a->noMmap, kNoMmapHelp);
    cmd->add_option("--kv", a->kv, "KV cache type: f32, f16, q8_0 or q4_0")->capture_default_str();
    cmd->final_callback([a, &exitCode] { exitCode = run(*a); });
}

}  // namespace inferscope::cli
