// inferscope-cli compare: which model (or which quantization) for my text, answered on it. A
// generates an answer to the prompt; B reads the same tokens (teacher-forced, both in lockstep
// prefill batches: core/engine/compare.h). Per answer token: its probability under each, KL(A ‖ B),
// whether the top token flips, Δp = p_B − p_A; then llama-perplexity's --kl-divergence summary.
// Models whose vocabularies differ are compared on the answer's text instead: each reads it with
// its own tokenizer, and the surprisal is summed per word (core/engine/compare_text.h).
//   compare --model A --model-b B --prompt TEXT [--max-tokens N] [sampler options] [--json]
//   --json: {"event":"token","index","position","id","piece","p_a","p_b","kl","flip","dp","top_a","top_b"}
//           per answer token, then {"event":"done",…} shaped as perplexity's summary.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <memory>

#include "commands.h"
#include "engine/bundled_model.h"
#include "engine/compare.h"
#include "engine/compare_text.h"
#include "engine/engine.h"
#include "engine_choices.h"
#include "option_checks.h"
#include "tokenizer/tokenizer.h"

namespace inferscope::cli {
namespace {

struct CompareArgs {
    bool noMmap = false, json = false, noBos = false;
    std::string model, modelB, prompt, device = "auto", compute = "auto", computeB, kv = "f32";
    int32_t maxTokens = 128, threads = 0, ctx = 0;
    std::optional<uint64_t> seed;
    SamplerParams sampler;
};

Result<std::unique_ptr<Engine>> load(const CompareArgs& a, const std::filesystem::path& model, const std::string& compute) {
    LoadChoices c{a.device, compute, a.kv, a.threads, a.ctx, a.noMmap};
    return loadWithChoices(c, model);
}

std::string dump(const nlohmann::ordered_json& j) { return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace); }

// The summary both outputs print: perplexity's --kl-divergence figures.
nlohmann::ordered_json summaryJson(const DivergenceMeter& d, const PerplexityMeter& pa, const PerplexityMeter& pb) {
    return {{"tokens", d.count()},
            {"perplexity_a", pa.perplexity()},
            {"perplexity_a_error", pa.perplexityError()},
            {"perplexity_b", pb.perplexity()},
            {"perplexity_b_error", pb.perplexityError()},
            {"kl", {{"mean", d.meanKl()}, {"mean_error", d.meanKlError()}, {"median", d.klQuantile(0.5)}, {"p99", d.klQuantile(0.99)}, {"max", d.maxKl()}}},
            {"same_top1", d.sameTop1()},
            {"top1_agreement", d.top1Agreement()},
            {"top1_agreement_error", d.top1AgreementError()},
            {"dp",
             {{"mean", d.meanDp()}, {"mean_error", d.meanDpError()}, {"rms", d.rmsDp()}, {"rms_error", d.rmsDpError()},
              {"p1", d.dpQuantile(0.01)}, {"p5", d.dpQuantile(0.05)}, {"median", d.dpQuantile(0.5)}, {"p95", d.dpQuantile(0.95)},
              {"p99", d.dpQuantile(0.99)}, {"min", d.dpQuantile(0.0)}, {"max", d.dpQuantile(1.0)}}}};
}

// Vocabularies that differ: the answer's text read by both, word by word (engine/compare_text.h).
int compareText(const CompareArgs& a, Engine& A, Engine& B, const std::string& answer, const std::filesystem::path& pathA,
                const std::string& why) {
    std::fprintf(stderr, "inferscope-cli: %s; compared on the text instead, word by word (bits of surprisal)\n", why.c_str());
    auto c = compareOnText(A, B, a.prompt, answer);
    if (!c) return reportError(c.error().message);
    const std::string modelB = std::filesystem::path(a.modelB).filename().string();
    for (size_t i = 0; i < c->words.size(); ++i) {
        const WordSurprisal& w = c->words[i];
        const std::string word = answer.substr(w.begin, w.end - w.begin);
        if (a.json)
            std::printf("%s\n", dump({{"event", "word"}, {"index", i}, {"text", word}, {"bits_a", w.bitsA}, {"bits_b", w.bitsB}}).c_str());
        else
            std::printf("%4zu  %-20s  A %6.2f bits  B %6.2f bits\n", i, fmt::format("{:?}", word).c_str(), w.bitsA, w.bitsB);
    }
    if (a.json) {
        std::printf("%s\n", dump({{"event", "done"}, {"mode", "text"}, {"model_a", pathA.filename().string()}, {"model_b", modelB},
                                  {"words", c->words.size()}, {"bytes", c->bytes}, {"tokens_a", c->tokensA}, {"tokens_b", c->tokensB},
                                  {"bits_a", c->bitsA}, {"bits_b", c->bitsB}, {"bits_per_byte_a", c->bitsPerByteA()},
                                  {"bits_per_byte_b", c->bitsPerByteB()}})
                                .c_str());
        return 0;
    }
    std::printf("\n%zu words (%zu bytes; %d tokens for A, %d for B): A %.3f bits per byte, B %.3f bits per byte\n", c->words.size(),
                c->bytes, c->tokensA, c->tokensB, c->bitsPerByteA(), c->bitsPerByteB());
    return 0;
}

int run(CompareArgs a) {
    if (a.maxTokens < 1) return reportError("--max-tokens must be at least 1, got " + std::to_string(a.maxTokens));
    a.sampler.seed = a.seed.value_or(uint64_t(std::chrono::system_clock::now().time_since_epoch().count()));
    if (auto ok = validateSamplerParams(a.sampler); !ok) return reportError(ok.error().message);
    auto pathA = modelOrBundled(a.model);
    if (!pathA) return reportError(pathA.error().message);
    auto engineA = load(a, *pathA, a.compute);
    if (!engineA) return reportError("model A: " + engineA.error().message);
    auto engineB = load(a, a.modelB, a.computeB.empty() ? a.compute : a.computeB);
    if (!engineB) return reportError("model B: " + engineB.error().message);
    Engine& A = **engineA;
    Engine& B = **engineB;
    const auto sameVocabulary = checkSameVocabulary(A.tokenizer(), B.tokenizer());

    GenerateRequest req;
    req.prompt = A.tokenizer().encode(a.prompt, !a.noBos && A.tokenizer().addBosByDefault());
    if (req.prompt.empty()) return reportError("the prompt is empty (and the vocabulary adds no BOS): nothing to continue");
    req.sampler = a.sampler;
    req.sampler.topN = 0;
    req.maxTokens = a.maxTokens;
    auto generated = A.generate(req);
    if (!generated) return reportError("model A: " + generated.error().message);
    std::vector<int32_t> sequence = req.prompt;
    const int32_t answerStart = int32_t(sequence.size());
    for (int32_t id : generated->tokens) sequence.push_back(id);
    if (int32_t(sequence.size()) == answerStart) return reportError("model A generated nothing to compare");
    if (!sameVocabulary) return compareText(a, A, B, generated->text, *pathA, sameVocabulary.error().message);

    DivergenceMeter divergence;
    PerplexityMeter perplexityA, perplexityB;
    const Tokenizer& tok = A.tokenizer();
    const auto started = std::chrono::steady_clock::now();
    auto ok = compareTeacherForced(A, B, sequence, answerStart, [&](const TokenComparison& t) {
        const double pa = t.shift.pReference, pb = t.shift.pTest;
        if (a.json) {
            std::printf("%s\n", dump({{"event", "token"}, {"index", t.index}, {"position", t.position}, {"id", t.id}, {"piece", tok.tokenBytes(t.id)},
                                      {"p_a", pa}, {"p_b", pb}, {"kl", t.shift.kl}, {"flip", t.flip()}, {"dp", t.shift.dp()},
                                      {"top_a", t.shift.topReference}, {"top_b", t.shift.topTest}})
                                    .c_str());
        } else {
            std::printf("%4d  %-16s  p_A %.4f  p_B %.4f  KL %.5f%s\n", t.index, fmt::format("{:?}", tok.tokenBytes(t.id)).c_str(), pa, pb,
                        t.shift.kl, t.flip() ? fmt::format("  flip: A's top {:?}, B's {:?}", tok.tokenBytes(t.shift.topReference),
                                                           tok.tokenBytes(t.shift.topTest)).c_str()
                                             : "");
        }
    }, divergence, perplexityA, perplexityB);
    if (!ok) return reportError(ok.error().message);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (a.json) {
        nlohmann::ordered_json done = {{"event", "done"}, {"model_a", pathA->filename().string()}, {"model_b", std::filesystem::path(a.modelB).filename().string()},
                                       {"prompt_tokens", answerStart}, {"reason", finishReasonName(generated->reason)}};
        done.update(summaryJson(divergence, perplexityA, perplexityB));
        done["compare_ms"] = seconds * 1000.0;
        std::printf("%s\n", dump(done).c_str());
        return 0;
    }
    std::printf("\n%lld answer tokens of %s read by %s (%.0f ms, both models)\n", static_cast<long long>(divergence.count()),
                pathA->filename().string().c_str(), std::filesystem::path(a.modelB).filename().string().c_str(), seconds * 1000.0);
    std::printf("Perplexity of the answer: A %.4f ± %.4f, B %.4f ± %.4f\n", perplexityA.perplexity(), perplexityA.perplexityError(),
                perplexityB.perplexity(), perplexityB.perplexityError());
    std::printf("KL(A ‖ B), nats per token: mean %.6f ± %.6f, median %.6f, p99 %.6f, max %.6f\n", divergence.meanKl(),
                divergence.meanKlError(), divergence.klQuantile(0.5), divergence.klQuantile(0.99), divergence.maxKl());
    std::printf("Same top token: %.2f%% ± %.2f%% (%lld of %lld; the rest are flips)\n", 100.0 * divergence.top1Agreement(),
                100.0 * divergence.top1AgreementError(), static_cast<long long>(divergence.sameTop1()), static_cast<long long>(divergence.count()));
    std::printf("Δp = p_B − p_A of each answer token: mean %.3f%% ± %.3f%%, RMS %.3f%% ± %.3f%%, p1 %.3f%%, median %.3f%%, p99 %.3f%%\n",
                100.0 * divergence.meanDp(), 100.0 * divergence.meanDpError(), 100.0 * divergence.rmsDp(), 100.0 * divergence.rmsDpError(),
                100.0 * divergence.dpQuantile(0.01), 100.0 * divergence.dpQuantile(0.5), 100.0 * divergence.dpQuantile(0.99));
    return 0;
}

}  // namespace

