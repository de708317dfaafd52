// Speculative decoding (core/engine/speculative.h): greedy output is plain decoding's token for
// token on every architecture fixture, with a draft model and with prompt lookup; the KV cache after
// rejected drafts is byte for byte the one plain decoding leaves; sampled output follows the same
// distribution as plain decoding (chi-square on fixed seeds); and the refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <array>
#include <map>
#include <random>

#include "engine/engine.h"
#include "record/step_record_codec.h"
#include "engine_test_helpers.h"
#include "kv_test_helpers.h"
#include "model_test_helpers.h"
#include "shared_data.h"

using namespace inferscope;
using namespace inferscope::testing_model;

namespace {

struct Collected : GenerationObserver {
    std::vector<StepRecord> steps;
    void onStep(const StepRecord& r) override { steps.push_back(r); }
};

GenerationSummary run(Engine& e, GenerateRequest req, std::vector<StepRecord>* steps = nullptr) {
    Collected c;
    auto r = e.generate(req, &c);
    EXPECT_TRUE(r) << r.error().message;
    if (steps) *steps = std::move(c.steps);
    return r ? *r : GenerationSummary{};
}

SpeculativeOptions withDraftModel(Engine& d, int32_t k) {
    SpeculativeOptions o;
    o.source = DraftSource::Model;
    o.draftModel = &d;
    o.maxDraft = k;
    return o;
}

SpeculativeOptions withNgrams(int32_t k) {
    SpeculativeOptions o;
    o.source = DraftSource::NGram;
    o.maxDraft = k;
    o.ngramMin = 1;
    return o;
}

// Plain greedy against speculative greedy on one model, with a Q8_0 copy of it as drafter (k = 3
// and 7: one and two verification passes) and with prompt lookup.
void expectGreedyIdentical(const std::string& model, const std::string& prompt, int32_t maxTokens, bool twoPasses = true) {
    SCOPED_TRACE(model);
    const auto pair = loadWithQ8Copy(model, {512});
    auto& target = pair->model;
    auto& draft = pair->copy;
    ASSERT_TRUE(target && draft);
    GenerateRequest req = greedyRequest(target->tokenizer().encode(prompt, target->tokenizer().addBosByDefault()), maxTokens);
    std::vector<StepRecord> plainSteps;
    const GenerationSummary plain = run(*target, req, &plainSteps);
    std::vector<SpeculativeOptions> options{withDraftModel(*draft, 3), withNgrams(4)};
    if (twoPasses) options.push_back(withDraftModel(*draft, 7));
    for (const SpeculativeOptions& o : options) {
        SCOPED_TRACE(o.source == DraftSource::Model ? "draft model, k " + std::to_string(o.maxDraft) : std::string("n-gram"));
        target->reset();
        draft->reset();
        GenerateRequest s = req;
        s.speculative = o;
        std::vector<StepRecord> steps;
        const GenerationSummary spec = run(*target, s, &steps);
        ASSERT_EQ(spec.tokens, plain.tokens);
        EXPECT_EQ(spec.reason, plain.reason);
        EXPECT_EQ(spec.text, plain.text);
        ASSERT_EQ(steps.size(), plainSteps.size());
        for (size_t i = 0; i < steps.size(); ++i) {
            // The record each token shows is the one plain decoding computed (the same logits).
            EXPECT_EQ(steps[i].sample.logit, plainSteps[i].sample.logit) << i;
            EXPECT_EQ(steps[i].sample.rank, plainSteps[i].sample.rank) << i;
            EXPECT_EQ(steps[i].position, plainSteps[i].position) << i;
            if (i > 0) EXPECT_TRUE(steps[i].draft) << i;
        }
        EXPECT_LE(spec.draftAccepted, spec.draftN);
        if (o.source == DraftSource::Model) EXPECT_GT(spec.draftAccepted, 0);
        // With drafts of up to 3, a round is one pass: fewer passes than tokens when drafts were accepted.
        if (spec.draftAccepted > 0 && o.maxDraft <= 3) EXPECT_LT(spec.nDecodePasses, spec.nGenerated);
        EXPECT_EQ(target->cachedTokens().size(), req.prompt.size() + spec.tokens.size() - 1);
    }
}

}  // namespace

