// Two models on one answer (core/engine/compare.h) and the batched teacher-forced scoring it runs
// on (Engine::scoreRows): the batched logits are the decode path's within rounding, a model
// against itself moves nothing, a Q8_0 copy against the original moves what an independent
// computation from Engine::score says, and the refusals.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/compare.h"
#include "engine/compare_text.h"
#include "engine/engine.h"
#include "sampler/sampler_chain.h"
#include "engine_test_helpers.h"
#include "model_test_helpers.h"

using namespace inferscope;
using namespace inferscope::testing_model;

namespace {

// The prompt and stories260K's greedy answer to it.
std::vector<int32_t> answered(Engine& e, int32_t& answerStart, int32_t maxTokens = 48) {
    GenerateRequest req = greedyRequest(e.tokenizer().encode("Once upon a time, there was a little", true), maxTokens, 0);
    auto r = e.generate(req);
    EXPECT_TRUE(r) << r.error().message;
    std::vector<int32_t> sequence = req.prompt;
    answerStart = int32_t(sequence.size());
    sequence.insert(sequence.end(), r->tokens.begin(), r->tokens.end());
    return sequence;
}

// Every position's logits by the decode path (Engine::score), [n][vocab].
std::vector<std::vector<float>> decodeLogits(Engine& e, std::span<const int32_t> tokens) {
    std::vector<std::vector<float>> out;
    auto ok = e.score(tokens, [&](int32_t, std::span<const float> l) { out.emplace_back(l.begin(), l.end()); });
    EXPECT_TRUE(ok);
    return out;
}

}  // namespace

TEST(ScoreRows, BatchedLogitsAreTheDecodePathsWithinRounding) {
    auto e = loadTestEngine(kStories);
    int32_t start = 0;
    const std::vector<int32_t> seq = answered(*e, start);
    const auto reference = decodeLogits(*e, seq);
    const size_t vocab = size_t(e->tokenizer().vocabSize());
    std::vector<float> rows;
    const int32_t step = 7;  // odd-sized batches, so rows cross batch edges
    double worst = 0;
    for (int32_t from = 0; from < int32_t(seq.size()); from += step) {
        const int32_t count = std::min<int32_t>(step, int32_t(seq.size()) - from);
        ASSERT_TRUE(e->scoreRows(seq, from, count, rows));
        for (int32_t r = 0; r < count; ++r)
            for (size_t v = 0; v < vocab; ++v) worst = std::max(worst, double(std::fabs(rows[size_t(r) * vocab + v] - reference[size_t(from + r)][v])));
    }
    EXPECT_LT(worst, 1e-3);  // the same sums in another order (matmul tiles against the GEMV)
    // The cache must hold what comes before: rows out of order are refused.
    std::vector<float> ignored;
    ASSERT_TRUE(e->scoreRows(seq, 0, 3, ignored));
    const auto skipped = e->scoreRows(seq, 5, 2, ignored);
    ASSERT_FALSE(skipped);
    EXPECT_NE(skipped.error().message.find("the cache does not hold the tokens before these rows"), std::string::npos);
    EXPECT_FALSE(e->scoreRows(seq, 0, e->maxScoreRows() + 1, ignored));
}

TEST(CompareTeacherForced, AModelAgainstItselfMovesNothing) {
    auto a = loadTestEngine(kStories);
    auto b = loadTestEngine(kStories);
    int32_t start = 0;
    const auto seq = answered(*a, start);
    DivergenceMeter d;
    PerplexityMeter pa, pb;
    int tokens = 0;
    ASSERT_TRUE(compareTeacherForced(*a, *b, seq, start, [&](const TokenComparison& t) {
        EXPECT_EQ(t.index, tokens++);
        EXPECT_EQ(t.id, seq[size_t(t.position)]);
        EXPECT_EQ(t.shift.kl, 0.0);
        EXPECT_FALSE(t.flip());
        EXPECT_EQ(t.shift.dp(), 0.0);
        // Greedy: the answer's token is the top one at every position.
        EXPECT_EQ(t.shift.topReference, t.id);
    }, d, pa, pb));
    EXPECT_EQ(tokens, int(seq.size()) - start);
    EXPECT_EQ(d.top1Agreement(), 1.0);
    EXPECT_EQ(pa.perplexity(), pb.perplexity());
}

// B = stories260K with every matrix in Q8_0: each token's KL, Δp and flip are those computed
// independently from the two models' decode-path logits (Engine::score), within rounding.
TEST(CompareTeacherForced, AQuantizedCopyMovesWhatTheDecodePathSays) {
    const auto pair = loadWithQ8Copy(kStories);
    auto& a = pair->model;
    auto& b = pair->copy;
    int32_t start = 0;
    const auto seq = answered(*a, start, 64);
    const auto la = decodeLogits(*a, seq), lb = decodeLogits(*b, seq);
    DivergenceMeter d, independent;
    PerplexityMeter pa, pb;
    int flips = 0, flipsIndependent = 0;
    ASSERT_TRUE(compareTeacherForced(*a, *b, seq, start, [&](const TokenComparison& t) {
        const DistributionShift s = compareDistributions(la[size_t(t.position - 1)], lb[size_t(t.position - 1)], t.id);
        independent.add(s);
        EXPECT_NEAR(t.shift.kl, s.kl, 1e-4 + 0.01 * s.kl) << t.index;
        EXPECT_NEAR(t.shift.dp(), s.dp(), 1e-4) << t.index;
        flips += t.flip();
        flipsIndependent += !s.sameTop1;
    }, d, pa, pb));
    EXPECT_GT(d.meanKl(), 1e-6);  // Q8_0 does move the distributions
    EXPECT_NEAR(d.meanKl(), independent.meanKl(), 0.01 * independent.meanKl() + 1e-7);
    EXPECT_NEAR(flips, flipsIndependent, 1);  // a near-tie may round either way
    EXPECT_NEAR(d.meanDp(), independent.meanDp(), 1e-5);
}

