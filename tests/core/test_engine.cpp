// The engine end to end on real models: llama.cpp's greedy golden outputs, the KV cache's reuse,
// truncation and accounting, the no-cache mode, stop conditions and cancellation.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "record/step_record_codec.h"
#include "engine_test_helpers.h"
#include "model_test_helpers.h"

using namespace inferscope;
using namespace inferscope::testing_model;

namespace {

std::unique_ptr<Engine> loadEngine(const std::string& path, int32_t ctx = 0, ComputePrecision precision = ComputePrecision::Auto) {
    return loadTestEngine(path, {.ctx = ctx, .precision = precision});
}

GenerateRequest greedy(std::vector<int32_t> prompt, int32_t maxTokens) { return greedyRequest(std::move(prompt), maxTokens); }

// Collects every event.
struct Recorder : GenerationObserver {
    std::vector<PrefillStats> prefills;
    std::vector<StepRecord> steps;
    std::vector<KvCacheStats> kv;
    int finishes = 0;
    std::function<void(const StepRecord&)> onEachStep;
    void onPrefill(const PrefillStats& p) override { prefills.push_back(p); }
    void onStep(const StepRecord& r) override {
        steps.push_back(r);
        if (onEachStep) onEachStep(r);
    }
    void onKvCache(const KvCacheStats& s) override { kv.push_back(s); }
    void onFinish(const GenerationSummary&) override { ++finishes; }
};

// Every step's greedy id and top-5 logits and probabilities against llama.cpp's.
void expectMatchesReference(Engine& engine, const Reference& ref, bool useKvCache) {
    ASSERT_EQ(engine.tokenizer().encode(ref.prompt, true), ref.promptIds);
    auto req = greedy(ref.promptIds, int32_t(ref.steps.size()));
    req.useKvCache = useKvCache;
    Recorder rec;
    auto summary = engine.generate(req, &rec);
    ASSERT_TRUE(summary) << summary.error().message;
    ASSERT_EQ(rec.steps.size(), ref.steps.size());
    for (size_t s = 0; s < ref.steps.size(); ++s) {
        const auto& got = rec.steps[s].sample;
        ASSERT_EQ(got.id, ref.steps[s].id) << "step " << s;
        EXPECT_EQ(rec.steps[s].piece, ref.steps[s].piece) << "step " << s;
        ASSERT_EQ(got.top.size(), 5u);
        for (size_t c = 0; c < 5; ++c) {
            const RefCandidate& want = ref.steps[s].top[c];
            // Near-ties may swap places: find the reference candidate among ours by id.
            auto it = std::find_if(got.top.begin(), got.top.end(), [&](const auto& x) { return x.id == want.id; });
            if (it == got.top.end()) {
                // A candidate at the edge of the top 5 may fall just outside ours; it must be close to our 5th.
                EXPECT_NEAR(got.top.back().logit, want.logit, logitTolerance(want.logit)) << "step " << s << " id " << want.id;
                continue;
            }
            EXPECT_NEAR(it->logit, want.logit, logitTolerance(want.logit)) << "step " << s << " id " << want.id;
            // p = exp(logit - logsumexp): its log may move by the logit's error plus the normaliser's,
            // and the reference prints p to 6 decimals.
            const float logTolerance = 2 * logitTolerance(ref.steps[s].top[0].logit) + 0.5e-6f / want.p;
            EXPECT_NEAR(std::log(it->p[0]), std::log(want.p), logTolerance) << "step " << s << " id " << want.id;
        }
    }
    EXPECT_EQ(summary->text, ref.text);
    EXPECT_EQ(summary->reason, FinishReason::MaxTokens);
}

}  // namespace

TEST(EngineGolden, Stories260KMatchesLlamaCpp) {
    auto engine = loadEngine(kStories);
    ASSERT_TRUE(engine);
    for (const char* name : {"stories260K-greedy-1.json", "stories260K-greedy-2.json"}) {
        SCOPED_TRACE(name);
        engine->reset();
        expectMatchesReference(*engine, loadReference(name), true);
    }
}