TEST(Speculative, GreedyIsPlainDecodingTokenForToken) {
    expectGreedyIdentical(kStories, "Once upon a time, there was a little girl named Lily. She", 96);
    expectGreedyIdentical(kTinyRandom, "The quick brown fox jumps over the lazy dog. The quick brown", 48);
}

TEST(Speculative, GreedyIsPlainDecodingOnEveryArchitecture) {
    for (const char* arch : {"llama3", "qwen2", "qwen3", "gemma2", "gemma3", "phi3"}) {
        const auto file = inferscope::testing_shared::sharedFile(std::string("models/arch/") + arch + "-tiny.gguf");
        if (!file) GTEST_SKIP() << "../shared/models/arch not found: skipped";
        expectGreedyIdentical(*file, "Tell me a story about a llama. Once upon a time", 24, false);
    }
}

// A K-quant file (Q4_K matrices, a Q6_K LM head): their kernels associate the sums of 3 or 4 rows
// otherwise than of one, so verification goes 2 rows a pass there (LlamaModel::exactDecodeRows).
TEST(Speculative, GreedyIsPlainDecodingOnAKQuantFile) {
    INFERSCOPE_SHARED_FILE_OR_SKIP(file, "models/quant/stories260K-wide-Q4_K_M.gguf");
    expectGreedyIdentical(file, "Once upon a time, there was a little girl named Lily. She", 48);
}

// After rounds with rejected drafts, the model's cache holds exactly what plain decoding's holds.
// --draft-p-min under greedy decoding: the drawn-from distribution is certain of every pick, so the
// test is on the drafter's raw probability. p-min 1 stops every draft (no raw probability reaches
// 1), a middle value some, and the answer is plain decoding's every time.
TEST(Speculative, PMinStopsDraftsWhereTheDrafterIsUnsureEvenWhenGreedy) {
    const auto pair = loadWithQ8Copy(kStories, {512});
    auto& target = pair->model;
    auto& draft = pair->copy;
    ASSERT_TRUE(target && draft);
    const GenerateRequest req = greedyRequest(target->tokenizer().encode("Once upon a time, there was a little girl named Lily. She", true), 64);
    const GenerationSummary plain = run(*target, req);
    auto drafted = [&](float pMin) {
        target->reset();
        draft->reset();
        GenerateRequest s = req;
        s.speculative = withDraftModel(*draft, 3);
        s.speculative->pMin = pMin;
        const GenerationSummary r = run(*target, s);
        EXPECT_EQ(r.tokens, plain.tokens) << "p-min " << pMin;
        return r.draftN;
    };
    const int32_t always = drafted(0.0f), some = drafted(0.5f), never = drafted(1.0f);
    EXPECT_GT(always, 0);
    EXPECT_GT(some, 0);
    EXPECT_LT(some, always);
    EXPECT_EQ(never, 0);
}

TEST(Speculative, TheCacheAfterRejectedDraftsIsThePlainOnesByteForByte) {
    TempDir dir;
    auto target = loadTestEngine(kStories, {256});
    auto plainEngine = loadTestEngine(kStories, {256});
    GenerateRequest req = greedyRequest(target->tokenizer().encode("Lily and Tom went to the park. They", true), 80);
    // Prompt lookup on this text drafts often and wrongly: rounds with rejections.
    GenerateRequest s = req;
    s.speculative = withNgrams(5);
    const GenerationSummary spec = run(*target, s);
    const GenerationSummary plain = run(*plainEngine, req);
    ASSERT_EQ(spec.tokens, plain.tokens);
    EXPECT_LT(spec.draftAccepted, spec.draftN) << "no draft was rejected: the test shows nothing";
    ASSERT_EQ(target->cachedTokens().size(), plainEngine->cachedTokens().size());
    expectSameCacheBytes(target->kvCache(), plainEngine->kvCache());
}

