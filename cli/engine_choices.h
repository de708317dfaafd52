#pragma once
// What every command that loads a model reads the same way: the model file (the bundled one when
// none is given) and --device, --compute, --kv (and --no-mmap's help) into EngineOptions, each bad value refused with the
// parser's message.

#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "backend/compute_device.h"
#include "engine/bundled_model.h"
#include "engine/engine.h"
#include "kv_cache/kv_cache.h"
#include "model/llama_model.h"

namespace inferscope::cli {

// --no-mmap's help, for every command that loads a model (EngineOptions::privateWeights).
inline constexpr const char* kNoMmapHelp =
    "copy the weights into this process's own memory at load instead of reading them through the shared page "
    "cache (on some virtual machines page-cache memory reads slower)";

inline Result<std::filesystem::path> modelOrBundled(const std::string& model) {
    if (!model.empty()) return std::filesystem::path(model);
    if (auto bundled = findBundledModel()) return *bundled;
    return fail(ErrorKind::InvalidArgument, "no --model given and the bundled model stories260K.gguf was not found");
}

inline Result<void> applyEngineChoices(const std::string& device, const std::string& compute, const std::string& kv,
                                       EngineOptions& opt) {
    auto d = parseDeviceKind(device);
    if (!d) return std::unexpected(d.error());
    auto precision = parseComputePrecision(compute);
    if (!precision) return std::unexpected(precision.error());
    auto kvType = parseKvType(kv);
    if (!kvType) return std::unexpected(kvType.error());
    opt.device = *d;
    opt.precision = *precision;
    opt.kvType = *kvType;
    return {};
}

// Loads a model as the measuring commands do (perplexity, compare): the choices above, threads,
// --no-mmap and a context length; the engine's notices go to stderr.
struct LoadChoices {
    std::string device = "auto", compute = "auto", kv = "f32";
    int32_t threads = 0, ctx = 0;
    bool noMmap = false;
};
inline Result<std::unique_ptr<Engine>> loadWithChoices(const LoadChoices& c, const std::filesystem::path& model) {
    EngineOptions opt;
    if (auto ok = applyEngineChoices(c.device, c.compute, c.kv, opt); !ok) return std::unexpected(ok.error());
    opt.modelPath = model;
    opt.threads = c.threads;
    opt.privateWeights = c.noMmap;
    opt.contextLength = c.ctx;
    auto engine = Engine::load(opt);
    if (!engine) return std::unexpected(engine.error());
    for (const auto& n : (*engine)->notices()) std::fprintf(stderr, "inferscope-cli: %s\n", n.c_str());
    return engine;
}

// Speculative decoding's options, as generate and serve take them.
struct DraftChoices {
    std::string model;          // --draft MODEL
    int32_t ngram = 0;          // --draft-ngram N: prompt lookup instead
    int32_t maxDraft = 3;       // --draft-max
    float pMin = 0.0f;          // --draft-p-min
};
inline void addDraftOptions(CLI::App& cmd, DraftChoices& d) {
    cmd.add_option("--draft", d.model, "speculative decoding with this draft model (the same vocabulary)");
    cmd.add_option("--draft-ngram", d.ngram, "speculative decoding by prompt lookup of up to N tokens (no draft model)")->check(CLI::Range(1, 16));
    cmd.add_option("--draft-max", d.maxDraft, "tokens drafted per verification, at most")->capture_default_str()->check(CLI::Range(1, 16));
    cmd.add_option("--draft-p-min", d.pMin, "stop a draft when the draft model's probability of its pick is below this")
        ->capture_default_str()->check(CLI::Range(0.0, 1.0));
}
// None, or the options (a draft model's engine left for the caller to load). Error: two drafters.
inline Result<std::optional<SpeculativeOptions>> speculativeChoice(const DraftChoices& d) {
    if (!d.model.empty() && d.ngram > 0) return fail(ErrorKind::InvalidArgument, "--draft and --draft-ngram are two drafters: give one");
    if (d.model.empty() && d.ngram == 0) return std::optional<SpeculativeOptions>();
    SpeculativeOptions so;
    so.maxDraft = d.maxDraft;
    so.pMin = d.pMin;
    so.source = d.ngram > 0 ? DraftSource::NGram : DraftSource::Model;
    so.ngramMin = 1;
    so.ngramMax = std::max(1, d.ngram);
    return std::optional(so);
}

}  // namespace inferscope::cli