TEST(EngineGolden, Stories260KWithoutKvCacheGivesTheSameTokens) {
    auto engine = loadEngine(kStories);
    ASSERT_TRUE(engine);
    expectMatchesReference(*engine, loadReference("stories260K-greedy-1.json"), false);
}

TEST(EngineGolden, TinyRandomF16MatchesLlamaCppLogits) {
    // Random weights: the top logits are ~0.01 apart, so this checks F16 loading to the third decimal.
    auto engine = loadEngine(kTinyRandom);
    ASSERT_TRUE(engine);
    expectMatchesReference(*engine, loadReference("tiny-random-greedy-1.json"), true);
}

TEST(EngineGolden, ConvertedWeightsKeepTheStory) {
    // stories260K with every matrix stored as F16, BF16 or Q8_0: each loads, and its greedy story
    // stays close to the F32 one (F16 exactly for the first 32 tokens; BF16 and Q8_0 lose precision
    // so they are held to the first 8).
    const Reference ref = loadReference("stories260K-greedy-1.json");
    TempDir dir;
    for (auto [type, exactSteps] : {std::pair{GgmlType::F16, 32}, std::pair{GgmlType::BF16, 8}, std::pair{GgmlType::Q8_0, 8}}) {
        SCOPED_TRACE(ggmlTypeName(uint32_t(type)));
        const auto path = dir / "converted.gguf";
        writeConverted(kStories, path, type);
        auto engine = loadEngine(path);
        ASSERT_TRUE(engine);
        auto summary = engine->generate(greedy(ref.promptIds, exactSteps));
        ASSERT_TRUE(summary) << summary.error().message;
        for (int s = 0; s < exactSteps; ++s) EXPECT_EQ(summary->tokens[size_t(s)], ref.steps[size_t(s)].id) << "step " << s;
    }
}

TEST(EngineGolden, Bf16ComputeOnF32Weights) {
    const Reference ref = loadReference("stories260K-greedy-1.json");
    auto engine = loadEngine(kStories, 0, ComputePrecision::BF16);
    ASSERT_TRUE(engine);
    Recorder rec;
    auto summary = engine->generate(greedy(ref.promptIds, 8), &rec);
    ASSERT_TRUE(summary);
    for (size_t s = 0; s < 8; ++s) {
        EXPECT_EQ(rec.steps[s].sample.id, ref.steps[s].id);
        // bf16 keeps 8 bits of mantissa: logits within 1% of F32's.
        EXPECT_NEAR(rec.steps[s].sample.logit, ref.steps[s].top[0].logit, 0.01f * std::fabs(ref.steps[s].top[0].logit));
    }
}

TEST(EngineKvCache, ByteAccountingFollowsTheModel) {
    auto engine = loadEngine(kStories, 256);
    ASSERT_TRUE(engine);
    // stories260K: 5 layers, 4 KV heads, head dim 8, f32: 2 × 5 × 4 × 8 × 4 = 1280 bytes per token.
    auto summary = engine->generate(greedy({1, 403, 407, 261, 378}, 10));
    ASSERT_TRUE(summary);
    const KvCacheStats& kv = summary->kv;
    EXPECT_EQ(kv.bytesPerToken, 1280u);
    EXPECT_EQ(kv.bytesReserved, 1280u * 256u);
    // 5 prompt positions + 9 decode passes (the 10th token is sampled, not yet run).
    EXPECT_EQ(kv.nUsed, 14);
    EXPECT_EQ(kv.nPromptCells, 5);
    EXPECT_EQ(kv.bytesUsed, 1280u * 14u);
    EXPECT_EQ(kv.bytesUsedPerLayer, 1280u * 14u / 5u);
    EXPECT_EQ(kv.bytesUsedPerHead, 1280u * 14u / 20u);
    EXPECT_EQ(engine->cachedTokens().size(), 14u);
}