void addCompareCommand(CLI::App& app, int& exitCode) {
    auto a = std::make_shared<CompareArgs>();
    CLI::App* cmd = app.add_subcommand("compare", "Two models on one answer: A generates, B reads the same tokens; per token KL, flips and Δp, then their statistics");
    cmd->add_option("--model,-m", a->model, "model A, which answers (default: the bundled stories260K)")->check(kNotEmpty);
    cmd->add_option("--model-b,-b", a->modelB, "model B, which reads A's answer (the same vocabulary)")->required()->check(kNotEmpty);
    cmd->add_option("--prompt,-p", a->prompt, "the text A continues")->required();
    cmd->add_option("--max-tokens,-n", a->maxTokens, "most tokens A generates")->capture_default_str();
    cmd->add_option("--temperature,--temp", a->sampler.temperature, "A's sampling; 0 = greedy")->capture_default_str();
    cmd->add_option("--top-k", a->sampler.topK, "0 = off")->capture_default_str();
    cmd->add_option("--top-p", a->sampler.topP, "1 = off")->capture_default_str();
    cmd->add_option("--min-p", a->sampler.minP, "0 = off")->capture_default_str();
    cmd->add_option("--seed", a->seed, "A's RNG seed (default: from the clock)")->check(kUnsigned);
    cmd->add_flag("--no-bos", a->noBos, "do not prepend the BOS token");
    cmd->add_option("--compute", a->compute, "matmul precision: auto (the file's), f32, bf16 or int8")->capture_default_str();
    cmd->add_option("--compute-b", a->computeB, "B's matmul precision (default: --compute): the same file at two precisions")->check(kNotEmpty);
    cmd->add_option("--kv", a->kv, "KV cache type of both: f32, f16, q8_0 or q4_0")->capture_default_str();
    cmd->add_option("--ctx,-c", a->ctx, "context length (0 = the model's)")->capture_default_str()->check(CLI::NonNegativeNumber);
    cmd->add_option("--device", a->device, "auto, cpu or gpu")->capture_default_str();
    cmd->add_option("--threads,-t", a->threads, "compute threads (0 = one per core)")->capture_default_str();
    cmd->add_flag("--no-mmap", a->noMmap, kNoMmapHelp);
    cmd->add_flag("--json", a->json, "one JSON object per answer token, then a done line");
    cmd->final_callback([a, &exitCode] { exitCode = run(*a); });
}

}  // namespace inferscope::cli
