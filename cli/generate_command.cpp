// inferscope-cli generate: run a prompt through the engine; stream the text, or one JSON object
// per event (prefill, each token with its top candidates [and its logit lens], [attention], done).
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>
#include <optional>

#include "engine_choices.h"
#include "commands.h"
#include "inspection_json.h"
#include "option_checks.h"
#include "engine/bundled_model.h"
#include "engine/engine.h"
#include "record/step_record_json.h"
#include "engine/stop_strings.h"

namespace inferscope::cli {
namespace {

std::atomic<bool> gCancel{false};
extern "C" void onSigint(int) { gCancel.store(true); }

struct GenerateArgs {
    bool noMmap = false;  // --no-mmap: EngineOptions::privateWeights
    std::string model, tokenizer, prompt, device = "auto", compute = "auto", kv = "f32";
    std::vector<std::string> stops;
    int32_t maxTokens = 256, threads = 0, ctx = 0, batch = 512;
    bool lens = false;
    int32_t lensTopK = 5, attentionAt = -1;  // inspection_json.h
    std::optional<uint64_t> seed;
    SamplerParams sampler;
    bool noKvCache = false, json = false, noBos = false;
    DraftChoices draft;  // speculative decoding
};

std::string dumpJson(const nlohmann::ordered_json& j) { return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace); }

double ms(int64_t us) { return double(us) / 1000.0; }

// Text mode: the prompt, then the continuation as it streams (whole UTF-8 characters only, and
// never the start of a stop string); statistics on stderr at the end.
class TextPrinter : public GenerationObserver {
public:
    // With an empty prompt the first token's word-start space would open the output: drop it, as
    // SentencePiece's decode does.
    TextPrinter(std::vector<std::string> stops, bool dropLeadingSpace) : stops_(std::move(stops)), dropLeadingSpace_(dropLeadingSpace) {}
    void onStep(const StepRecord& r) override {
        generated_ += r.piece;
        if (dropLeadingSpace_ && !generated_.empty()) {
            if (generated_[0] == ' ') {
                generated_.erase(0, 1);
                skipped_ = 1;
            }
            dropLeadingSpace_ = false;
        }
        emitUpTo(stops_.safeLength(generated_));
    }
    void onFinish(const GenerationSummary& s) override {
        generated_ = s.text.substr(std::min(s.text.size(), skipped_));  // cut before a matched stop string
        emitUpTo(generated_.size());
        std::fputs(utf8_.flush().c_str(), stdout);
        std::fputc('\n', stdout);
        std::fflush(stdout);
    }

private:
    void emitUpTo(size_t end) {
        if (end <= emitted_) return;
        std::fputs(utf8_.push(std::string_view(generated_).substr(emitted_, end - emitted_)).c_str(), stdout);
        std::fflush(stdout);
        emitted_ = end;
    }
    StopStringMatcher stops_;
    bool dropLeadingSpace_;
    size_t skipped_ = 0;
    Utf8Stream utf8_;
    std::string generated_;
    size_t emitted_ = 0;
};

class JsonPrinter : public GenerationObserver {
public:
    JsonPrinter(const Tokenizer& tok, std::vector<int32_t> prompt) : tok_(tok), sequence_(std::move(prompt)) {}
    void onPrefill(const PrefillStats& p) override {
        std::printf("%s\n", dumpJson({{"event", "prefill"}, {"tokens", p.nComputed}, {"reused", p.nReused},
                                      {"prompt_tokens", p.nPrompt}, {"ms", ms(p.us)}, {"tokens_per_s", p.tokensPerSecond()}})
                                .c_str());
        std::fflush(stdout);
    }
    void onStep(const StepRecord& r) override {
        nlohmann::ordered_json event = {{"event", "token"}};
        // The step record as the app's conversation export writes it (core/record/step_record_json.h).
        event.update(stepRecordJson(r, [this](int32_t id) { return std::optional(tok_.tokenBytes(id)); }));
        // This command's first format had these two; kept for its readers.
        event["eog"] = r.endOfGeneration;
        event["ms"] = ms(r.forwardUs + r.sampleUs);
        if (r.inspection && !r.inspection->lens.layers.empty()) event["lens"] = lensJson(r.inspection->lens, tok_);
        // Speculative decoding: what became of this position's draft, with the candidates' p and q and
        // a correction's residual distribution.
        if (r.draft) event["speculative"] = draftRecordJson(*r.draft, [this](int32_t id) { return std::optional(tok_.tokenBytes(id)); });
        std::printf("%s\n", dumpJson(event).c_str());
        if (r.inspection && !r.inspection->attention.weights.empty()) {
            std::printf("%s\n", dumpJson(attentionEventJson(r, r.inspection->attention, sequence_)).c_str());
            attentionPrinted_ = true;
        }
        sequence_.push_back(r.sample.id);
        std::fflush(stdout);
    }
    bool attentionPrinted_ = false;
    void onFinish(const GenerationSummary& s) override { summary_ = s; }
    std::optional<GenerationSummary> summary_;

private:
    const Tokenizer& tok_;
    std::vector<int32_t> sequence_;  // prompt and generated so far
};

int run(GenerateArgs a) {
    EngineOptions opt;
    if (auto ok = applyEngineChoices(a.device, a.compute, a.kv, opt); !ok) return reportError(ok.error().message);
    if (a.seed) a.sampler.seed = *a.seed;
    else a.sampler.seed = uint64_t(std::chrono::system_clock::now().time_since_epoch().count());
    if (auto ok = validateSamplerParams(a.sampler); !ok) return reportError(ok.error().message);
    if (a.maxTokens < 1) return reportError("max tokens must be at least 1, got " + std::to_string(a.maxTokens));

    auto model = modelOrBundled(a.model);
    if (!model) return reportError(model.error().message);
    opt.modelPath = *model;
    if (!a.tokenizer.empty()) opt.tokenizerPath = a.tokenizer;
    opt.threads = a.threads;
    opt.privateWeights = a.noMmap;
    opt.contextLength = a.ctx;
    opt.batchSize = a.batch;
    auto engine = Engine::load(opt);
    if (!engine) return reportError(engine.error().message);
    Engine& e = **engine;
    for (const auto& n : e.notices()) std::fprintf(stderr, "inferscope-cli: %s\n", n.c_str());
    std::unique_ptr<Engine> draftEngine;
    auto speculative = speculativeChoice(a.draft);
    if (!speculative) return reportError(speculative.error().message);
    if (*speculative && (*speculative)->source == DraftSource::Model) {
        EngineOptions dopt = opt;
        dopt.modelPath = a.draft.model;
        dopt.tokenizerPath.reset();
        auto d = Engine::load(dopt);
        if (!d) return reportError("draft model: " + d.error().message);
        draftEngine = std::move(*d);
        (*speculative)->draftModel = draftEngine.get();
    }

    GenerateRequest req;
    req.prompt = e.tokenizer().encode(a.prompt, !a.noBos && e.tokenizer().addBosByDefault());
    req.sampler = a.sampler;
    req.maxTokens = a.maxTokens;
    req.stopStrings = a.stops;
    req.useKvCache = !a.noKvCache;
    req.inspect.lens = a.lens;
    req.inspect.lensTopK = a.lensTopK;
    req.inspect.attentionStep = a.attentionAt;
    req.speculative = *speculative;

    std::signal(SIGINT, onSigint);
    TextPrinter text(a.stops, a.prompt.empty());
    JsonPrinter json(e.tokenizer(), req.prompt);
    if (!a.json) {
        std::fputs(a.prompt.c_str(), stdout);
        std::fflush(stdout);
    }
    auto result = e.generate(req, a.json ? static_cast<GenerationObserver*>(&json) : &text, &gCancel);
    std::signal(SIGINT, SIG_DFL);
    if (!result) return reportError(result.error().message);
    const GenerationSummary& s = *result;
    if (a.json) {
        std::printf("%s\n", dumpJson({{"event", "done"}, {"reason", finishReasonName(s.reason)},
                                      {"prompt_tokens", s.prefill.nPrompt}, {"generated_tokens", s.nGenerated},
                                      {"prefill_ms", ms(s.prefill.us)}, {"prefill_tokens_per_s", s.prefill.tokensPerSecond()},
                                      {"decode_ms", ms(s.decodeUs)}, {"decode_tokens_per_s", s.decodeTokensPerSecond()},
                                      {"time_to_first_token_ms", ms(s.timeToFirstTokenUs)}, {"kv_cache", !a.noKvCache}, {"kv_type", a.kv},
                                      {"kv_bytes_used", s.kv.bytesUsed}, {"kv_bytes_reserved", s.kv.bytesReserved},
                                      {"kv_bytes_per_token", s.kv.bytesPerToken}, {"kv_computed", s.kv.kvComputed},
                                      {"attention_scores", s.kv.attentionScores},
                                      {"attention_scores_sliding", s.kv.attentionScoresSliding}, {"seed", a.sampler.seed},
                                      {"text", s.text}, {"device", e.device().description()},
                                      {"decode_passes", s.nDecodePasses}, {"draft_n", s.draftN}, {"draft_n_accepted", s.draftAccepted},
                                      {"draft_ms", ms(s.draftUs)}})
                                .c_str());
        if (a.attentionAt >= 0 && !json.attentionPrinted_)
            return reportError("--attention-at " + std::to_string(a.attentionAt) + ": the generation ended after " +
                               std::to_string(s.nGenerated) + " tokens");
    } else {
        std::fprintf(stderr,
                     "\n[%s] prefill %d tokens in %.1f ms (%.1f tok/s) | decode %d tokens in %.1f ms (%.1f tok/s) | "
                     "first token %.1f ms | KV cache %llu / %llu bytes | %s\n",
                     std::string(finishReasonName(s.reason)).c_str(), s.prefill.nComputed, ms(s.prefill.us),
                     s.prefill.tokensPerSecond(), s.decodedTokens > 0 ? s.decodedTokens : s.nDecodePasses, ms(s.decodeUs), s.decodeTokensPerSecond(),
                     ms(s.timeToFirstTokenUs), (unsigned long long)s.kv.bytesUsed, (unsigned long long)s.kv.bytesReserved,
                     e.device().description().c_str());
        if (*speculative)
            std::fprintf(stderr, "speculative: %d of %d drafted tokens accepted (%.0f%%) in %d verification passes; drafting took %.1f ms\n",
                         s.draftAccepted, s.draftN, s.draftN > 0 ? 100.0 * s.draftAccepted / s.draftN : 0.0, s.nDecodePasses, ms(s.draftUs));
    }
    return 0;
}

}  // namespace

