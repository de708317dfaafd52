// inferscope-cli models: the model library from the command line (catalog/).
//   models list [--json]            the GGUFs already on this computer, in every tool's folder, with their fit
//   models search TEXT [--json]     GGUF repositories on the Hugging Face hub
//   models files ORG/REPO [--json]  a repository's GGUF files, sizes, sha256, and (from their headers) the fit
//   models pull ORG/REPO FILE       download into our folder (resumable, verified); the path is stdout's last line
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <fmt/format.h>
#include <memory>
#include <string>
#include <vector>

#include "catalog/hub_client.h"
#include "catalog/local_models.h"
#include "commands.h"
#include "option_checks.h"

namespace inferscope::cli {
namespace {

using catalog::FitQuestion;
using nlohmann::ordered_json;

std::string params(uint64_t n) {
    if (n >= 1000000000) return fmt::format("{:.2f}B", double(n) / 1e9);
    if (n >= 1000000) return fmt::format("{:.0f}M", double(n) / 1e6);
    if (n >= 1000) return fmt::format("{:.0f}K", double(n) / 1e3);
    return std::to_string(n);
}

ordered_json fitJson(const std::optional<FitAssessment>& fit, const catalog::ModelSummary* summary) {
    if (!summary) return nullptr;
    if (!summary->runnable) return ordered_json{{"verdict", "unsupported"}, {"reason", summary->refusal}};
    if (!fit) return nullptr;
    ordered_json j{{"verdict", fit->verdict == FitVerdict::Fits                 ? "fits"
                               : fit->verdict == FitVerdict::FitsSmallerContext ? "smaller_context"
                                                                                : "does_not_fit"},
                   {"text", fitVerdictText(*fit)},
                   {"context", fit->context},
                   {"bytes", fit->need.residentBytes()},
                   {"weights_bytes", fit->need.weightsMapped + fit->need.weightsConverted},
                   {"kv_bytes", fit->need.kvCache},
                   {"buffer_bytes", fit->need.buffers}};
    if (fit->shortfall) j["limit"] = ordered_json{{"name", fit->shortfall->limit}, {"allowed", fit->shortfall->allowed}};
    return j;
}

// The header's facts and the fit, as `list` and `files` both write them.
void addSummary(ordered_json& j, const catalog::ModelSummary& s, const std::optional<FitAssessment>& fit) {
    j["quantization"] = s.quantization;
    j["architecture"] = s.architecture;
    j["parameters"] = s.parameters;
    j["context"] = s.trainedContext;
    j["fit"] = fitJson(fit, &s);
}

std::string fitText(const std::optional<FitAssessment>& fit, const catalog::ModelSummary* summary) {
    if (!summary) return "-";
    if (!summary->runnable) return "unsupported";
    if (!fit) return "-";
    return fitVerdictText(*fit) + " (" + formatBytes(fit->need.residentBytes()) + ")";
}

struct FitArgs {
    int32_t ctx = 0;
    std::string kv = "f32";
};
Result<FitQuestion> question(const FitArgs& a) {
    auto kv = parseKvType(a.kv);
    if (!kv) return std::unexpected(kv.error());
    if (a.ctx < 0) return fail(ErrorKind::InvalidArgument, "--ctx must not be negative");
    return FitQuestion{a.ctx, *kv, ComputePrecision::Auto, 0};
}
void addFitOptions(CLI::App* cmd, FitArgs& a) {
    cmd->add_option("--ctx", a.ctx, "the context the fit is for (0 = each model's trained length)")->capture_default_str();
    cmd->add_option("--kv", a.kv, "the KV cache type the fit is for: f32, f16, q8_0, q4_0")->capture_default_str();
}

struct ListArgs {
    bool json = false, noCache = false;
    std::vector<std::string> folders;
    FitArgs fit;
};

int runList(const ListArgs& a) {
    auto q = question(a.fit);
    if (!q) return reportError(q.error().message);
    catalog::ScanOptions options;
    for (const auto& f : a.folders) options.folders.emplace_back(f);
    if (!a.noCache) options.cacheFile = catalog::headerCacheFile(options.env);
    const catalog::ScanReport report = catalog::scanLocalModels(options);
    const MemoryFigures have = readMemoryFigures();
    for (const auto& m : report.models) {
        const catalog::ModelSummary* s = m.summary ? &*m.summary : nullptr;
        const auto fit = s ? catalog::fitOf(*s, *q, have) : std::nullopt;
        if (a.json) {
            ordered_json j{{"path", m.path.string()}, {"source", catalog::sourceName(m.source)}, {"name", m.name}, {"bytes", m.bytes}};
            if (s) addSummary(j, *s, fit);
            else j["error"] = m.error;
            std::printf("%s\n", j.dump(-1, ' ', false, ordered_json::error_handler_t::replace).c_str());
        } else {
            std::printf("%-11s %s\n", std::string(catalog::sourceName(m.source)).c_str(), m.name.c_str());
            if (s)
                std::printf("            %s %s, %s parameters, %s, context %d, %s\n", s->architecture.c_str(), s->quantization.c_str(),
                            params(s->parameters).c_str(), formatBytes(m.bytes).c_str(), s->trainedContext, fitText(fit, s).c_str());
            else
                std::printf("            %s: %s\n", formatBytes(m.bytes).c_str(), m.error.c_str());
            std::printf("            %s\n", m.path.string().c_str());
        }
    }
    for (const auto& note : report.notes) std::fprintf(stderr, "note: %s\n", note.c_str());
    if (!a.json)
        std::fprintf(stderr, "%zu models (%zu headers read, %zu from the cache)\n", report.models.size(), report.headersRead,
                     report.headersFromCache);
    return 0;
}

struct HubArgs {
    int stallTimeout = 30;
    int retries = 4;
};
Result<catalog::HubOptions> hubOptions(const HubArgs& a) {
    auto o = catalog::HubOptions::fromEnvironment();
    if (!o) return o;
    o->stallTimeoutSeconds = a.stallTimeout;
    o->retries = a.retries;
    return o;
}
void addHubOptions(CLI::App* cmd, HubArgs& a) {
    cmd->add_option("--stall-timeout", a.stallTimeout, "seconds without a byte before a transfer is dropped and retried")
        ->capture_default_str()->check(CLI::Range(1, 3600));
    cmd->add_option("--retries", a.retries, "tries again after a cut or stalled connection, HTTP 429 or 5xx")
        ->capture_default_str()->check(CLI::Range(0, 100));
}

struct SearchArgs {
    std::string text;
    int limit = 20;
    bool json = false;
    HubArgs hub;
};

int runSearch(const SearchArgs& a) {
    auto o = hubOptions(a.hub);
    if (!o) return reportError(o.error().message);
    auto repos = catalog::searchGgufRepos(*o, a.text, a.limit);
    if (!repos) return reportError(repos.error().message);
    for (const auto& r : *repos) {
        if (a.json) {
            ordered_json j{{"id", r.id}, {"downloads", r.downloads}, {"likes", r.likes}, {"gated", r.gated}, {"last_modified", r.lastModified}};
            std::printf("%s\n", j.dump().c_str());
        } else {
            std::printf("%-60s %10llu downloads%s\n", r.id.c_str(), (unsigned long long)r.downloads, r.gated ? "  (gated)" : "");
        }
    }
    return 0;
}

struct FilesArgs {
    std::string repo, revision = "main";
    bool json = false, noHeaders = false;
    FitArgs fit;
    HubArgs hub;
};

int runFiles(const FilesArgs& a) {
    auto o = hubOptions(a.hub);
    if (!o) return reportError(o.error().message);
    auto q = question(a.fit);
    if (!q) return reportError(q.error().message);
    auto files = catalog::listGgufFiles(*o, a.repo, a.revision);
    if (!files) return reportError(files.error().message);
    const MemoryFigures have = readMemoryFigures();
    for (const auto& f : *files) {
        std::optional<catalog::ModelSummary> summary;
        std::string error;
        uint64_t read = 0;
        if (!a.noHeaders) {
            auto s = catalog::readRemoteHeader(*o, a.repo, f, a.revision, &read);
            if (s) summary = std::move(*s);
            else error = s.error().message;
        }
        const catalog::ModelSummary* s = summary ? &*summary : nullptr;
        const auto fit = s ? catalog::fitOf(*s, *q, have) : std::nullopt;
        if (a.json) {
            ordered_json j{{"path", f.path}, {"bytes", f.size}, {"sha256", f.sha256}};
            if (s) {
                addSummary(j, *s, fit);
                j["header_bytes_read"] = read;
            } else if (!error.empty()) {
                j["error"] = error;
            }
            std::printf("%s\n", j.dump(-1, ' ', false, ordered_json::error_handler_t::replace).c_str());
        } else {
            std::printf("%s  %s", f.path.c_str(), formatBytes(f.size).c_str());
            if (s)
                std::printf("  %s %s, %s parameters, context %d, %s", s->architecture.c_str(), s->quantization.c_str(),
                            params(s->parameters).c_str(), s->trainedContext, fitText(fit, s).c_str());
            else if (!error.empty())
                std::printf("  (%s)", error.c_str());
            std::printf("\n");
        }
    }
    return 0;
}

std::atomic<bool> gInterrupted{false};

struct PullArgs {
    std::string repo, file, revision = "main";
    HubArgs hub;
};

int runPull(const PullArgs& a) {
    auto o = hubOptions(a.hub);
    if (!o) return reportError(o.error().message);
    const catalog::Environment env = catalog::Environment::fromProcess();
    catalog::DownloadRequest req;
    req.repo = a.repo;
    req.file = a.file;
    req.revision = a.revision;
    req.modelsFolder = catalog::inferscopeModelsFolder(env);
    req.cancel = &gInterrupted;
    const bool tty = ::isatty(STDERR_FILENO);
    int lastPercent = -1;
    req.progress = [&](const catalog::DownloadProgress& p) {
        const int percent = p.bytesTotal ? int(100 * p.bytesDone / p.bytesTotal) : 0;
        if (!tty && percent == lastPercent) return;  // a log gets a line per percent
        lastPercent = percent;
        std::string line = fmt::format("{:3d}% {} of {}", percent, formatBytes(p.bytesDone), formatBytes(p.bytesTotal));
        if (p.resumedFrom) line += fmt::format(" (resumed at {})", formatBytes(p.resumedFrom));
        if (p.bytesPerSecond > 0) line += fmt::format(", {}/s", formatBytes(uint64_t(p.bytesPerSecond)));
        if (p.secondsLeft >= 0) line += fmt::format(", {:.0f} s left", p.secondsLeft);
        std::fprintf(stderr, tty ? "\r%-78s" : "%s\n", line.c_str());
    };
    struct sigaction sa{}, old{};
    sa.sa_handler = [](int) { gInterrupted.store(true); };
    ::sigaction(SIGINT, &sa, &old);
    auto path = catalog::downloadModel(*o, req);
    ::sigaction(SIGINT, &old, nullptr);
    if (tty) std::fprintf(stderr, "\n");
    if (!path) return reportError(path.error().message);
    std::printf("%s\n", path->string().c_str());
    return 0;
}

}  // namespace

void addModelsCommand(CLI::App& app, int& exitCode) {
    CLI::App* models = app.add_subcommand("models", "The model library: GGUFs on this computer, the Hugging Face hub, downloads");
    models->require_subcommand(1);

    auto list = std::make_shared<ListArgs>();
    CLI::App* l = models->add_subcommand("list", "GGUF models already on this computer (Ollama, LM Studio, GPT4All, Jan, the "
                                                 "Hugging Face and llama.cpp caches, ours, --folder) and whether each fits");
    l->add_flag("--json", list->json, "one JSON object per line");
    l->add_option("--folder", list->folders, "a folder of your own to look in too (repeatable)")->check(kNotEmpty);
    l->add_flag("--no-cache", list->noCache, "read every header again (ignore and leave the header cache)");
    addFitOptions(l, list->fit);
    l->final_callback([list, &exitCode] { exitCode = runList(*list); });

    auto search = std::make_shared<SearchArgs>();
    CLI::App* s = models->add_subcommand("search", "GGUF repositories on the Hugging Face hub (HF_ENDPOINT, HF_TOKEN)");
    s->add_option("text", search->text, "what to look for")->required()->check(kNotEmpty);
    s->add_option("--limit", search->limit, "at most this many repositories")->capture_default_str()->check(CLI::Range(1, 100));
    s->add_flag("--json", search->json, "one JSON object per line");
    addHubOptions(s, search->hub);
    s->final_callback([search, &exitCode] { exitCode = runSearch(*search); });

    auto files = std::make_shared<FilesArgs>();
    CLI::App* f = models->add_subcommand("files", "A hub repository's GGUF files, with the fit read from each file's header");
    f->add_option("repo", files->repo, "ORG/REPO")->required()->check(kNotEmpty);
    f->add_option("--revision", files->revision, "branch, tag or commit")->capture_default_str();
    f->add_flag("--json", files->json, "one JSON object per line");
    f->add_flag("--no-headers", files->noHeaders, "list only (no range requests for the headers)");
    addFitOptions(f, files->fit);
    addHubOptions(f, files->hub);
    f->final_callback([files, &exitCode] { exitCode = runFiles(*files); });

    auto pull = std::make_shared<PullArgs>();
    CLI::App* p = models->add_subcommand("pull", "Download a GGUF file from the hub into our models folder (resumes a partial "
                                                 "download, verifies the sha256); prints its path");
    p->add_option("repo", pull->repo, "ORG/REPO")->required()->check(kNotEmpty);
    p->add_option("file", pull->file, "the file's path in the repository")->required()->check(kNotEmpty);
    p->add_option("--revision", pull->revision, "branch, tag or commit")->capture_default_str();
    addHubOptions(p, pull->hub);
    p->final_callback([pull, &exitCode] { exitCode = runPull(*pull); });
}

}  // namespace inferscope::cli
