// inferscope-cli score: teacher forcing. Runs a given sequence (text or ids) through the model and
// prints, for every position i, the logit and probability of the token at i + 1 and the top-N
// candidates predicting it; finally the perplexity over every predicted token.
//   --json: {"event":"score","position":i,"next_id":…,"next_logit":…,"next_p":…,"top":[{"id","logit","p"},…]}
//           per position (next_* are null at the last one), then {"event":"done","tokens":n,"perplexity":…}
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numeric>

#include "engine_choices.h"
#include "commands.h"
#include "engine/bundled_model.h"
#include "engine/engine.h"
#include "engine/perplexity.h"
#include "option_checks.h"

namespace inferscope::cli {
namespace {

struct ScoreArgs {
    bool noMmap = false;  // --no-mmap: EngineOptions::privateWeights
    std::string model, prompt, ids, device = "auto", compute = "auto", kv = "f32";
    int32_t topN = 5, threads = 0, ctx = 0;
    bool json = false, noBos = false;
};

// "1,2,3" → ids; an error names the first bad item.
Result<std::vector<int32_t>> parseIds(const std::string& text) {
    std::vector<int32_t> ids;
    size_t pos = 0;
    while (pos <= text.size()) {
        const size_t comma = std::min(text.find(',', pos), text.size());
        const std::string item = text.substr(pos, comma - pos);
        int32_t v = 0;
        const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
        if (item.empty() || ec != std::errc() || end != item.data() + item.size())
            return fail(ErrorKind::InvalidArgument, "--ids must be comma-separated token ids, got '" + item + "'");
        ids.push_back(v);
        pos = comma + 1;
    }
    return ids;
}

int run(const ScoreArgs& a) {
    if (a.prompt.empty() == a.ids.empty()) return reportError("score needs exactly one of --prompt and --ids");
    if (a.topN < 1) return reportError("--top-n must be at least 1, got " + std::to_string(a.topN));
    EngineOptions opt;
    if (auto ok = applyEngineChoices(a.device, a.compute, a.kv, opt); !ok) return reportError(ok.error().message);
    auto model = modelOrBundled(a.model);
    if (!model) return reportError(model.error().message);
    opt.modelPath = *model;
    opt.threads = a.threads;
    opt.privateWeights = a.noMmap;
    opt.contextLength = a.ctx;
    auto engine = Engine::load(opt);
    if (!engine) return reportError(engine.error().message);
    Engine& e = **engine;
    for (const auto& n : e.notices()) std::fprintf(stderr, "inferscope-cli: %s\n", n.c_str());

    std::vector<int32_t> tokens;
    if (!a.ids.empty()) {
        auto ids = parseIds(a.ids);
        if (!ids) return reportError(ids.error().message);
        tokens = std::move(*ids);
    } else {
        tokens = e.tokenizer().encode(a.prompt, !a.noBos && e.tokenizer().addBosByDefault());
    }

    const int32_t n = int32_t(tokens.size());
    double nll = 0.0;
    std::vector<int32_t> order;
    auto onLogits = [&](int32_t i, std::span<const float> logits) {
        // p = softmax(logits) at temperature 1, normalised in double.
        const double logZ = logSumExp(logits);
        auto prob = [&](int32_t id) { return std::exp(double(logits[size_t(id)]) - logZ); };
        order.resize(logits.size());
        std::iota(order.begin(), order.end(), 0);
        const size_t top = std::min(size_t(a.topN), order.size());
        std::partial_sort(order.begin(), order.begin() + ptrdiff_t(top), order.end(), [&](int32_t x, int32_t y) {
            return logits[size_t(x)] > logits[size_t(y)] || (logits[size_t(x)] == logits[size_t(y)] && x < y);
        });
        const bool hasNext = i + 1 < n;
        const int32_t next = hasNext ? tokens[size_t(i + 1)] : -1;
        if (hasNext) nll -= double(logits[size_t(next)]) - logZ;
        if (a.json) {
            nlohmann::ordered_json j = {{"event", "score"}, {"position", i}};
            j["next_id"] = hasNext ? nlohmann::ordered_json(next) : nlohmann::ordered_json();
            j["next_logit"] = hasNext ? nlohmann::ordered_json(logits[size_t(next)]) : nlohmann::ordered_json();
            j["next_p"] = hasNext ? nlohmann::ordered_json(prob(next)) : nlohmann::ordered_json();
            nlohmann::ordered_json list = nlohmann::ordered_json::array();
            for (size_t c = 0; c < top; ++c) list.push_back({{"id", order[c]}, {"logit", logits[size_t(order[c])]}, {"p", prob(order[c])}});
            j["top"] = std::move(list);
            std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
        } else if (hasNext) {
            std::printf("%5d  next %6d  logit %9.4f  p %.6f  top %d (%.4f)\n", i, next, logits[size_t(next)], prob(next), order[0],
                        logits[size_t(order[0])]);
        }
    };
    if (auto ok = e.score(tokens, onLogits); !ok) return reportError(ok.error().message);
    const double perplexity = n > 1 ? std::exp(nll / double(n - 1)) : 1.0;
    if (a.json) {
        nlohmann::ordered_json done = {{"event", "done"}, {"tokens", n}, {"perplexity", perplexity}, {"kv_type", a.kv}};
        std::printf("%s\n", done.dump().c_str());
    } else {
        std::printf("%d tokens, perplexity %.4f\n", n, perplexity);
    }
    return 0;
}

}  // namespace

void addScoreCommand(CLI::App& app, int& exitCode) {
    auto a = std::make_shared<ScoreArgs>();
    CLI::App* cmd = app.add_subcommand("score", "Teacher-forced logits of a sequence: per position the next token's logit and "
                                                "probability and the top candidates, then the perplexity");
    cmd->add_option("--model,-m", a->model, "GGUF model file (default: the bundled stories260K)")->check(kNotEmpty);
    cmd->add_option("--prompt,-p", a->prompt, "the sequence as text (tokenized with BOS)");
    cmd->add_option("--ids", a->ids, "the sequence as comma-separated token ids, e.g. 1,403,432");
    cmd->add_flag("--no-bos", a->noBos, "do not prepend the BOS token to --prompt");
    cmd->add_option("--top-n", a->topN, "candidates reported per position")->capture_default_str();
    cmd->add_option("--device", a->device, "auto, cpu or gpu")->capture_default_str();
    cmd->add_option("--compute", a->compute, "matmul precision: auto (the file's), f32, bf16 or int8")->capture_default_str();
    cmd->add_flag("--no-mmap", a->noMmap, kNoMmapHelp);
    cmd->add_option("--kv", a->kv, "KV cache type: f32, f16, q8_0 or q4_0 (ggml's blocks; head dim a multiple of 32)")
        ->capture_default_str();
    cmd->add_option("--threads,-t", a->threads, "compute threads (0 = one per core)")->capture_default_str();
    cmd->add_option("--ctx,-c", a->ctx, "context length (0 = the model's trained length, or the largest that fits in memory)")->capture_default_str();
    cmd->add_flag("--json", a->json, "one JSON object per position, then a done line");
    cmd->final_callback([a, &exitCode] { exitCode = run(*a); });
}

}  // namespace inferscope::cli