void addGenerateCommand(CLI::App& app, int& exitCode) {
    auto a = std::make_shared<GenerateArgs>();
    CLI::App* cmd = app.add_subcommand("generate", "Generate text from a prompt (streams text, or JSON lines with --json)");
    cmd->add_option("--model,-m", a->model, "GGUF model file (default: the bundled stories260K)")->check(kNotEmpty);
    cmd->add_option("--tokenizer", a->tokenizer, "SentencePiece tokenizer.model to use instead of the GGUF vocabulary")
        ->check(kNotEmpty);
    cmd->add_option("--prompt,-p", a->prompt, "prompt text (default: empty, i.e. BOS only)");
    cmd->add_flag("--no-bos", a->noBos, "do not prepend the BOS token");
    cmd->add_option("--max-tokens,-n", a->maxTokens, "most tokens to generate")->capture_default_str();
    cmd->add_option("--temperature,--temp", a->sampler.temperature, "0 = greedy")->capture_default_str();
    cmd->add_option("--top-k", a->sampler.topK, "0 = off")->capture_default_str();
    cmd->add_option("--top-p", a->sampler.topP, "1 = off")->capture_default_str();
    cmd->add_option("--min-p", a->sampler.minP, "0 = off")->capture_default_str();
    cmd->add_option("--repeat-penalty", a->sampler.repeatPenalty, "1 = off")->capture_default_str();
    cmd->add_option("--frequency-penalty", a->sampler.frequencyPenalty, "subtracted per occurrence among the last tokens; 0 = off")->capture_default_str();
    cmd->add_option("--presence-penalty", a->sampler.presencePenalty, "subtracted once from every token among the last ones; 0 = off")->capture_default_str();
    cmd->add_option("--repeat-last-n", a->sampler.repeatLastN, "tokens the penalties look back at")->capture_default_str();
    cmd->add_option("--seed", a->seed, "RNG seed (default: from the clock; printed with --json)")->check(kUnsigned);
    cmd->add_option("--top-n", a->sampler.topN, "candidates reported per token")->capture_default_str();
    cmd->add_option("--stop", a->stops, "stop when the output contains this text (repeatable)")->check(kNotEmpty);
    addDraftOptions(*cmd, a->draft);
    cmd->add_flag("--no-kv-cache", a->noKvCache, "recompute the whole sequence at every step (to measure what the cache saves)");
    cmd->add_option("--device", a->device, "auto, cpu or gpu")->capture_default_str();
    cmd->add_option("--compute", a->compute, "matmul precision: auto (the file's), f32, bf16 or int8")->capture_default_str();
    cmd->add_flag("--no-mmap", a->noMmap, kNoMmapHelp);
    cmd->add_option("--kv", a->kv, "KV cache type: f32, f16 (half the bytes long-context decode reads), q8_0 or q4_0 (ggml's blocks; head dim a multiple of 32)")->capture_default_str();
    cmd->add_option("--threads,-t", a->threads, "compute threads (0 = one per core)")->capture_default_str();
    cmd->add_option("--ctx,-c", a->ctx, "context length (0 = the model's trained length, or the largest that fits in memory)")->capture_default_str();
    cmd->add_option("--batch", a->batch, "most prompt tokens per prefill pass")->capture_default_str();
    CLI::Option* json = cmd->add_flag("--json", a->json, "one JSON object per event");
    cmd->add_flag("--lens", a->lens, "logit lens: each layer's top candidates and residual norm in every token event")->needs(json);
    cmd->add_option("--lens-top-k", a->lensTopK, "candidates per layer with --lens")->capture_default_str()->check(CLI::Range(1, kMaxTopN));
    cmd->add_option("--attention-at", a->attentionAt, "print this step's attention weights (layers x heads x positions) as an event")
        ->check(CLI::NonNegativeNumber)
        ->needs(json);
    cmd->final_callback([a, &exitCode] { exitCode = run(*a); });
}

}  // namespace inferscope::cli