// Sampled at temperature 1.5 over the whole vocabulary: over 1,500 fixed seeds, the second token's
// frequencies fit the model's own distribution given the first (chi-square goodness of fit, p >
// 0.001), for drafters whose q is not p: the Q8_0 copy drafting at temperature 0.6 (sharper than
// the model: many corrections) and prompt lookup on a repetitive prompt (point masses, mostly
// rejected). The corrections drawn from max(0, p − q) must restore exactly the model's
// distribution; drawing them from p instead fails this test (tried).
TEST(Speculative, SampledOutputFollowsTheModelsDistribution) {
    const auto pair = loadWithQ8Copy(kStories, {64});
    auto& target = pair->model;
    auto& draft = pair->copy;
    GenerateRequest req;
    req.prompt = target->tokenizer().encode("the cat and the dog and the bird and the cat saw the dog and", true);
    req.sampler.temperature = 1.5f;
    req.sampler.topK = 0;
    req.sampler.topP = 1.0f;
    req.sampler.minP = 0.0f;
    req.sampler.topN = 0;
    req.maxTokens = 3;  // the first from the prefill, one drafted (and checked), a bonus
    constexpr int kRuns = 1500;
    // The model's distribution of the second token given the first, as the sampler draws it.
    std::map<int32_t, std::vector<TokenProbability>> given;
    auto modelAfter = [&](int32_t first) -> const std::vector<TokenProbability>& {
        auto it = given.find(first);
        if (it != given.end()) return it->second;
        std::vector<int32_t> seq = req.prompt;
        seq.push_back(first);
        std::vector<float> last;
        EXPECT_TRUE(target->score(seq, [&](int32_t pos, std::span<const float> l) {
            if (pos + 1 == int32_t(seq.size())) last.assign(l.begin(), l.end());
        }));
        auto chain = SamplerChain::create(req.sampler);
        auto d = chain->finalDistribution(last, seq);
        return given.emplace(first, *d).first->second;
    };
    SpeculativeOptions sharper = withDraftModel(*draft, 1);
    sharper.draftSampler = req.sampler;
    sharper.draftSampler->temperature = 0.6f;
    for (const SpeculativeOptions& o : {sharper, withNgrams(1)}) {
        std::map<int32_t, double> observed, expected;
        int32_t accepted = 0, drafted = 0;
        for (int seed = 0; seed < kRuns; ++seed) {
            GenerateRequest r = req;
            r.sampler.seed = uint64_t(seed);
            r.speculative = o;
            const GenerationSummary s = run(*target, r);
            if (s.tokens.size() < 2) continue;  // ended at the first token: nothing to count, expected or seen
            observed[s.tokens[1]] += 1;
            for (const TokenProbability& t : modelAfter(s.tokens[0])) expected[t.id] += t.p;
            accepted += s.draftAccepted;
            drafted += s.draftN;
        }
        // Categories expected under 5 times pooled.
        double chi2 = 0, pooledObserved = 0, pooledExpected = 0;
        int dof = -1;
        for (const auto& [id, e] : expected) {
            const double x = observed.count(id) ? observed.at(id) : 0.0;
            if (e < 5) {
                pooledObserved += x;
                pooledExpected += e;
                continue;
            }
            chi2 += (x - e) * (x - e) / e;
            ++dof;
        }
        if (pooledExpected > 0) {
            chi2 += (pooledObserved - pooledExpected) * (pooledObserved - pooledExpected) / pooledExpected;
            ++dof;
        }
        ASSERT_GT(dof, 5) << "too few categories for the test to tell anything";
        const double k = double(dof), z = 3.0902;  // p = 0.001, Wilson–Hilferty
        const double critical = k * std::pow(1.0 - 2.0 / (9.0 * k) + z * std::sqrt(2.0 / (9.0 * k)), 3);
        EXPECT_LT(chi2, critical) << "chi-square " << chi2 << " with " << dof << " degrees of freedom";
        EXPECT_GT(drafted - accepted, kRuns / 10) << "too few corrections for the test to tell anything";
        std::printf("%s: chi-square %.1f (%d dof, critical %.1f at p = 0.001); %d of %d drafted tokens accepted\n",
                    o.source == DraftSource::Model ? "draft model at T 0.6" : "n-gram", chi2, dof, critical, accepted, drafted);
    }
}