TEST(EngineKvCache, CountersWithAndWithoutCache) {
    auto engine = loadEngine(kStories);
    ASSERT_TRUE(engine);
    const int P = 5, n = 20;
    auto cached = engine->generate(greedy({1, 403, 407, 261, 378}, n));
    ASSERT_TRUE(cached);
    // With the cache each position's K/V is computed once: P in prefill + n - 1 decode passes.
    EXPECT_EQ(cached->kv.kvComputed, uint64_t(P + n - 1));
    // Query at position p scores p + 1 keys: Σ_{p < P+n-1} (p + 1).
    const uint64_t N = P + n - 1;
    EXPECT_EQ(cached->kv.attentionScores, N * (N + 1) / 2);

    engine->reset();
    auto req = greedy({1, 403, 407, 261, 378}, n);
    req.useKvCache = false;
    auto uncached = engine->generate(req);
    ASSERT_TRUE(uncached);
    EXPECT_EQ(uncached->tokens, cached->tokens);
    // Without it, decode pass i recomputes all P + i positions.
    uint64_t kv = P, scores = uint64_t(P) * (P + 1) / 2;
    for (uint64_t i = 1; i < uint64_t(n); ++i) {
        kv += P + i;
        scores += (P + i) * (P + i + 1) / 2;
    }
    EXPECT_EQ(uncached->kv.kvComputed, kv);
    EXPECT_EQ(uncached->kv.attentionScores, scores);
}

TEST(EngineKvCache, PromptPrefixIsReusedAndContinuationIsUnchanged) {
    auto engine = loadEngine(kStories);
    ASSERT_TRUE(engine);
    const std::vector<int32_t> prompt{1, 403, 407, 261, 378};
    auto first = engine->generate(greedy(prompt, 20));
    ASSERT_TRUE(first);
    // Continue from prompt + the first 7 generated tokens: only the last of them is run again.
    std::vector<int32_t> longer = prompt;
    longer.insert(longer.end(), first->tokens.begin(), first->tokens.begin() + 7);
    Recorder rec;
    auto second = engine->generate(greedy(longer, 13), &rec);
    ASSERT_TRUE(second);
    ASSERT_EQ(rec.prefills.size(), 1u);
    EXPECT_EQ(rec.prefills[0].nReused, int32_t(longer.size()) - 1);
    EXPECT_EQ(rec.prefills[0].nComputed, 1);
    EXPECT_EQ(second->tokens, std::vector<int32_t>(first->tokens.begin() + 7, first->tokens.end()));
}

TEST(EngineKvCache, BranchingFromAnAlternativeEqualsAFreshRun) {
    auto engine = loadEngine(kStories);
    ASSERT_TRUE(engine);
    const std::vector<int32_t> prompt{1, 403, 407, 261, 378};
    Recorder rec;
    auto first = engine->generate(greedy(prompt, 12), &rec);
    ASSERT_TRUE(first);
    // Take step 4's second candidate instead of its pick and continue.
    const int k = 4;
    const int32_t alternative = rec.steps[k].sample.top[1].id;
    std::vector<int32_t> branch = prompt;
    branch.insert(branch.end(), first->tokens.begin(), first->tokens.begin() + k);
    branch.push_back(alternative);
    Recorder branchRec;
    auto branched = engine->generate(greedy(branch, 10), &branchRec);
    ASSERT_TRUE(branched);
    EXPECT_EQ(branchRec.prefills[0].nReused, int32_t(prompt.size()) + k);  // the cache was truncated, not refilled
    EXPECT_EQ(branchRec.prefills[0].nComputed, 1);
    auto fresh = loadEngine(kStories);
    auto reference = fresh->generate(greedy(branch, 10));
    ASSERT_TRUE(reference);
    EXPECT_EQ(branched->tokens, reference->tokens);
}

TEST(EngineStop, ContextFullIsAFinishReason) {
    auto engine = loadEngine(kStories, 16);
    ASSERT_TRUE(engine);
    EXPECT_EQ(engine->contextLength(), 16);
    auto summary = engine->generate(greedy({1, 403, 407, 261, 378}, 100));
    ASSERT_TRUE(summary);
    EXPECT_EQ(summary->reason, FinishReason::ContextFull);
    EXPECT_EQ(summary->nGenerated, 12);  // positions 5 .. 16
    EXPECT_EQ(summary->kv.nUsed, 16);
}

