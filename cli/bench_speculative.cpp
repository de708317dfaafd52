// inferscope-cli bench --draft MODEL | --draft-ngram N: what speculative decoding buys on this
// machine. Each round generates the same greedy answer twice from the same prompt, once by plain
// decoding and once with the drafter (which of the two goes first alternates between rounds), and
// takes each one's decode tokens/s (tokens generated after the prefill's, over the time from the
// prefill's end to the last token: drafting, verification and sampling included). The speed-up is
// their ratio within the round. Both answers must be the same tokens (speculative sampling keeps
// greedy output exactly plain decoding's); the run says so, or which step first differed.
#include "bench_speculative.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>

#include "bench_measure.h"
#include "commands.h"

namespace inferscope::cli {
namespace {

struct Run {
    GenerationSummary summary;
    double tokensPerSecond = 0;
};

Result<Run> generateOnce(Engine& e, const GenerateRequest& request) {
    auto r = e.generate(request);
    if (!r) return std::unexpected(r.error());
    Run run{std::move(*r), 0};
    run.tokensPerSecond = run.summary.decodeTokensPerSecond();
    return run;
}

}  // namespace

int runSpeculativeBench(const SpeculativeBenchArgs& a) {
    auto speculative = speculativeChoice(a.draft);
    if (!speculative) return reportError(speculative.error().message);
    auto path = modelOrBundled(a.model);
    if (!path) return reportError(path.error().message);
    // 2048 positions: room for the test (checked below), not the model's whole context's cache.
    const LoadChoices choices{"cpu", a.compute, a.kv, a.threads, 2048, a.noMmap};
    auto engine = loadWithChoices(choices, *path);
    if (!engine) return reportError(engine.error().message);
    Engine& e = **engine;

    GenerateRequest plain;
    plain.prompt = e.tokenizer().encode(a.prompt, e.tokenizer().addBosByDefault());
    plain.maxTokens = a.genTokens;
    plain.sampler.temperature = 0.0f;
    plain.sampler.topN = 0;
    // Every answer is genTokens long: the end-of-generation tokens can never be picked.
    for (int32_t id : {e.tokenizer().eosId(), e.tokenizer().eotId()})
        if (id >= 0) plain.sampler.logitBias.emplace_back(id, -100.0f);
    const int32_t needed = int32_t(plain.prompt.size()) + a.genTokens + a.draft.maxDraft + 1;
    if (needed > e.contextLength())
        return reportError(fmt::format("the test needs {} positions but the context is {}", needed, e.contextLength()));

    std::unique_ptr<Engine> draftEngine;
    std::string drafter = fmt::format("prompt lookup of up to {} tokens", a.draft.ngram);
    if ((*speculative)->source == DraftSource::Model) {
        auto d = loadWithChoices(choices, a.draft.model);
        if (!d) return reportError("draft model: " + d.error().message);
        draftEngine = std::move(*d);
        (*speculative)->draftModel = draftEngine.get();
        drafter = std::filesystem::path(a.draft.model).filename().string();
    }
    GenerateRequest withDraft = plain;
    withDraft.speculative = *speculative;

    // Warm-up: one answer each way (page faults, the drafter's first prompt, oneDNN's primitives).
    GenerateRequest warm = plain, warmDraft = withDraft;
    warm.maxTokens = warmDraft.maxTokens = std::min(a.genTokens, 8);
    for (const GenerateRequest* r : {&warm, &warmDraft})
        if (auto ok = generateOnce(e, *r); !ok) return reportError(ok.error().message);

    Stats plainTps, specTps, speedup;
    std::vector<bool> clean;
    std::vector<double> othersBusy;
    int64_t drafted = 0, accepted = 0, passes = 0, tokens = 0, draftUs = 0, decodeUs = 0;
    std::string differs;  // the first difference between the two answers, if any
    for (int r = 0; r < a.repeat; ++r) {
        waitForQuiet(a.maxBusy, a.waitQuiet);
        const CpuTimes roundStart = CpuTimes::now();
        Run runs[2];
        for (int k = 0; k < 2; ++k) {
            const bool spec = (k + r) % 2 == 1;  // round 0: plain first; round 1: speculative first; ...
            auto run = generateOnce(e, spec ? withDraft : plain);
            if (!run) return reportError(run.error().message);
            runs[spec ? 1 : 0] = std::move(*run);
        }
        othersBusy.push_back(CpuTimes::now().othersSince(roundStart));
        clean.push_back(othersBusy.back() < a.maxBusy);
        plainTps.samples.push_back(runs[0].tokensPerSecond);
        specTps.samples.push_back(runs[1].tokensPerSecond);
        speedup.samples.push_back(runs[0].tokensPerSecond > 0 ? runs[1].tokensPerSecond / runs[0].tokensPerSecond : 0.0);
        const GenerationSummary& s = runs[1].summary;
        drafted += s.draftN;
        accepted += s.draftAccepted;
        passes += s.nDecodePasses;
        tokens += s.decodedTokens;
        draftUs += s.draftUs;
        decodeUs += s.decodeUs;
        const auto& x = runs[0].summary.tokens;
        const auto& y = s.tokens;
        if (differs.empty() && x != y) {
            size_t i = 0;
            while (i < x.size() && i < y.size() && x[i] == y[i]) ++i;
            differs = fmt::format("round {}: the answers differ from generated token {} ({} plain, {} speculative)", r + 1, i, x.size(), y.size());
        }
    }
    for (Stats* st : {&plainTps, &specTps, &speedup}) st->clean = clean;
    const int nClean = int(std::count(clean.begin(), clean.end(), true));
    const double acceptance = drafted > 0 ? double(accepted) / double(drafted) : 0.0;

    if (a.json) {
        nlohmann::ordered_json j = {
            {"commit", gitCommit()}, {"model", path->filename().string()},
            {"drafter", (*speculative)->source == DraftSource::Model ? "model" : "ngram"}, {"draft", drafter},
            {"draft_max", a.draft.maxDraft}, {"draft_p_min", a.draft.pMin}, {"device", e.device().description()}, {"threads", e.device().threads()},
            {"kv_type", a.kv}, {"weights_pages", a.noMmap ? "private" : "shared"}, {"prompt_tokens", plain.prompt.size()},
            {"gen_tokens", a.genTokens}, {"repeat", a.repeat}, {"clean_rounds", nClean}, {"others_cpu_share_per_round", othersBusy},
            {"plain_tokens_per_s", plainTps.json()}, {"speculative_tokens_per_s", specTps.json()}, {"speedup", speedup.json()},
            {"draft_n", drafted}, {"draft_n_accepted", accepted}, {"acceptance", acceptance}, {"verify_passes", passes},
            {"decoded_tokens", tokens}, {"draft_ms", double(draftUs) / 1e3}, {"decode_ms", double(decodeUs) / 1e3},
            {"same_tokens", differs.empty()}};
        if (!differs.empty()) j["difference"] = differs;
        std::printf("%s\n", j.dump().c_str());
    } else {
        std::printf("model %s | drafter %s | draft max %d | KV %s | %s | commit %s\n", path->filename().string().c_str(),
                    drafter.c_str(), a.draft.maxDraft, a.kv.c_str(), e.device().description().c_str(), gitCommit().c_str());
        std::printf("rounds %d, %d clean | prompt %zu tokens, %d generated greedily each way\n", a.repeat, nClean, plain.prompt.size(),
                    a.genTokens);
        std::printf("plain        %8.2f tok/s (%.2f..%.2f)\n", plainTps.median(), plainTps.min(), plainTps.max());
        std::printf("speculative  %8.2f tok/s (%.2f..%.2f) | speed-up %.2fx (%.2f..%.2f)\n", specTps.median(), specTps.min(), specTps.max(),
                    speedup.median(), speedup.min(), speedup.max());
        std::printf("drafts: %lld of %lld accepted (%.1f%%) | %lld verification passes for %lld tokens | drafting %.0f of %.0f ms\n",
                    (long long)accepted, (long long)drafted, 100 * acceptance, (long long)passes, (long long)tokens, double(draftUs) / 1e3,
                    double(decodeUs) / 1e3);
        std::printf("%s\n", differs.empty() ? "same tokens both ways in every round" : differs.c_str());
    }
    return differs.empty() ? 0 : reportError("speculative decoding changed the greedy answer: " + differs);
}

}  // namespace inferscope::cli