// The step itself: for random p and q, a drafted token x drawn from q and the two uniforms swept
// over a grid, the token emitted has exactly p's distribution (the grid's error aside).
TEST(Speculative, OneStepEmitsExactlyTheModelsDistribution) {
    std::mt19937_64 gen(7);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    constexpr int kGrid = 400;
    for (int trial = 0; trial < 40; ++trial) {
        const int n = 2 + int(gen() % 12);
        auto randomDistribution = [&](double sharpness) {
            std::vector<TokenProbability> d;
            double z = 0;
            for (int i = 0; i < n; ++i) {
                const double w = trial % 5 == 0 && i % 3 == 0 ? 0.0 : std::pow(unit(gen), sharpness);  // some zeros
                d.push_back({i, w});
                z += w;
            }
            if (z == 0) d[0].p = z = 1;
            for (auto& t : d) t.p /= z;
            std::sort(d.begin(), d.end(), [](const auto& a, const auto& b) { return a.p > b.p || (a.p == b.p && a.id < b.id); });
            return d;
        };
        const auto p = randomDistribution(1.0), q = randomDistribution(3.0);
        std::vector<double> emitted(size_t(n), 0.0);
        for (const TokenProbability& x : q) {
            if (x.p == 0) continue;
            for (int i = 0; i < kGrid; ++i)
                for (int j = 0; j < kGrid; ++j) {
                    const auto c = chooseSpeculative(p, q, x.id, (i + 0.5) / kGrid, (j + 0.5) / kGrid);
                    emitted[size_t(c.token)] += x.p / (double(kGrid) * kGrid);
                    if (c.accepted) EXPECT_EQ(c.token, x.id);
                }
        }
        for (const TokenProbability& t : p) EXPECT_NEAR(emitted[size_t(t.id)], t.p, 4.0 / kGrid) << "trial " << trial << ", token " << t.id;
    }
}

TEST(Speculative, RequestsItCannotServeAreRefused) {
    auto target = loadTestEngine(kStories);
    auto other = loadTestEngine(kTinyRandom);
    GenerateRequest req = greedyRequest(target->tokenizer().encode("Once", true), 4);
    req.speculative = withDraftModel(*other, 3);
    auto r = target->generate(req);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("the two vocabularies differ"), std::string::npos) << r.error().message;
    req.speculative = withNgrams(0);
    EXPECT_FALSE(target->generate(req));
    req.speculative = withNgrams(3);
    req.inspect.lens = true;
    r = target->generate(req);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("not available with speculative decoding"), std::string::npos);
    req.inspect.lens = false;
    req.useKvCache = false;
    EXPECT_FALSE(target->generate(req));
    req.useKvCache = true;
    req.speculative = withDraftModel(*target, 3);
    EXPECT_FALSE(target->generate(req));
}

