// inferscope-cli serve: the OpenAI-compatible HTTP server (server/). Binds first and prints
// "listening on http://HOST:PORT" (the port chosen when --port 0), answers 503 while the slots
// load, prints "ready" once they have, and serves until SIGINT or SIGTERM: then it stops
// accepting, ends running answers (finish_reason "abort") and exits within 2 s.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <thread>

#include "commands.h"
#include "engine/bundled_model.h"
#include "engine_choices.h"
#include "option_checks.h"
#include "server/http_server.h"
#include "server/request_policy.h"

namespace inferscope::cli {
namespace {

struct ServeArgs {
    bool noMmap = false;  // --no-mmap: EngineOptions::privateWeights
    std::string model, host = "127.0.0.1", apiKey, apiKeyFile, modelId, chatTemplate = "auto", device = "auto", compute = "auto", kv = "f32",
                logFile;
    std::vector<std::string> allowedHosts, corsOrigins;
    int port = 8080;
    int32_t parallel = 1, queue = 16, ctx = 0, threads = 0, batch = 512;
    size_t maxBody = 4u << 20, maxConnections = 512, maxConnectionsPerIp = 64;
    double readTimeout = 30, writeTimeout = 30;
    DraftChoices draft;  // speculative decoding, a draft model per slot
};

// Every key the command line, the key file and INFERSCOPE_API_KEY give.
Result<server::ApiKeys> gatherKeys(const ServeArgs& a) {
    std::vector<std::string> keys;
    if (!a.apiKey.empty()) {
        if (auto ok = server::ApiKeys::checkKey(a.apiKey); !ok) return fail(ErrorKind::InvalidArgument, "--api-key: " + ok.error().message);
        keys.push_back(a.apiKey);
    }
    if (!a.apiKeyFile.empty()) {
        auto fromFile = server::ApiKeys::readKeyFile(a.apiKeyFile);
        if (!fromFile) return std::unexpected(fromFile.error());
        keys.insert(keys.end(), fromFile->begin(), fromFile->end());
    }
    if (const char* env = std::getenv("INFERSCOPE_API_KEY"); env && *env) {
        if (auto ok = server::ApiKeys::checkKey(env); !ok) return fail(ErrorKind::InvalidArgument, "INFERSCOPE_API_KEY: " + ok.error().message);
        keys.emplace_back(env);
    }
    return server::ApiKeys(std::move(keys));
}

std::chrono::milliseconds millis(double seconds) { return std::chrono::milliseconds(int64_t(seconds * 1000)); }

int run(const ServeArgs& a) {
    server::ServeOptions o;
    o.host = a.host;
    o.port = a.port;
    auto keys = gatherKeys(a);
    if (!keys) return reportError(keys.error().message);
    o.keys = std::move(*keys);
    for (const std::string& h : a.allowedHosts) {
        const std::string name = server::hostName(h);
        if (name.empty()) return reportError("--allowed-hosts: not a host name: " + h);
        o.allowedHosts.push_back(name);
    }
    for (const std::string& origin : a.corsOrigins) {
        if (origin != "*" && origin.find("://") == std::string::npos) return reportError("--cors-origins: an origin is scheme://host[:port] or *, got " + origin);
        if (origin.find_first_of("\r\n ,") != std::string::npos) return reportError("--cors-origins: an origin holds no spaces, commas or line breaks");
        o.corsOrigins.push_back(origin);
    }
    o.parallel = a.parallel;
    o.queue = a.queue;
    o.limits.maxBodyBytes = a.maxBody;
    o.limits.maxConnections = a.maxConnections;
    o.limits.maxConnectionsPerAddress = a.maxConnectionsPerIp;
    o.limits.bodyTimeout = millis(a.readTimeout);
    o.limits.headTimeout = std::min(o.limits.headTimeout, millis(a.readTimeout));
    o.limits.writeTimeout = millis(a.writeTimeout);
    o.logFile = a.logFile;
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
    // One compute thread runs every slot's passes (their decode steps batched) with all the threads.
    const int32_t cores = int32_t(std::max(1u, std::thread::hardware_concurrency()));
    o.engine.privateWeights = a.noMmap;
    o.engine.threads = a.threads;
    o.modelId = a.modelId.empty() ? o.engine.modelPath.stem().string() : a.modelId;
    auto speculative = speculativeChoice(a.draft);
    if (!speculative) return reportError(speculative.error().message);
    o.speculative = *speculative;
    if (*speculative && (*speculative)->source == DraftSource::Model) {
        EngineOptions d = o.engine;
        d.modelPath = a.draft.model;
        d.contextLength = a.ctx > 0 ? std::max(16, a.ctx / a.parallel) : 0;  // a slot's share, as the model's
        // Each slot drafts on its own thread: the slots share the cores.
        d.threads = a.threads > 0 ? a.threads : std::max(1, cores / a.parallel);
        o.draftModel = d;
    }
    const bool loopback = server::isLoopbackAddress(a.host);
    const bool noKey = o.keys.empty();
    const bool keyOnCommandLine = !a.apiKey.empty();

    // A client that closes its connection must not kill the server with SIGPIPE; SIGINT and SIGTERM
    // are waited for by one thread, blocked in every other (the set is inherited by threads made after).
    ::signal(SIGPIPE, SIG_IGN);
    sigset_t stopSignals;
    sigemptyset(&stopSignals);
    sigaddset(&stopSignals, SIGINT);
    sigaddset(&stopSignals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stopSignals, nullptr);

    server::OpenAiServer srv(o);
    if (!srv.accessLogOpen()) return reportError("cannot open the access log " + a.logFile);
    std::string why;
    const auto port = srv.bind(why);
    if (!port) return reportError("cannot listen on " + a.host + ":" + std::to_string(a.port) + ": " + why);
    if (!loopback && noKey)
        std::fprintf(stderr, "inferscope-cli serve: warning: listening on %s with no API key: anyone who can reach this machine can use the model "
                             "(--api-key-file FILE, or INFERSCOPE_API_KEY)\n", a.host.c_str());
    if (keyOnCommandLine)
        std::fprintf(stderr, "inferscope-cli serve: note: a key given with --api-key is visible to other users in the process list; "
                             "--api-key-file or INFERSCOPE_API_KEY keep it out of it\n");
    std::printf("inferscope-cli serve: listening on http://%s:%d (model '%s', %d slot%s)\n", a.host.c_str(), *port, o.modelId.c_str(),
                a.parallel, a.parallel == 1 ? "" : "s");
    std::fflush(stdout);
    std::thread waiter([&srv, stopSignals] {
        int sig = 0;
        sigwait(&stopSignals, &sig);
        srv.shutdown();
    });
    waiter.detach();
    // Loading may take long on a big model; a stop meanwhile must not wait for it.
    std::atomic<int> loadCode{-1};
    std::thread loader([&srv, &loadCode] {
        if (auto loaded = srv.loadSlots(); !loaded) {
            loadCode = reportError(loaded.error().message);
            srv.shutdown();
        } else {
            loadCode = 0;
            std::printf("inferscope-cli serve: ready\n");
            std::fflush(stdout);
        }
    });
    srv.run();
    if (loadCode < 0) {  // stopped while loading: nothing to keep
        std::fflush(nullptr);
        ::_exit(0);
    }
    loader.join();
    return loadCode;
}

}  // namespace

void addServeCommand(CLI::App& app, int& exitCode) {
    auto a = std::make_shared<ServeArgs>();
    CLI::App* cmd = app.add_subcommand("serve", "OpenAI-compatible HTTP server: /v1/chat/completions, /v1/completions (logprobs, streaming), /v1/models, /health");
    cmd->add_option("--model,-m", a->model, "GGUF model file (default: the bundled stories260K)")->check(kNotEmpty);
    cmd->add_option("--host", a->host, "address to listen on (only this machine by default)")->capture_default_str()->check(kNotEmpty);
    cmd->add_option("--port", a->port, "TCP port (0: any free port, printed at start)")->capture_default_str()->check(CLI::Range(0, 65535));
    cmd->add_option("--api-key", a->apiKey, "require 'Authorization: Bearer KEY' (visible in the process list: prefer --api-key-file)")->check(kNotEmpty);
    cmd->add_option("--api-key-file", a->apiKeyFile, "require one of the keys in FILE (one a line, # comments); INFERSCOPE_API_KEY adds one")->check(kNotEmpty);
    cmd->add_option("--allowed-hosts", a->allowedHosts, "Host names accepted besides localhost/127.0.0.1/[::1] (e.g. a reverse proxy's)")->delimiter(',');
    cmd->add_option("--cors-origins", a->corsOrigins, "web origins allowed to call the API from a browser (scheme://host[:port], or *)")->delimiter(',');
    cmd->add_option("--log-file", a->logFile, "append the access log (one line per request) to FILE instead of stderr")->check(kNotEmpty);
    cmd->add_option("--parallel", a->parallel, "slots: requests generated at once, each with its own KV cache, their decode steps batched")->capture_default_str()->check(CLI::Range(1, 64));
    cmd->add_option("--queue", a->queue, "requests that may wait for a slot; more get HTTP 429")->capture_default_str()->check(CLI::Range(0, 1024));
    cmd->add_option("--max-body", a->maxBody, "largest request body in bytes; larger get HTTP 413")->capture_default_str()->check(CLI::Range(1024, 64 << 20));
    cmd->add_option("--max-connections", a->maxConnections, "open connections at most; more get HTTP 503")->capture_default_str()->check(CLI::Range(1, 100000));
    cmd->add_option("--max-connections-per-ip", a->maxConnectionsPerIp, "open connections from one address at most")->capture_default_str()->check(CLI::Range(1, 100000));
    cmd->add_option("--read-timeout", a->readTimeout, "seconds a request's body may take to arrive (its head: 10 s at most)")->capture_default_str()->check(CLI::Range(0.1, 3600.0));
    cmd->add_option("--write-timeout", a->writeTimeout, "seconds a client may stop reading an answer before it is dropped")->capture_default_str()->check(CLI::Range(0.1, 3600.0));
    cmd->add_option("--model-id", a->modelId, "the model's id in /v1/models and requests (default: the file name without .gguf)")->check(kNotEmpty);
    cmd->add_option("--chat-template", a->chatTemplate, "auto (the file's), completion, llama2, mistral, chatml, zephyr, llama3, gemma or phi3")->capture_default_str();
    cmd->add_option("--ctx,-c", a->ctx, "KV budget in tokens, split evenly among the slots (0 = the model's trained length, or the largest that fits in memory)")->capture_default_str()->check(CLI::NonNegativeNumber);
    cmd->add_option("--threads,-t", a->threads, "compute threads (0: one per core); with --draft, each slot's draft model takes its share")->capture_default_str()->check(CLI::NonNegativeNumber);
    cmd->add_option("--batch", a->batch, "most prompt tokens per prefill pass")->capture_default_str();
    cmd->add_option("--device", a->device, "auto, cpu or gpu")->capture_default_str();
    cmd->add_option("--compute", a->compute, "matmul precision: auto (the file's), f32, bf16 or int8")->capture_default_str();
    cmd->add_flag("--no-mmap", a->noMmap, kNoMmapHelp);
    cmd->add_option("--kv", a->kv, "KV cache type: f32, f16, q8_0 or q4_0")->capture_default_str();
    addDraftOptions(*cmd, a->draft);
    cmd->final_callback([a, &exitCode] { exitCode = run(*a); });
}

}  // namespace inferscope::cli
