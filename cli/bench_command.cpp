// inferscope-cli bench: prefill (pp) and decode (tg) speed of a model, and in the same run the
// machine's memory read bandwidth and matmul peak, so that decode is reported as a fraction of the
// bandwidth bound and prefill as a fraction of the compute peak (see bench/README.md).
//
// Method: load (timed, warm-up included), a warm-up pass of each test, then `repeat` rounds that
// interleave every test (pp for each prompt length, tg; the depth test if asked), each tg bracketed
// by two bandwidth probes whose mean is its own bound. Medians and min..max over the rounds.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <optional>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <thread>

#include "bench_measure.h"
#include "bench_speculative.h"
#include "engine_choices.h"
#include "backend/compute_device.h"
#include "backend/memory_probe.h"
#include "commands.h"
#include "common/kernel_set.h"
#include "option_checks.h"
#include "engine/bundled_model.h"
#include "model/llama_model.h"
#include "model/pass_cost.h"

namespace inferscope::cli {
namespace {

struct BenchArgs {
    bool noMmap = false;  // --no-mmap: EngineOptions::privateWeights
    std::string model, compute = "auto", kv = "f16", promptTokens = "128,512";
    int32_t genTokens = 64, threads = 0, repeat = 5, depth = 0, probeMib = 512;
    double peakSeconds = 0.3, maxBusy = 0.05, waitQuiet = 30;
    bool json = false;
    DraftChoices draft;  // speculative test instead (bench_speculative.cpp)
    std::string prompt = "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends.";
};

int32_t argmax(std::span<const float> logits) {
    return int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

struct Runner {
    LlamaModel& model;
    LlamaContext& ctx;
    std::vector<int32_t> tokens;  // random prompt ids

    // Runs tokens [0, n) from position 0 in batches; returns seconds to the first token's id.
    double prefill(int32_t n) {
        ctx.cache().truncate(0);
        const auto t0 = BenchClock::now();
        std::span<const float> logits;
        for (int32_t pos = 0; pos < n; pos += ctx.maxBatch()) {
            const int32_t count = std::min(ctx.maxBatch(), n - pos);
            logits = model.forward(ctx, std::span(tokens).subspan(size_t(pos), size_t(count)), pos, CellOrigin::Prompt);
        }
        volatile int32_t first = argmax(logits);
        (void)first;
        return secondsSince(t0);
    }
    // After a prefill of `start` tokens (untimed), `n` decode passes; returns tokens/s.
    double decode(int32_t start, int32_t n) {
        prefill(start);
        int32_t next = tokens[size_t(start)];
        const auto t0 = BenchClock::now();
        for (int32_t i = 0; i < n; ++i) {
            auto logits = model.forward(ctx, std::span(&next, 1), start + i, CellOrigin::Generated);
            next = argmax(logits);
        }
        return double(n) / secondsSince(t0);
    }
};

// "128,512": whole numbers only (std::stoi took "12abc" as 12), 1 to 2^20 each; "" runs no prefill test.
std::optional<std::vector<int32_t>> parseList(const std::string& text) {
    std::vector<int32_t> out;
    if (text.empty()) return out;
    std::stringstream in(text);
    for (std::string item; std::getline(in, item, ',');) {
        int32_t v = 0;
        const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
        if (item.empty() || ec != std::errc() || end != item.data() + item.size() || v < 1 || v > (1 << 20)) return std::nullopt;
        out.push_back(v);
    }
    if (text.back() == ',') return std::nullopt;  // getline drops a trailing empty item
    return out;
}

// Every numeric option within what the run can do: a negative probe size was a bad_alloc, an
// infinite wait a hang, a huge depth an overflow of the context size.
std::optional<std::string> checkArgs(const BenchArgs& a) {
    auto outside = [](double v, double lo, double hi) { return !(v >= lo && v <= hi); };  // NaN is outside
    if (outside(a.genTokens, 1, 1 << 20)) return fmt::format("--gen-tokens must be between 1 and {}, got {}", 1 << 20, a.genTokens);
    if (outside(a.repeat, 1, 1000)) return fmt::format("--repeat must be between 1 and 1000, got {}", a.repeat);
    if (outside(a.depth, 0, 1 << 24)) return fmt::format("--depth must be between 0 and {}, got {}", 1 << 24, a.depth);
    if (outside(a.probeMib, 1, 1 << 16)) return fmt::format("--probe-mib must be between 1 and {}, got {}", 1 << 16, a.probeMib);
    if (outside(a.peakSeconds, 0.001, 60)) return fmt::format("--peak-seconds must be between 0.001 and 60, got {}", a.peakSeconds);
    if (outside(a.maxBusy, 0, 1)) return fmt::format("--max-busy must be between 0 and 1, got {}", a.maxBusy);
    if (outside(a.waitQuiet, 0, 3600)) return fmt::format("--wait-quiet must be between 0 and 3600 seconds, got {}", a.waitQuiet);
    return std::nullopt;
}

int run(const BenchArgs& a) {
    auto precision = parseComputePrecision(a.compute);
    if (!precision) return reportError(precision.error().message);
    auto kvType = parseKvType(a.kv);
    if (!kvType) return reportError(kvType.error().message);
    auto list = parseList(a.promptTokens);
    if (!list)
        return reportError("--prompt-tokens must be a comma-separated list of token counts from 1 to 1048576, got '" +
                           a.promptTokens + "'");
    const std::vector<int32_t> pps = std::move(*list);
    if (auto bad = checkArgs(a)) return reportError(*bad);
    if (!a.draft.model.empty() || a.draft.ngram > 0)
        return runSpeculativeBench({a.model, a.compute, a.kv, a.prompt, a.draft, a.genTokens, a.threads, a.repeat, a.maxBusy, a.waitQuiet, a.noMmap,
                                    a.json});
    auto modelOrNone = modelOrBundled(a.model);
    if (!modelOrNone) return reportError(modelOrNone.error().message);
    const std::filesystem::path path = *modelOrNone;

    // ---- load: file, device, weights, context, warm-up ----------------------------------------
    const auto tLoad = BenchClock::now();
    auto file = GgufFile::open(path, a.noMmap ? MappedFile::Pages::Private : MappedFile::Pages::Shared);
    if (!file) return reportError(file.error().message);
    auto device = ComputeDevice::create(DeviceKind::Cpu, a.threads);
    if (!device) return reportError(device.error().message);
    ComputeDevice& dev = **device;
    dev.bindThreads();
    auto model = LlamaModel::load(std::move(*file), dev, *precision);
    if (!model) return reportError(model.error().message);
    LlamaModel& m = **model;
    const LlamaHParams& hp = m.hparams();
    const int32_t maxPp = pps.empty() ? 1 : *std::max_element(pps.begin(), pps.end());
    const int32_t nCtx = std::max({maxPp, a.depth + 16, 1 + a.genTokens, 26}) + 1;
    if (nCtx > hp.nCtxTrain) return reportError(fmt::format("the tests need {} positions but the model's context is {}", nCtx, hp.nCtxTrain));
    auto ctx = m.createContext(nCtx, 512, *kvType);
    if (!ctx) return reportError(ctx.error().message);
    m.warmUp(**ctx);
    const double loadS = secondsSince(tLoad);
    const uint64_t loadPeakRss = peakRssBytes();

    // ---- the machine: bandwidth probe buffer (kept out of the RSS figure) and matmul peaks ------
    ReadBandwidthProbe probe(size_t(a.probeMib) << 20);
    resetPeakRss();
    // The engine's peak RSS: the highest mark seen while only the engine (and the always-resident
    // probe buffer, subtracted) allocated.
    uint64_t enginePeakRss = loadPeakRss;
    auto notePeakRss = [&] {
        const uint64_t hwm = peakRssBytes();
        enginePeakRss = std::max(enginePeakRss, hwm > probe.bytes() ? hwm - probe.bytes() : 0);
    };
    const bool int8 = *precision == ComputePrecision::Int8;
    Stats peakF32s, peakBf16s, peakS8s;

    Runner runner{m, **ctx, {}};
    std::mt19937 rng(1234);
    runner.tokens.resize(size_t(nCtx));
    for (auto& t : runner.tokens) t = int32_t(3 + rng() % uint32_t(std::max(1, hp.nVocab - 3)));

    // ---- warm-up of every test, then interleaved rounds --------------------------------------------
    for (int32_t pp : pps) runner.prefill(pp);
    runner.decode(1, std::min(a.genTokens, 8));
    std::vector<Stats> ppStats(pps.size()), ttft(pps.size());
    Stats tg, tgBound, tgFraction, bandwidth, tgNear, tgDeep;
    // What each test reads and computes (the same model as the app's Timeline).
    const PassCost cost(hp, m.weightBytesPerToken(), m.matmulMacsPerToken(), (*ctx)->cache().stats().bytesPerToken);
    std::vector<double> othersBusy;
    std::vector<bool> clean;
    for (int r = 0; r < a.repeat; ++r) {
        waitForQuiet(a.maxBusy, a.waitQuiet);
        const CpuTimes roundStart = CpuTimes::now();
        // The compute peak, measured in every round like the bandwidth (512×2048×2048, prepacked).
        // Its buffers are the bench's, not the engine's: the RSS peak is noted before and reset after.
        notePeakRss();
        peakF32s.samples.push_back(dev.measureMatmulPeak(ComputeDevice::PeakType::F32, 512, 2048, 2048, a.peakSeconds));
        peakBf16s.samples.push_back(dev.measureMatmulPeak(ComputeDevice::PeakType::BF16, 512, 2048, 2048, a.peakSeconds));
        peakS8s.samples.push_back(dev.measureMatmulPeak(ComputeDevice::PeakType::S8, 512, 2048, 2048, a.peakSeconds));
        resetPeakRss();
        for (size_t i = 0; i < pps.size(); ++i) {
            const double s = runner.prefill(pps[i]);
            ppStats[i].samples.push_back(pps[i] / s);
            ttft[i].samples.push_back(s * 1e3);
        }
        const double bwBefore = probe.measure(dev.threads(), 2);
        const double tokS = runner.decode(1, a.genTokens);
        const double bwAfter = probe.measure(dev.threads(), 2);
        const double bw = (bwBefore + bwAfter) / 2;
        // Bytes one decode pass reads: the weights, and the cache up to its position (mean over
        // the run's positions 1 .. genTokens).
        const double bytes = cost.meanDecodeBytes(1, a.genTokens);
        tg.samples.push_back(tokS);
        bandwidth.samples.push_back(bw);
        tgBound.samples.push_back(bw * 1e9 / bytes);
        tgFraction.samples.push_back(tokS / (bw * 1e9 / bytes));
        if (a.depth > 0) {
            tgNear.samples.push_back(runner.decode(10, 16));
            tgDeep.samples.push_back(runner.decode(a.depth, 16));
        }
        othersBusy.push_back(CpuTimes::now().othersSince(roundStart));
        clean.push_back(othersBusy.back() < a.maxBusy);
    }
    for (Stats* st : {&tg, &tgBound, &tgFraction, &bandwidth, &tgNear, &tgDeep, &peakF32s, &peakBf16s, &peakS8s}) st->clean = clean;
    const double peakF32 = peakF32s.median(), peakBf16 = peakBf16s.median(), peakS8 = peakS8s.median();
    // Prefill is compared with the best matmul the machine offers for its weights: s8 for Int8,
    // else the faster of f32 and bf16 (the engine widens bf16/f16 weights to f32 when f32 is faster).
    const double peak = int8 ? peakS8 : std::max(peakF32, peakBf16);
    for (auto& st : ppStats) st.clean = clean;
    for (auto& st : ttft) st.clean = clean;
    const int nClean = int(std::count(clean.begin(), clean.end(), true));
    notePeakRss();
    const uint64_t peakRss = enginePeakRss;

    // GFLOP of a pp-token prefill from position 0.
    auto prefillGflop = [&](int32_t pp) { return cost.prefillFlops(pp, 0) / 1e9; };
    const uint64_t kvBytes = (*ctx)->cache().stats().bytesReserved;

    if (a.json) {
        nlohmann::ordered_json tests = nlohmann::ordered_json::array();
        for (size_t i = 0; i < pps.size(); ++i) {
            const double gflops = ppStats[i].median() * prefillGflop(pps[i]) / pps[i];
            tests.push_back({{"test", fmt::format("pp{}", pps[i])}, {"tokens_per_s", ppStats[i].json()},
                             {"time_to_first_token_ms", ttft[i].json()}, {"gflops", gflops},
                             {"fraction_of_peak", peak > 0 ? gflops / peak : 0.0}});
        }
        tests.push_back({{"test", fmt::format("tg{}", a.genTokens)}, {"tokens_per_s", tg.json()},
                         {"bandwidth_gbs", bandwidth.json()}, {"bound_tokens_per_s", tgBound.json()},
                         {"fraction_of_bound", tgFraction.json()}});
        if (a.depth > 0)
            tests.push_back({{"test", fmt::format("tg16@{}", a.depth)}, {"tokens_per_s", tgDeep.json()},
                             {"tokens_per_s_at_10", tgNear.json()},
                             {"ratio", tgNear.median() > 0 ? tgDeep.median() / tgNear.median() : 0.0}});
        nlohmann::ordered_json j = {
            {"commit", gitCommit()}, {"model", path.filename().string()}, {"cpu_isa", std::string(dev.isaName())}, {"kernel_set", kernelSetName()},
            {"kernel_extensions", kernelSetExtensions(activeKernelSet())}, {"threads", dev.threads()}, {"precision", m.precisionSummary()}, {"kv_type", a.kv}, {"weights_pages", a.noMmap ? "private" : "shared"},
            {"parameters_read_per_token_bytes", m.weightBytesPerToken()}, {"weights_resident_bytes", m.weightBytesResident()},
            {"kv_cache_bytes", kvBytes}, {"load_ms", loadS * 1e3}, {"peak_rss_bytes", peakRss},
            {"peak_rss_budget_bytes", m.weightBytesResident() + kvBytes + (uint64_t(150) << 20)},
            {"matmul_peak_gflops", {{"f32", peakF32}, {"bf16", peakBf16}, {"s8", peakS8}}},
            {"repeat", a.repeat}, {"clean_rounds", nClean}, {"others_cpu_share_per_round", othersBusy}, {"tests", tests}};
        std::printf("%s\n", j.dump().c_str());
        return 0;
    }
    std::printf("model %s | %s | KV %s | %d threads, %s | commit %s\n", path.filename().string().c_str(),
                m.precisionSummary().c_str(), a.kv.c_str(), dev.threads(), std::string(dev.isaName()).c_str(), gitCommit().c_str());
    std::printf("rounds %d, %d clean (other processes < %.0f%% CPU; figures are over the clean ones when any)\n", a.repeat, nClean,
                100 * a.maxBusy);
    std::printf("load %.0f ms | peak RSS %.0f MiB (weights %.0f MiB + KV %.0f MiB + 150 MiB = %.0f MiB budget)\n", loadS * 1e3,
                double(peakRss) / (1 << 20), double(m.weightBytesResident()) / (1 << 20), double(kvBytes) / (1 << 20),
                double(m.weightBytesResident() + kvBytes + (uint64_t(150) << 20)) / (1 << 20));
    const std::string extensions = kernelSetExtensions(activeKernelSet());
    std::printf("machine: read bandwidth %.1f GB/s (median of %d probes) | matmul peak f32 %.0f, bf16 %.0f GFLOP/s, s8 %.0f GOP/s | kernels %s%s\n",
                bandwidth.median(), int(bandwidth.samples.size()) * 2, peakF32, peakBf16, peakS8, kernelSetName(),
                extensions.empty() ? "" : (" + " + extensions).c_str());
    for (size_t i = 0; i < pps.size(); ++i) {
        const double gflops = ppStats[i].median() * prefillGflop(pps[i]) / pps[i];
        std::printf("pp%-5d %8.1f tok/s (%.1f..%.1f) | first token %.0f ms | %.0f GFLOP/s = %.0f%% of peak\n", pps[i],
                    ppStats[i].median(), ppStats[i].min(), ppStats[i].max(), ttft[i].median(), gflops,
                    peak > 0 ? 100 * gflops / peak : 0.0);
    }
    std::printf("tg%-5d %8.2f tok/s (%.2f..%.2f) | bound %.2f tok/s at %.1f GB/s | %.0f%% of bound (%.0f..%.0f%%)\n", a.genTokens,
                tg.median(), tg.min(), tg.max(), tgBound.median(), bandwidth.median(), 100 * tgFraction.median(),
                100 * tgFraction.min(), 100 * tgFraction.max());
    if (a.depth > 0)
        std::printf("tg16 at position %d: %.2f tok/s vs %.2f at position 10 (%.0f%%)\n", a.depth, tgDeep.median(), tgNear.median(),
                    tgNear.median() > 0 ? 100 * tgDeep.median() / tgNear.median() : 0.0);
    return 0;
}

}  // namespace

void addBenchCommand(CLI::App& app, int& exitCode) {
    auto a = std::make_shared<BenchArgs>();
    CLI::App* cmd = app.add_subcommand("bench", "Prefill/decode speed against this machine's bandwidth and matmul peak");
    cmd->add_option("--model,-m", a->model, "GGUF model file (default: the bundled stories260K)")->check(kNotEmpty);
    cmd->add_option("--prompt-tokens", a->promptTokens, "prefill tests: prompt lengths, comma-separated")->capture_default_str();
    cmd->add_option("--gen-tokens", a->genTokens, "decode test: tokens generated")->capture_default_str();
    cmd->add_option("--threads,-t", a->threads, "compute threads (0 = one per core)")->capture_default_str();
    cmd->add_option("--repeat,-r", a->repeat, "interleaved rounds after the warm-up")->capture_default_str();
    cmd->add_option("--compute", a->compute, "auto, f32, bf16 or int8")->capture_default_str();
    cmd->add_flag("--no-mmap", a->noMmap, kNoMmapHelp);
    cmd->add_option("--kv", a->kv, "KV cache type: f16 (as llama.cpp), f32, q8_0 or q4_0 (ggml's blocks; head dim a multiple of 32)")->capture_default_str();
    cmd->add_option("--depth", a->depth, "also decode 16 tokens at this position and at position 10 (0 = off)")->capture_default_str();
    cmd->add_option("--probe-mib", a->probeMib, "bandwidth probe buffer (beyond the last-level cache)")->capture_default_str();
    cmd->add_option("--peak-seconds", a->peakSeconds, "time per matmul peak probe")->capture_default_str();
    cmd->add_option("--max-busy", a->maxBusy, "a round is clean when other processes use less than this share of the CPUs")
        ->capture_default_str();
    cmd->add_option("--wait-quiet", a->waitQuiet, "seconds to wait for a quiet machine before each round")->capture_default_str();
    cmd->add_flag("--json", a->json, "one JSON object");
    // Speculative decoding: plain and speculative decoding of the same greedy answer, interleaved.
    addDraftOptions(*cmd, a->draft);
    cmd->add_option("--prompt", a->prompt, "with --draft or --draft-ngram: the prompt both answers continue")->capture_default_str();
    cmd->final_callback([a, &exitCode] { exitCode = run(*a); });
}

}  // namespace inferscope::cli