// The side-by-side detail (CompareDetail): each token's leading candidates hold both models' top
// tokens with the probabilities the decode path gives them, ordered by max(pA, pB); with the
// answer's sampler settings, each model's final probability is its sampler's (top-k 3 here: a
// token outside a model's top 3 has 0 there), and B's record is SamplerChain::describe of B's
// logits at that token.
TEST(CompareTeacherForced, TheDetailIsBothModelsCandidatesAndBsRecord) {
    const auto pair = loadWithQ8Copy(kStories);
    auto& a = pair->model;
    auto& b = pair->copy;
    int32_t start = 0;
    const auto seq = answered(*a, start, 32);
    const auto la = decodeLogits(*a, seq), lb = decodeLogits(*b, seq);
    SamplerParams sampler;
    sampler.temperature = 0.7f;
    sampler.topK = 3;
    sampler.topP = 1.0f;
    sampler.minP = 0.0f;
    auto chain = SamplerChain::create(sampler);
    ASSERT_TRUE(chain);
    DivergenceMeter d;
    PerplexityMeter pa, pb;
    int tokens = 0, withBelow = 0;
    ASSERT_TRUE(compareTeacherForced(*a, *b, seq, start, [&](const TokenComparison& t) {
        ++tokens;
        const auto& ra = la[size_t(t.position - 1)];
        const auto& rb = lb[size_t(t.position - 1)];
        ASSERT_FALSE(t.candidates.empty());
        ASSERT_LE(t.candidates.size(), size_t(kCompareCandidates));
        bool hasTopA = false, hasTopB = false;
        const double zA = logSumExp(ra), zB = logSumExp(rb);
        for (size_t i = 0; i < t.candidates.size(); ++i) {
            const ComparedCandidate& c = t.candidates[i];
            hasTopA |= c.id == t.shift.topReference;
            hasTopB |= c.id == t.shift.topTest;
            EXPECT_NEAR(c.pA, std::exp(double(ra[size_t(c.id)]) - zA), 1e-4) << t.index;
            EXPECT_NEAR(c.pB, std::exp(double(rb[size_t(c.id)]) - zB), 1e-4) << t.index;
            if (i > 0) {
                EXPECT_GE(std::max(t.candidates[i - 1].pA, t.candidates[i - 1].pB), std::max(c.pA, c.pB));
            }
            // Top-k 3: the sampled probability is 0 exactly for a token ranked below 3rd by that model.
            auto rank = [&](const std::vector<float>& row, int32_t id) {
                int32_t r = 1;
                for (size_t v = 0; v < row.size(); ++v) r += row[v] > row[size_t(id)] || (row[v] == row[size_t(id)] && int32_t(v) < id);
                return r;
            };
            EXPECT_EQ(c.finalA > 0, rank(ra, c.id) <= 3) << t.index << " token " << c.id;
            EXPECT_EQ(c.finalB > 0, rank(rb, c.id) <= 3) << t.index << " token " << c.id;
            withBelow += c.finalA == 0;
        }
        EXPECT_TRUE(hasTopA && hasTopB) << t.index;
        ASSERT_TRUE(t.recordB);
        auto expected = chain->describe(rb, std::span(seq).subspan(0, size_t(t.position)), t.id);
        ASSERT_TRUE(expected);
        EXPECT_EQ(t.recordB->id, t.id);
        EXPECT_EQ(t.recordB->rank, expected->rank);
        // The pass's logits are the decode path's within 1e-3 (ScoreRows above); at T = 0.7 that moves
        // a probability by up to ~1e-3.
        EXPECT_NEAR(t.recordB->pFinal, expected->pFinal, 1e-3);
        EXPECT_EQ(t.recordB->survivors, expected->survivors);
        ASSERT_FALSE(t.recordB->top.empty());
        EXPECT_EQ(t.recordB->top[0].id, t.shift.topTest);
    }, d, pa, pb, {}, CompareDetail{kCompareCandidates, sampler}));
    EXPECT_EQ(tokens, int(seq.size()) - start);
    EXPECT_GT(withBelow, 0);  // the table shows tokens top-k removed, marked as such
    // Without the detail (the CLI's statistics): none of it.
    ASSERT_TRUE(compareTeacherForced(*a, *b, seq, start, [&](const TokenComparison& t) {
        EXPECT_TRUE(t.candidates.empty());
        EXPECT_FALSE(t.recordB);
    }, d, pa, pb));
}