// A speculative answer's step records keep every draft record through the stored form (ISR5), and
// a plain answer's stay in ISR3, which releases before ISR4 read.
TEST(Speculative, StoredStepRecordsKeepTheirDrafts) {
    auto target = loadTestEngine(kStories);
    ASSERT_TRUE(target);
    GenerateRequest req = greedyRequest(target->tokenizer().encode("Once upon a time, there was a little girl named Lily. She", true), 48);
    req.speculative = withNgrams(4);
    std::vector<StepRecord> steps;
    run(*target, req, &steps);
    ASSERT_GT(steps.size(), 2u);
    const auto bytes = encodeStepRecords(steps);
    ASSERT_EQ(std::string(bytes.begin(), bytes.begin() + 4), "ISR5");
    auto back = decodeStepRecords(bytes);
    ASSERT_TRUE(back) << back.error().message;
    ASSERT_EQ(back->size(), steps.size());
    int drafted = 0;
    for (size_t i = 0; i < steps.size(); ++i) {
        const StepRecord &a = steps[i], &b = (*back)[i];
        EXPECT_EQ(a.sample.id, b.sample.id) << i;
        ASSERT_EQ(bool(a.draft), bool(b.draft)) << i;
        if (!a.draft) continue;
        const DraftRecord &x = *a.draft, &y = *b.draft;
        EXPECT_EQ(x.fate, y.fate) << i;
        EXPECT_EQ(x.draftedId, y.draftedId) << i;
        EXPECT_EQ(x.q, y.q) << i;
        EXPECT_EQ(x.p, y.p) << i;
        EXPECT_EQ(x.acceptProbability, y.acceptProbability) << i;
        EXPECT_EQ(x.draftIndex, y.draftIndex) << i;
        EXPECT_EQ(x.draftLength, y.draftLength) << i;
        EXPECT_EQ(x.draftUs, y.draftUs) << i;
        EXPECT_EQ(x.verifyUs, y.verifyUs) << i;
        EXPECT_EQ(x.verifyRows, y.verifyRows) << i;
        ASSERT_EQ(x.candidates.size(), y.candidates.size()) << i;
        for (size_t c = 0; c < x.candidates.size(); ++c) {
            EXPECT_EQ(x.candidates[c].id, y.candidates[c].id) << i;
            EXPECT_EQ(x.candidates[c].p, y.candidates[c].p) << i;
            EXPECT_EQ(x.candidates[c].q, y.candidates[c].q) << i;
        }
        ASSERT_EQ(x.residual.size(), y.residual.size()) << i;
        for (size_t c = 0; c < x.residual.size(); ++c) {
            EXPECT_EQ(x.residual[c].id, y.residual[c].id) << i;
            EXPECT_EQ(x.residual[c].r, y.residual[c].r) << i;
        }
        EXPECT_EQ(x.residualMass, y.residualMass) << i;
        drafted += x.fate == DraftRecord::Fate::Accepted || x.fate == DraftRecord::Fate::Corrected;
    }
    EXPECT_GT(drafted, 0);
    for (size_t cut = 0; cut < bytes.size(); cut += 13) EXPECT_FALSE(decodeStepRecords(std::span(bytes).first(cut))) << cut;
    // An unknown fate is refused, not cast.
    ASSERT_TRUE(steps.back().draft);
    StepRecord last = steps.back();
    auto bare = std::make_shared<DraftRecord>(*last.draft);
    bare->candidates.clear();
    bare->residual.clear();
    bare->residualMass = 0.0f;
    last.draft = bare;
    const auto one = encodeStepRecords(std::span(&last, 1));
    auto bad = one;
    // The fate: before the id, q, p, min(1, p/q), index, length, two times and rows (44 bytes), then
    // no candidates, no residual and its mass (6 bytes).
    bad[bad.size() - 51] = 9;
    EXPECT_FALSE(decodeStepRecords(bad));
    // An ISR4 record (no candidates, no residual) still reads, with the fields it has.
    std::vector<uint8_t> v4(one.begin(), one.end() - 6);
    v4[3] = '4';
    auto old = decodeStepRecords(v4);
    ASSERT_TRUE(old) << old.error().message;
    ASSERT_TRUE(old->front().draft);
    EXPECT_EQ(old->front().draft->fate, last.draft->fate);
    EXPECT_EQ(old->front().draft->verifyRows, last.draft->verifyRows);
    EXPECT_TRUE(old->front().draft->candidates.empty());
    // More candidates than a record holds is refused.
    auto many = one;
    many[many.size() - 6] = uint8_t(kDraftCandidates + 1);
    EXPECT_FALSE(decodeStepRecords(many));
    // Without drafts: ISR3, as before.
    for (StepRecord& s : steps) s.draft.reset();
    const auto plain = encodeStepRecords(steps);
    EXPECT_EQ(std::string(plain.begin(), plain.begin() + 4), "ISR3");
    ASSERT_TRUE(decodeStepRecords(plain));
}