TEST(EngineStop, StopStringEndsGenerationAndIsCutFromTheText) {
    auto engine = loadEngine(kStories);
    ASSERT_TRUE(engine);
    auto req = greedy({1, 403, 407, 261, 378}, 64);
    req.stopStrings = {"Lily"};
    auto summary = engine->generate(req);
    ASSERT_TRUE(summary);
    EXPECT_EQ(summary->reason, FinishReason::StopString);
    EXPECT_EQ(summary->text, ", there was a little girl named ");
}

TEST(EngineStop, EndOfStoryFinishes) {
    // stories260K ends a story by starting the next one with BOS (it never emits EOS): the engine
    // treats a generated BOS like EOS, as llama2.c does.
    auto engine = loadEngine(kStories);
    ASSERT_TRUE(engine);
    Recorder rec;
    auto summary = engine->generate(greedy({1, 403, 407, 261, 378}, 1000), &rec);
    ASSERT_TRUE(summary);
    ASSERT_EQ(summary->reason, FinishReason::EndOfGeneration) << summary->text;
    EXPECT_TRUE(rec.steps.back().endOfGeneration);
    EXPECT_EQ(rec.steps.back().sample.id, engine->tokenizer().bosId());
    EXPECT_TRUE(summary->text.ends_with("You are a good friend.\"")) << summary->text;
    EXPECT_EQ(rec.steps.back().piece, "");
}

TEST(EngineStop, CancelStopsWithinOneStep) {
    auto engine = loadEngine(kStories);
    ASSERT_TRUE(engine);
    std::atomic<bool> cancel{false};
    Recorder rec;
    rec.onEachStep = [&](const StepRecord& r) {
        if (r.step == 3) cancel = true;
    };
    auto summary = engine->generate(greedy({1, 403, 407, 261, 378}, 100), &rec, &cancel);
    ASSERT_TRUE(summary);
    EXPECT_EQ(summary->reason, FinishReason::Cancelled);
    EXPECT_EQ(summary->nGenerated, 4);
    EXPECT_EQ(rec.finishes, 1);
    // Cancelled before prefill: nothing runs.
    auto before = engine->generate(greedy({1, 403}, 5), nullptr, &cancel);
    ASSERT_TRUE(before);
    EXPECT_EQ(before->reason, FinishReason::Cancelled);
    EXPECT_EQ(before->nGenerated, 0);
}

TEST(EngineErrors, BadRequestsAreClearErrors) {
    auto engine = loadEngine(kStories, 8);
    ASSERT_TRUE(engine);
    auto expectError = [&](GenerateRequest req, const std::string& message) {
        auto r = engine->generate(req);
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error().kind, ErrorKind::InvalidArgument);
        EXPECT_EQ(r.error().message, message);
    };
    expectError(greedy({}, 5), "the prompt is empty");
    expectError(greedy({1, 512}, 5), "token id 512 is outside the vocabulary (0 to 511)");
    expectError(greedy({1, 2, 3, 4, 5, 6, 7, 8, 9}, 5),
                "the prompt is 9 tokens but the context holds 8; shorten it or load with a larger context");
    expectError(greedy({1}, 0), "max tokens must be at least 1, got 0");
    auto req = greedy({1}, 5);
    req.sampler.topP = 1.5f;
    expectError(req, "top-p must be in (0, 1], got 1.5");
}