TEST(CompareTeacherForced, DifferentVocabulariesAndEmptyAnswersAreRefused) {
    auto a = loadTestEngine(kStories);
    auto other = loadTestEngine(kTinyRandom);
    DivergenceMeter d;
    PerplexityMeter pa, pb;
    const std::vector<int32_t> seq{1, 2, 3};
    const auto vocab = compareTeacherForced(*a, *other, seq, 1, {}, d, pa, pb);
    ASSERT_FALSE(vocab);
    EXPECT_EQ(vocab.error().message, "the two vocabularies differ (512 and 32000 tokens): a token-by-token comparison needs the same vocabulary");
    auto b = loadTestEngine(kStories);
    EXPECT_FALSE(compareTeacherForced(*a, *b, seq, 3, {}, d, pa, pb));  // the answer is empty
    EXPECT_FALSE(compareTeacherForced(*a, *b, seq, 0, {}, d, pa, pb));  // nothing before the first token
}

// The text's bytes carry exactly the surprisal of the tokens that made them: summed, the per-byte
// shares are the tokens' −log2 p (a token straddling the context counts for its bytes in the text).
TEST(CompareOnText, BytesCarryTheirTokensSurprisal) {
    auto e = loadTestEngine(kStories);
    const std::string context = "Once upon a time", text = ", there was a little girl named Lily.";
    auto perByte = surprisalPerByte(*e, context, text);
    ASSERT_TRUE(perByte) << perByte.error().message;
    ASSERT_EQ(perByte->size(), text.size());
    double sum = 0;
    for (double b : *perByte) {
        EXPECT_GE(b, 0.0);
        sum += b;
    }
    // The same from the token surprisals directly (the text starts on a token boundary here).
    const auto ids = e->tokenizer().encode(context + text, true);
    const auto contextIds = e->tokenizer().encode(context, true);
    ASSERT_TRUE(std::equal(contextIds.begin(), contextIds.end(), ids.begin()));
    double expected = 0;
    ASSERT_TRUE(e->score(ids, [&](int32_t pos, std::span<const float> l) {
        if (pos + 1 >= int32_t(contextIds.size()) && pos + 1 < int32_t(ids.size()))
            expected += (logSumExp(l) - l[size_t(ids[size_t(pos + 1)])]) / std::log(2.0);
    }));
    EXPECT_NEAR(sum, expected, 1e-3 * expected);
    // A model against itself: the same bits, word by word; the words spell the text.
    auto c = compareOnText(*e, *e, context, text);
    ASSERT_TRUE(c);
    std::string spelled;
    for (const auto& w : c->words) {
        EXPECT_DOUBLE_EQ(w.bitsA, w.bitsB);
        spelled += text.substr(w.begin, w.end - w.begin);
    }
    EXPECT_EQ(spelled, text);
    EXPECT_NEAR(c->bitsA, sum, 1e-9);
}

// A cancel asked before a batch of rows stops the comparison there, as Cancelled (the app's
// "cancelled", not an error message); a cancel that never fires changes nothing.
TEST(CompareOnText, StopsWhenCancelled) {
    auto e = loadTestEngine(kStories);
    const std::string context = "Once upon a time", text = ", there was a little girl named Lily.";
    int asked = 0;
    auto stopped = compareOnText(*e, *e, context, text, [&] { return ++asked > 1; });  // A's rows run, B's do not
    ASSERT_FALSE(stopped);
    EXPECT_EQ(stopped.error().kind, ErrorKind::Cancelled);
    EXPECT_EQ(asked, 2);
    auto never = compareOnText(*e, *e, context, text, [] { return false; });
    auto plain = compareOnText(*e, *e, context, text);
    ASSERT_TRUE(never && plain);
    EXPECT_EQ(never->bitsA, plain->bitsA);
    EXPECT_EQ(never->words.size(), plain->words.size());
}

// Each token of the answer takes the gap of the words its bytes fall in: a token inside one word
// that word's, a token across two words the larger, the dummy prefix's space nothing; pieces
// that spell another text give nothing.
TEST(CompareOnText, TokensTakeTheirWordsGap) {
    TextComparison c;
    const std::string text = "ab cd ef";  // words "ab", " cd", " ef"
    c.words = {{0, 2, 1.0, 3.0}, {2, 5, 4.0, 4.5}, {5, 8, 2.0, 0.0}};
    const std::vector<std::string> pieces = {" ", "a", "b c", "d", " ef"};  // with a dummy prefix's space
    EXPECT_EQ(tokenGaps(c, pieces, text), (std::vector<float>{0.0f, 2.0f, 2.0f, 0.5f, 2.0f}));
    const std::vector<std::string> plain = {"ab", " cd e", "f"};
    EXPECT_EQ(tokenGaps(c, plain, text), (std::vector<float>{2.0f, 2.0f, 2.0f}));
    EXPECT_TRUE(tokenGaps(c, {"ab", " cd"}, text).empty());
    EXPECT_TRUE(tokenGaps(c, {"xb cd ef"}, text).empty());
}