// What a drafted token's record keeps of p and q: both sides' leading tokens with both
// probabilities, and on a rejection the residual normalize(max(0, p − q)) and its mass.
TEST(Speculative, ADraftedPositionKeepsPQAndTheResidual) {
    const std::vector<TokenProbability> p{{4, 0.5}, {2, 0.3}, {7, 0.2}};
    const std::vector<TokenProbability> q{{2, 0.6}, {9, 0.3}, {4, 0.1}};
    DraftRecord d;
    describeDraftedPosition(p, q, true, d);
    ASSERT_EQ(d.candidates.size(), 4u);  // 2 (q .6), 4 (p .5), 9 (q .3), 7 (p .2)
    EXPECT_EQ(d.candidates[0].id, 2);
    EXPECT_FLOAT_EQ(d.candidates[0].p, 0.3f);
    EXPECT_FLOAT_EQ(d.candidates[0].q, 0.6f);
    EXPECT_EQ(d.candidates[1].id, 4);
    EXPECT_EQ(d.candidates[2].id, 9);
    EXPECT_FLOAT_EQ(d.candidates[2].p, 0.0f);
    EXPECT_EQ(d.candidates[3].id, 7);
    EXPECT_FLOAT_EQ(d.candidates[3].q, 0.0f);
    // max(0, p − q): 4 → 0.4, 7 → 0.2; mass 0.6.
    ASSERT_EQ(d.residual.size(), 2u);
    EXPECT_EQ(d.residual[0].id, 4);
    EXPECT_FLOAT_EQ(d.residual[0].r, 0.4f / 0.6f);
    EXPECT_EQ(d.residual[1].id, 7);
    EXPECT_FLOAT_EQ(d.residual[1].r, 0.2f / 0.6f);
    EXPECT_FLOAT_EQ(d.residualMass, 0.6f);
    describeDraftedPosition(p, q, false, d);  // accepted: no residual
    EXPECT_TRUE(d.residual.empty());
    EXPECT_EQ(d.residualMass, 0.0f);
}

// Prompt lookup drafts with q = 1: a rejection's residual is p without the drafted token,
// renormalised, and the correction is one of its tokens.
TEST(Speculative, APromptLookupRejectionRecordsPWithoutTheDraft) {
    auto target = loadTestEngine(kStories);
    ASSERT_TRUE(target);
    GenerateRequest req = greedyRequest(target->tokenizer().encode("Lily and Tom went to the park. Lily and Tom", true), 64);
    req.sampler.temperature = 1.0f;
    req.sampler.seed = 11;
    req.speculative = withNgrams(4);
    std::vector<StepRecord> steps;
    run(*target, req, &steps);
    int corrected = 0;
    for (const StepRecord& s : steps) {
        if (!s.draft || s.draft->fate != DraftRecord::Fate::Corrected) continue;
        const DraftRecord& d = *s.draft;
        ++corrected;
        ASSERT_FALSE(d.candidates.empty());
        for (const DraftCandidate& c : d.candidates) EXPECT_EQ(c.q, c.id == d.draftedId ? 1.0f : 0.0f);
        EXPECT_NEAR(d.residualMass, 1.0f - d.p, 1e-5);
        ASSERT_FALSE(d.residual.empty());
        for (const DraftResidual& e : d.residual) {
            EXPECT_NE(e.id, d.draftedId);
            const auto c = std::find_if(d.candidates.begin(), d.candidates.end(), [&](const DraftCandidate& x) { return x.id == e.id; });
            if (c != d.candidates.end()) {
                EXPECT_NEAR(e.r, c->p / (1.0f - d.p), 1e-5);
            }
        }
        EXPECT_NE(s.sample.id, d.draftedId);
    }
    EXPECT_GT(corrected, 0);
}