TEST(EngineErrors, ModelFilesThatCannotRun) {
    TempDir dir;
    auto expectLoadError = [](const std::filesystem::path& path, ErrorKind kind, const std::string& message) {
        EngineOptions opt;
        opt.modelPath = path;
        opt.device = DeviceKind::Cpu;
        auto e = Engine::load(opt);
        ASSERT_FALSE(e);
        EXPECT_EQ(e.error().kind, kind);
        EXPECT_EQ(e.error().message, message);
    };
    // A Q8_1 matrix (an activation format llama-quantize never writes): the reader accepts it,
    // the model cannot compute with it and says which type and tensor.
    rewriteModel(kStories, dir / "q8_1.gguf", [](TensorEdit& e) {
        if (e.name != "blk.0.attn_q.weight") return;
        e.type = GgmlType::Q8_1;
        e.bytes.assign(64 * 64 / 32 * 36, 0);
    });
    expectLoadError(dir / "q8_1.gguf", ErrorKind::Unsupported,
                    "unsupported tensor type Q8_1 in blk.0.attn_q.weight (supported: F32, F16, BF16, Q4_0, Q4_1, Q5_0, "
                    "Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS)");
    rewriteModel(kStories, dir / "missing.gguf", [](TensorEdit& e) { e.drop = e.name == "blk.3.ffn_up.weight"; });
    expectLoadError(dir / "missing.gguf", ErrorKind::BadFile, "missing tensor blk.3.ffn_up.weight");
    rewriteModel(kStories, dir / "shape.gguf", [](TensorEdit& e) {
        if (e.name == "blk.1.attn_k.weight") e.ne = {32, 64};  // same bytes, transposed shape
    });
    expectLoadError(dir / "shape.gguf", ErrorKind::BadFile, "tensor blk.1.attn_k.weight has shape [32, 64], expected [64, 32]");
    expectLoadError(dir / "absent.gguf", ErrorKind::Io,
                    "cannot open " + (dir / "absent.gguf").string() + ": No such file or directory");
}

TEST(StepRecordCodec, RoundTripsARealGenerationAndRejectsDamage) {
    auto engine = loadEngine(kStories);
    ASSERT_TRUE(engine);
    Recorder rec;
    auto req = greedy({1, 403, 407, 261, 378}, 12);
    req.sampler.topN = 7;
    req.replayWidth = 64;
    ASSERT_TRUE(engine->generate(req, &rec));
    const auto bytes = encodeStepRecords(rec.steps);
    auto back = decodeStepRecords(bytes);
    ASSERT_TRUE(back) << back.error().message;
    ASSERT_EQ(back->size(), rec.steps.size());
    for (size_t k = 0; k < rec.steps.size(); ++k) {
        const StepRecord &a = rec.steps[k], &b = (*back)[k];
        EXPECT_EQ(a.step, b.step);
        EXPECT_EQ(a.position, b.position);
        EXPECT_EQ(a.piece, b.piece);
        EXPECT_EQ(a.forwardUs, b.forwardUs);
        EXPECT_EQ(a.sample.id, b.sample.id);
        EXPECT_EQ(a.sample.pRaw, b.sample.pRaw);
        EXPECT_EQ(a.sample.rank, b.sample.rank);
        EXPECT_EQ(a.sample.entropyBits, b.sample.entropyBits);
        EXPECT_EQ(a.sample.survivors, b.sample.survivors);
        ASSERT_EQ(a.sample.top.size(), 7u);
        ASSERT_EQ(b.sample.top.size(), 7u);
        for (size_t c = 0; c < 7; ++c) {
            EXPECT_EQ(a.sample.top[c].id, b.sample.top[c].id);
            EXPECT_EQ(a.sample.top[c].p, b.sample.top[c].p);
        }
        ASSERT_EQ(a.replayIds.size(), 64u);
        EXPECT_EQ(a.replayIds, b.replayIds);
        EXPECT_EQ(a.replayLogits, b.replayLogits);
        // The replay logits are the highest, descending, and start with the record's top-N.
        EXPECT_TRUE(std::is_sorted(a.replayLogits.rbegin(), a.replayLogits.rend()));
        for (size_t c = 0; c < 7; ++c) EXPECT_EQ(a.replayIds[c], a.sample.top[c].id);
    }
    // Every truncation and a wrong magic are errors, never a crash.
    for (size_t cut = 0; cut < bytes.size(); cut += 7)
        EXPECT_FALSE(decodeStepRecords(std::span(bytes).first(cut))) << cut;
    auto bad = bytes;
    bad[0] = 'X';
    EXPECT_EQ(decodeStepRecords(bad).error().message, "token records: not in the ISR1/ISR2/ISR3/ISR4/ISR5 format");
    auto extra = bytes;
    extra.push_back(0);
    EXPECT_EQ(decodeStepRecords(extra).error().message, "token records: 1 unexpected bytes at the end");
}
