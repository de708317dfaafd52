// inferscope-cli perplexity: what a configuration costs in quality on a text. The text is cut into
// windows of --ctx tokens as llama-perplexity cuts it (core/engine/perplexity.h) and each window is
// teacher-forced through the model; the second half of each window is scored.
//   perplexity --model M --file TEXT [--ctx N] [--compute TYPE] [--kv TYPE]
// prints the perplexity with its standard error. Against a reference configuration
//   [--compare-to REFERENCE_MODEL] [--compare-compute TYPE] [--compare-to-kv TYPE]
// (e.g. a Q4_K_M file against its F16 original, int8 compute against f32, a q8_0 KV cache against
// f16) both run every window
// and it also prints, per scored token, KL(P_reference ‖ P) — mean ± error, median, p99, max — and
// how often both rank the same token first, the figures of `llama-perplexity --kl-divergence`.
//   --json: {"event":"window",…} per window, then {"event":"done",…}
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "engine_choices.h"
#include "commands.h"
#include "engine/bundled_model.h"
#include "engine/engine.h"
#include "engine/compare.h"
#include "engine/perplexity.h"
#include "kv_cache/kv_cache.h"
#include "option_checks.h"

namespace inferscope::cli {
namespace {

struct PerplexityArgs {
    bool noMmap = false;  // --no-mmap: EngineOptions::privateWeights
    std::string model, file, device = "auto", compute = "auto", kv = "f32", compareTo, compareCompute, compareKv;
    int32_t ctx = 512, threads = 0, maxWindows = 0;
    bool json = false;
};

Result<std::unique_ptr<Engine>> loadEngine(const PerplexityArgs& a, const std::filesystem::path& model,
                                           const std::string& compute, const std::string& kv) {
    auto engine = loadWithChoices(LoadChoices{a.device, compute, kv, a.threads, a.ctx, a.noMmap}, model);
    if (!engine) return engine;
    if ((*engine)->contextLength() < a.ctx)
        return fail(ErrorKind::InvalidArgument, fmt::format("--ctx {} is longer than {} holds ({} tokens)", a.ctx,
                                                            model.filename().string(), (*engine)->contextLength()));
    return engine;
}

Result<std::string> readText(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return fail(ErrorKind::Io, "cannot read --file " + path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void printJson(const nlohmann::ordered_json& j) {
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
    std::fflush(stdout);
}

int run(const PerplexityArgs& a) {
    if (a.ctx < 4) return reportError("--ctx must be at least 4, got " + std::to_string(a.ctx));
    if (a.maxWindows < 0) return reportError("--max-windows must be 0 (all) or more, got " + std::to_string(a.maxWindows));
    auto modelOrNone = modelOrBundled(a.model);
    if (!modelOrNone) return reportError(modelOrNone.error().message);
    const std::filesystem::path modelPath = *modelOrNone;
    auto text = readText(a.file);
    if (!text) return reportError(text.error().message);
    auto engine = loadEngine(a, modelPath, a.compute, a.kv);
    if (!engine) return reportError(engine.error().message);
    Engine& e = **engine;

    const bool compare = !a.compareTo.empty() || !a.compareCompute.empty() || !a.compareKv.empty();
    const std::filesystem::path referencePath = a.compareTo.empty() ? modelPath : std::filesystem::path(a.compareTo);
    const std::string referenceCompute = a.compareCompute.empty() ? a.compute : a.compareCompute;
    const std::string referenceKv = a.compareKv.empty() ? a.kv : a.compareKv;
    std::unique_ptr<Engine> reference;
    if (compare) {
        auto r = loadEngine(a, referencePath, referenceCompute, referenceKv);
        if (!r) return reportError("reference: " + r.error().message);
        if (auto same = checkSameVocabulary(e.tokenizer(), (*r)->tokenizer()); !same) return reportError(same.error().message);
        reference = std::move(*r);
    }

    const Tokenizer& tok = e.tokenizer();
    const bool bos = tok.addBosByDefault() && tok.bosId() >= 0;
    const std::vector<int32_t> tokens = tok.encode(*text, bos);
    PerplexityChunks chunks = cutIntoChunks(int32_t(tokens.size()), a.ctx);
    if (chunks.count == 0)
        return reportError(fmt::format("the text is {} tokens; perplexity needs at least one window of --ctx {} tokens "
                                       "(a longer text or a smaller --ctx)",
                                       tokens.size(), a.ctx));
    if (a.maxWindows > 0) chunks.count = std::min(chunks.count, a.maxWindows);

    const size_t vocab = size_t(tok.vocabSize());
    PerplexityMeter meter, referenceMeter;
    DivergenceMeter divergence;
    std::vector<float> referenceLogits;  // the reference's logits at every scored position of a window
    for (int32_t c = 0; c < chunks.count; ++c) {
        const std::vector<int32_t> window = chunks.window(tokens, c, bos ? tok.bosId() : -1);
        if (reference) {
            referenceLogits.assign(size_t(chunks.scoredPerChunk()) * vocab, 0.0f);
            auto ok = reference->score(window, [&](int32_t pos, std::span<const float> logits) {
                if (pos < chunks.firstScored || pos + 1 >= chunks.ctx) return;
                std::copy(logits.begin(), logits.end(), referenceLogits.begin() + ptrdiff_t(size_t(pos - chunks.firstScored) * vocab));
                referenceMeter.add(logits, window[size_t(pos + 1)]);
            });
            if (!ok) return reportError("reference: " + ok.error().message);
        }
        auto ok = e.score(window, [&](int32_t pos, std::span<const float> logits) {
            if (pos < chunks.firstScored || pos + 1 >= chunks.ctx) return;
            meter.add(logits, window[size_t(pos + 1)]);
            if (reference)
                divergence.add(compareDistributions(
                    std::span<const float>(referenceLogits).subspan(size_t(pos - chunks.firstScored) * vocab, vocab), logits,
                    window[size_t(pos + 1)]));
        });
        if (!ok) return reportError(ok.error().message);
        if (a.json) {
            nlohmann::ordered_json j = {{"event", "window"}, {"window", c + 1}, {"of", chunks.count},
                                        {"first_token", int64_t(c) * chunks.ctx}, {"perplexity", meter.perplexity()}};
            if (reference) j["mean_kl"] = divergence.meanKl();
            printJson(j);
        } else {
            std::printf("[%d] %.4f%s", c + 1, meter.perplexity(), c + 1 == chunks.count ? "\n" : " ");
            std::fflush(stdout);
        }
    }

    if (a.json) {
        nlohmann::ordered_json done = {{"event", "done"},
                                       {"text_tokens", tokens.size()},
                                       {"ctx", chunks.ctx},
                                       {"windows", chunks.count},
                                       {"tokens_scored", meter.count()},
                                       {"perplexity", meter.perplexity()},
                                       {"perplexity_error", meter.perplexityError()}};
        if (reference) {
            done["reference"] = {{"model", referencePath.filename().string()},
                                 {"compute", referenceCompute},
                                 {"kv", referenceKv},
                                 {"perplexity", referenceMeter.perplexity()},
                                 {"perplexity_error", referenceMeter.perplexityError()}};
            done["kl"] = {{"mean", divergence.meanKl()},
                          {"mean_error", divergence.meanKlError()},
                          {"median", divergence.klQuantile(0.5)},
                          {"p99", divergence.klQuantile(0.99)},
                          {"max", divergence.maxKl()}};
            done["same_top1"] = divergence.sameTop1();
            done["top1_agreement"] = divergence.top1Agreement();
            done["top1_agreement_error"] = divergence.top1AgreementError();
            // Δp = p − p_reference of each scored token (llama-perplexity's "Token probability statistics").
            done["dp"] = {{"mean", divergence.meanDp()},     {"mean_error", divergence.meanDpError()}, {"rms", divergence.rmsDp()},
                          {"rms_error", divergence.rmsDpError()}, {"p1", divergence.dpQuantile(0.01)},  {"p5", divergence.dpQuantile(0.05)},
                          {"median", divergence.dpQuantile(0.5)}, {"p95", divergence.dpQuantile(0.95)},  {"p99", divergence.dpQuantile(0.99)},
                          {"min", divergence.dpQuantile(0.0)},   {"max", divergence.dpQuantile(1.0)}};
        }
        printJson(done);
        return 0;
    }
    std::printf("Perplexity: %.4f ± %.4f (%lld tokens scored, the second half of %d windows of %d)\n", meter.perplexity(),
                meter.perplexityError(), static_cast<long long>(meter.count()), chunks.count, chunks.ctx);
    if (reference) {
        std::printf("Reference (%s, compute %s, KV cache %s): %.4f ± %.4f\n", referencePath.filename().string().c_str(),
                    referenceCompute.c_str(), referenceKv.c_str(), referenceMeter.perplexity(), referenceMeter.perplexityError());
        std::printf("KL divergence from the reference (nats per token): mean %.6f ± %.6f, median %.6f, p99 %.6f, max %.6f\n",
                    divergence.meanKl(), divergence.meanKlError(), divergence.klQuantile(0.5), divergence.klQuantile(0.99),
                    divergence.maxKl());
        std::printf("Same top-1 token as the reference: %.2f%% ± %.2f%% (%lld of %lld)\n", 100.0 * divergence.top1Agreement(),
                    100.0 * divergence.top1AgreementError(), static_cast<long long>(divergence.sameTop1()),
                    static_cast<long long>(divergence.count()));
        std::printf("Δp = p − p_reference of each scored token: mean %.3f%% ± %.3f%%, RMS %.3f%% ± %.3f%%, p1 %.3f%%, median %.3f%%, p99 %.3f%%\n",
                    100.0 * divergence.meanDp(), 100.0 * divergence.meanDpError(), 100.0 * divergence.rmsDp(),
                    100.0 * divergence.rmsDpError(), 100.0 * divergence.dpQuantile(0.01), 100.0 * divergence.dpQuantile(0.5),
                    100.0 * divergence.dpQuantile(0.99));
    }
    return 0;
}

}  // namespace

void addPerplexityCommand(CLI::App& app, int& exitCode) {
    auto a = std::make_shared<PerplexityArgs>();
    CLI::App* cmd = app.add_subcommand("perplexity", "Perplexity of a text, and against a reference configuration the KL "
                                                     "divergence and top-1 agreement per token");
    cmd->add_option("--model,-m", a->model, "GGUF model file (default: the bundled stories260K)")->check(kNotEmpty);
    cmd->add_option("--file,-f", a->file, "the text (UTF-8)")->required()->check(kNotEmpty);
    cmd->add_option("--ctx,-c", a->ctx, "window length in tokens; the second half of each window is scored")->capture_default_str();
    cmd->add_option("--max-windows", a->maxWindows, "score at most this many windows (0 = all)")->capture_default_str();
    cmd->add_option("--compute", a->compute, "matmul precision: auto (the file's), f32, bf16 or int8")->capture_default_str();
    cmd->add_flag("--no-mmap", a->noMmap, kNoMmapHelp);
    cmd->add_option("--kv", a->kv, "KV cache type: f32, f16, q8_0 or q4_0 (ggml's blocks; head dim a multiple of 32)")
        ->capture_default_str();
    cmd->add_option("--compare-to", a->compareTo, "reference model file (same vocabulary), e.g. the F16 original of a quantized file")
        ->check(kNotEmpty);
    cmd->add_option("--compare-compute", a->compareCompute, "reference matmul precision (default: --compute)")->check(kNotEmpty);
    cmd->add_option("--compare-to-kv", a->compareKv, "reference KV cache type (default: --kv), e.g. f16 against --kv q8_0")
        ->check(kNotEmpty);
    cmd->add_option("--device", a->device, "auto, cpu or gpu")->capture_default_str();
    cmd->add_option("--threads,-t", a->threads, "compute threads (0 = one per core)")->capture_default_str();
    cmd->add_flag("--json", a->json, "one JSON object per window, then a done line");
    cmd->final_callback([a, &exitCode] { exitCode = run(*a); });
}

}  // namespace inferscope::cli
