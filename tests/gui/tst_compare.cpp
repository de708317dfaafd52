// "Compare with…" (issue 30): an answer read by a second model beside the one that wrote it
// (CompareModel on the worker). The same file gives KL 0 exactly and the same top token
// everywhere; another quantization gives exactly what core's compareTeacherForced gives on the
// same tokens; a second model with another vocabulary reads the answer's text instead, word by word,
// exactly as core's compareOnText on the conversation's plain text; a file that is no model is
// refused with a message, the conversation's model kept; a result goes with the answer it describes.
#include <QFile>
#include <QFileInfo>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QUrl>

#include "chat/token_heatmap.h"
#include "chat_fixture.h"
#include "engine/compare.h"
#include "engine/compare_text.h"
#include "tokenizer/tokenizer.h"
#include "kv_cache/kv_cache.h"
#include "visualizer/compare_model.h"
#include "visualizer/position_inspector.h"

using namespace inferscope;
using namespace inferscope::testing_gui;

namespace {

const QString kWide = QStringLiteral(INFERSCOPE_SHARED_DIR "/models/quant/stories260K-wide.gguf");
const QString kWideQ4 = QStringLiteral(INFERSCOPE_SHARED_DIR "/models/quant/stories260K-wide-Q4_0.gguf");
const QString kQwen2 = QStringLiteral(INFERSCOPE_SHARED_DIR "/models/arch/qwen2-tiny.gguf");

// The tokens the answer's generation read (its prompt) and then wrote: what B reads.
struct Sequence {
    std::vector<int32_t> tokens;
    int32_t answerStart = 0;
};

// Sends a prompt and keeps the tokens of its answer's sequence.
bool answerWithSequence(ChatFixture& app, Sequence& out) {
    QSignalSpy prompts(app.engine.get(), &EngineController::promptPrepared);
    if (!app.answer(QStringLiteral("Once upon a time"))) return false;
    if (prompts.size() != 1) return false;
    for (const QList<int>& chunk : prompts.first().at(1).value<QList<QList<int>>>()) out.tokens.insert(out.tokens.end(), chunk.begin(), chunk.end());
    out.answerStart = int32_t(out.tokens.size());
    for (const StepRecord& s : app.last().steps) out.tokens.push_back(s.sample.id);
    return true;
}

// Runs a comparison and waits for its end: the status ("" when it produced a result).
QString runAndWait(CompareModel& compare, const QString& modelB) {
    QSignalSpy state(&compare, &CompareModel::stateChanged);
    if (!compare.run(modelB)) return compare.status().isEmpty() ? QStringLiteral("did not start") : compare.status();
    if (!QTest::qWaitFor([&] { return !compare.running(); }, 30000)) return QStringLiteral("no answer");
    return compare.status();
}

// A file loaded in the test as the app loads its model (its context and KV type).
Result<std::unique_ptr<Engine>> loadLikeTheApp(const ChatFixture& app, const QString& path) {
    EngineOptions o;
    o.modelPath = path.toStdString();
    o.contextLength = app.engine->contextLength();
    o.kvType = parseKvType(app.engine->kvType().toStdString()).value();
    return Engine::load(o);
}

// For each position from `first` on, the logit `engine` gives the token there (teacher-forced).
std::vector<float> logitsOfTokens(Engine& engine, const std::vector<int32_t>& seq, int32_t first) {
    std::vector<float> out, rows;
    const int32_t n = int32_t(seq.size());
    for (int32_t from = 0; from < n - 1; from += engine.maxScoreRows()) {
        const int32_t count = std::min(engine.maxScoreRows(), n - 1 - from);
        if (!engine.scoreRows(seq, from, count, rows)) return {};
        const size_t vocab = rows.size() / size_t(count);
        for (int32_t r = 0; r < count; ++r)
            if (from + r + 1 >= first) out.push_back(rows[size_t(r) * vocab + size_t(seq[size_t(from + r + 1)])]);
    }
    return out;
}

}  // namespace

class TestCompare : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { useTestLocations(); }

    // The same file as B: every distribution is the same, bit for bit.
    void theSameFileDiffersInNothing() {
        ChatFixture app(32);
        QVERIFY(loadAndWait(*app.engine, bundledModel()));
        Sequence seq;
        QVERIFY(answerWithSequence(app, seq));
        const int row = app.chat->messages()->count() - 1;
        const QString answerText = app.last().text;
        const size_t answerTokens = app.last().steps.size();
        QVERIFY(answerTokens > 5);

        CompareModel compare;
        compare.setChat(app.chat.get());
        QVERIFY(compare.canRun());
        QCOMPARE(compare.targetRow(), row);
        const QString status = runAndWait(compare, bundledModel());
        QVERIFY2(status.isEmpty(), qPrintable(status));
        QVERIFY(compare.hasResult());
        const CompareSummary s = compare.summary();
        QCOMPARE(s.row, row);
        QCOMPARE(s.version, 1);
        QCOMPARE(s.modelB, QStringLiteral("stories260K.gguf"));
        QCOMPARE(s.tokens, int(answerTokens));
        QCOMPARE(s.promptTokens, seq.answerStart);
        QCOMPARE(s.meanKl, 0.0);
        QCOMPARE(s.maxKl, 0.0);
        QCOMPARE(s.sameTop1, int(answerTokens));
        QCOMPARE(s.top1Agreement, 1.0);
        QCOMPARE(s.firstFlip, -1);
        QCOMPARE(s.meanDp, 0.0);
        QCOMPARE(s.perplexityA, s.perplexityB);
        QVERIFY(s.perplexityA > 1.0);

        // The tint: every token carries KL 0 and no flip; the conversation and its model unchanged.
        const ChatMessage& answer = app.chat->messages()->at(row);
        QCOMPARE(answer.compareKl.size(), answerTokens);
        for (size_t i = 0; i < answerTokens; ++i) {
            QCOMPARE(answer.compareKl[i], 0.0f);
            QCOMPARE(answer.compareFlip[i], uint8_t(0));
        }
        QCOMPARE(app.chat->messages()->heatMode(), QStringLiteral("compare"));
        QCOMPARE(answer.text, answerText);
        QCOMPARE(app.engine->modelPath(), bundledModel());
        QCOMPARE(app.engine->state(), EngineController::State::Ready);

        // The conversation goes on after it.
        QVERIFY(app.answer(QStringLiteral("The end")));
    }

    // Another quantization: the figures are exactly what compareTeacherForced gives on the answer's
    // tokens through two engines loaded as the worker loads them.
    void anotherQuantizationAsCoreComputesIt() {
        if (!QFileInfo::exists(kWide) || !QFileInfo::exists(kWideQ4))
            QSKIP("../shared/models/quant/stories260K-wide{,-Q4_0}.gguf not found: skipped");
        ChatFixture app(48);
        QVERIFY(loadAndWait(*app.engine, kWide));
        Sequence seq;
        QVERIFY(answerWithSequence(app, seq));
        const int row = app.chat->messages()->count() - 1;

        CompareModel compare;
        compare.setChat(app.chat.get());
        const QString status = runAndWait(compare, QUrl::fromLocalFile(kWideQ4).toString());  // as the file dialog gives it
        QVERIFY2(status.isEmpty(), qPrintable(status));
        const CompareSummary s = compare.summary();
        QCOMPARE(s.modelB, QStringLiteral("stories260K-wide-Q4_0.gguf"));

        auto a = loadLikeTheApp(app, kWide), b = loadLikeTheApp(app, kWideQ4);
        QVERIFY(a && b);
        DivergenceMeter divergence;
        PerplexityMeter pa, pb;
        std::vector<TokenComparison> perToken;
        QVERIFY(compareTeacherForced(**a, **b, seq.tokens, seq.answerStart, [&](const TokenComparison& t) { perToken.push_back(t); },
                                     divergence, pa, pb));
        QCOMPARE(s.tokens, int(divergence.count()));
        QCOMPARE(s.meanKl, divergence.meanKl());
        QCOMPARE(s.meanKlError, divergence.meanKlError());
        QCOMPARE(s.medianKl, divergence.klQuantile(0.5));
        QCOMPARE(s.p99Kl, divergence.klQuantile(0.99));
        QCOMPARE(s.maxKl, divergence.maxKl());
        QCOMPARE(s.sameTop1, int(divergence.sameTop1()));
        QCOMPARE(s.top1Agreement, divergence.top1Agreement());
        QCOMPARE(s.top1AgreementError, divergence.top1AgreementError());
        QCOMPARE(s.meanDp, divergence.meanDp());
        QCOMPARE(s.rmsDp, divergence.rmsDp());
        QCOMPARE(s.dpP1, divergence.dpQuantile(0.01));
        QCOMPARE(s.dpMedian, divergence.dpQuantile(0.5));
        QCOMPARE(s.dpP99, divergence.dpQuantile(0.99));
        QCOMPARE(s.perplexityA, pa.perplexity());
        QCOMPARE(s.perplexityAError, pa.perplexityError());
        QCOMPARE(s.perplexityB, pb.perplexity());
        QCOMPARE(s.perplexityBError, pb.perplexityError());
        QVERIFY(s.meanKl > 0);
        qInfo("Q4_0 against F32 on %d tokens: mean KL %.5f ± %.5f, same top %d (%.1f%%), first flip %d, PPL %.4f / %.4f, %.1f ms",
              s.tokens, s.meanKl, s.meanKlError, s.sameTop1, 100 * s.top1Agreement, s.firstFlip, s.perplexityA, s.perplexityB, s.compareMs);

        // Per token, on the answer: KL and flips as core gave them; the first flip named.
        const ChatMessage& answer = app.chat->messages()->at(row);
        QCOMPARE(answer.compareKl.size(), perToken.size());
        int firstFlip = -1;
        for (const TokenComparison& t : perToken) {
            QCOMPARE(answer.compareKl[size_t(t.index)], float(t.shift.kl));
            QCOMPARE(bool(answer.compareFlip[size_t(t.index)]), t.flip());
            if (t.flip() && firstFlip < 0) firstFlip = t.index;
        }
        QCOMPARE(s.firstFlip, firstFlip);

        // The selected token under both models (the Probabilities panel's side-by-side view): the
        // candidates and B's record through the answer's own sampler settings, as core gives them.
        QVERIFY(answer.stats.sampler);
        std::vector<TokenComparison> detailed;
        QVERIFY(compareTeacherForced(**a, **b, seq.tokens, seq.answerStart, [&](const TokenComparison& t) { detailed.push_back(t); },
                                     divergence, pa, pb, {}, CompareDetail{kCompareCandidates, answer.stats.sampler}));
        QCOMPARE(detailed.size(), perToken.size());
        for (const TokenComparison& t : detailed) {
            const QVariantMap shown = compare.tokenAt(row, t.index);
            QCOMPARE(shown.value("id").toInt(), t.id);
            QCOMPARE(shown.value("kl").toDouble(), t.shift.kl);
            QCOMPARE(shown.value("flip").toBool(), t.flip());
            QCOMPARE(shown.value("dp").toDouble(), t.shift.dp());
            const QVariantList candidates = shown.value("candidates").toList();
            QCOMPARE(candidates.size(), qsizetype(t.candidates.size()));
            for (size_t i = 0; i < t.candidates.size(); ++i) {
                const QVariantMap c = candidates[qsizetype(i)].toMap();
                QCOMPARE(c.value("id").toInt(), t.candidates[i].id);
                QCOMPARE(float(c.value("pA").toDouble()), t.candidates[i].pA);
                QCOMPARE(float(c.value("pB").toDouble()), t.candidates[i].pB);
                QCOMPARE(float(c.value("finalA").toDouble()), t.candidates[i].finalA);
                QCOMPARE(float(c.value("finalB").toDouble()), t.candidates[i].finalB);
                QVERIFY(t.candidates[i].finalA >= 0);  // the settings were known
            }
            QVERIFY(t.recordB);
            const QVariantMap recordB = shown.value("b").toMap();
            QCOMPARE(recordB.value("rank").toInt(), t.recordB->rank);
            QCOMPARE(recordB.value("candidates").toList().size(), qsizetype(t.recordB->top.size()));
            QCOMPARE(recordB.value("candidates").toList()[0].toMap().value("id").toInt(), t.recordB->top[0].id);
            QCOMPARE(recordB.value("survivors").toList().size(), qsizetype(kSamplerStageCount));
        }
        QVERIFY(compare.tokenAt(row, int(perToken.size())).isEmpty());  // past the answer
        QVERIFY(compare.tokenAt(row - 1, 0).isEmpty());                  // another message

        // Branching at the first flip: a new version whose token there is B's choice; the result,
        // which described the other version, is gone with it.
        if (firstFlip >= 0) {
            const int32_t picked = s.firstFlipTokenB;
            QVERIFY(app.answer([&] { return compare.branchAtFirstFlip(); }));
            const ChatMessage& branched = app.chat->messages()->at(row);
            QCOMPARE(int(branched.variants.size()), 2);
            QCOMPARE(branched.steps.at(size_t(firstFlip)).sample.id, picked);
            QVERIFY(!compare.hasResult());
            QVERIFY(branched.compareKl.empty());
        }
    }

    // "B goes on": the branch at the first flip written by B, loaded for the comparison beside the
    // conversation's model. Every new token's logit is B's (teacher-forced through B, not A), the
    // new version keeps B as its origin, and A stays loaded with its status-bar figures.
    void bGoesOnFromTheFirstFlip() {
        if (!QFileInfo::exists(kWide) || !QFileInfo::exists(kWideQ4))
            QSKIP("../shared/models/quant/stories260K-wide{,-Q4_0}.gguf not found: skipped");
        ChatFixture app(48);
        QVERIFY(loadAndWait(*app.engine, kWide));
        QVERIFY(app.answer(QStringLiteral("Once upon a time")));
        const int row = app.chat->messages()->count() - 1;
        CompareModel compare;
        compare.setChat(app.chat.get());
        QCOMPARE(runAndWait(compare, kWideQ4), QString());
        const CompareSummary s = compare.summary();
        QVERIFY2(s.firstFlip >= 0, "the Q4_0 copy agrees with F32 on every token of this answer: nothing to branch at");
        const double decodeBefore = app.engine->decodeTokensPerSecond();

        QSignalSpy prompts(app.engine.get(), &EngineController::promptPrepared);
        QVERIFY(app.answer([&] { return compare.continueWithB(); }));
        const ChatMessage& branched = app.chat->messages()->at(row);
        QCOMPARE(int(branched.variants.size()), 2);
        QCOMPARE(branched.steps.at(size_t(s.firstFlip)).sample.id, s.firstFlipTokenB);
        QCOMPARE(QString::fromStdString(branched.origin.modelFile), kWideQ4);
        QCOMPARE(branched.origin.backend, AnswerBackend::Local);
        QVERIFY(branched.origin.cost.weightBytesPerToken > 0);
        QCOMPARE(ChatController::originLabel(branched.origin), QStringLiteral("%1 (%2)").arg(QString::fromStdString(branched.origin.modelName), kWideQ4));
        QCOMPARE(branched.stats.model, QStringLiteral("%1 (stories260K-wide-Q4_0.gguf)").arg(QString::fromStdString(branched.origin.modelName)));
        QCOMPARE(app.engine->modelPath(), kWide);
        QCOMPARE(app.engine->decodeTokensPerSecond(), decodeBefore);
        QVERIFY(branched.steps.size() > size_t(s.firstFlip) + 1);

        // The sequence the branch ran: its prompt (the conversation, the kept tokens with B's pick),
        // then the new tokens.
        QCOMPARE(prompts.size(), 1);
        std::vector<int32_t> seq;
        for (const QList<int>& chunk : prompts.first().at(1).value<QList<QList<int>>>()) seq.insert(seq.end(), chunk.begin(), chunk.end());
        const int32_t first = int32_t(seq.size());
        std::vector<float> written;
        for (size_t i = size_t(s.firstFlip) + 1; i < branched.steps.size(); ++i) {
            const StepRecord& step = branched.steps[i];
            if (step.endOfGeneration) break;
            seq.push_back(step.sample.id);
            written.push_back(step.sample.logit);
        }
        auto a = loadLikeTheApp(app, kWide), b = loadLikeTheApp(app, kWideQ4);
        QVERIFY(a && b);
        const std::vector<float> byB = logitsOfTokens(**b, seq, first), byA = logitsOfTokens(**a, seq, first);
        QCOMPARE(byB.size(), written.size());
        // A decode step (one row) and a teacher-forced batch run other kernels and round
        // differently: within 2e-2 of B (0.007 seen); A's differ by ten times that somewhere (2.0
        // seen).
        float farthestFromB = 0, farthestFromA = 0;
        for (size_t i = 0; i < written.size(); ++i) {
            farthestFromB = std::max(farthestFromB, std::abs(written[i] - byB[i]));
            farthestFromA = std::max(farthestFromA, std::abs(written[i] - byA[i]));
        }
        qInfo("B wrote %zu tokens after the flip at %d; their logits are within %.4f of B's, up to %.3f from A's", written.size(), s.firstFlip,
              farthestFromB, farthestFromA);
        QVERIFY(farthestFromB < 2e-2f);
        QVERIFY2(farthestFromA > 2e-1f, "A gives nearly the same logits: the test cannot tell who wrote the tokens");

        // A goes on answering the next turn; B is still there for another comparison.
        QVERIFY(app.answer(QStringLiteral("The end")));
        QCOMPARE(QString::fromStdString(app.last().origin.modelFile), kWide);
        QCOMPARE(app.last().stats.model, app.engine->modelName());

        // The Layers panel does not run A's pass for a token B chose; it does for A's own.
        PositionInspector layers;
        layers.setProperty("lens", true);
        layers.setEngine(app.engine.get());
        layers.setSteps(app.inspector.get());
        layers.setActive(true);
        app.inspector->select(row, s.firstFlip + 2);
        QTRY_COMPARE(layers.status(), QStringLiteral("notCached"));
        QCOMPARE(layers.message(), QStringLiteral("This answer was written by %1, not the loaded model: load it to look inside its passes.")
                                       .arg(ChatController::originLabel(app.chat->messages()->at(row).origin)));
        app.inspector->select(app.chat->messages()->count() - 1, 1);
        QTRY_COMPARE_WITH_TIMEOUT(layers.status(), QStringLiteral("ready"), 20000);
    }

    // Another vocabulary: the answer's text read by both, word by word, as core computes it on the
    // conversation's plain text (the prompt and a blank line) and A's tokens decoded; no tint, no
    // token figures; the conversation's model stays.
    void anotherVocabularyIsComparedOnTheText() {
        if (!QFileInfo::exists(kQwen2)) QSKIP("../shared/models/arch/qwen2-tiny.gguf not found: skipped");
        ChatFixture app(24);
        QVERIFY(loadAndWait(*app.engine, bundledModel()));
        Sequence seq;
        QVERIFY(answerWithSequence(app, seq));
        const int row = app.chat->messages()->count() - 1;
        CompareModel compare;
        compare.setChat(app.chat.get());
        const QString status = runAndWait(compare, kQwen2);
        QVERIFY2(status.isEmpty(), qPrintable(status));
        QVERIFY(compare.hasResult());
        const CompareSummary s = compare.summary();
        QVERIFY(s.onText);
        QCOMPARE(s.row, row);
        QCOMPARE(s.modelB, QStringLiteral("qwen2-tiny.gguf"));
        QVERIFY2(!s.why.isEmpty(), "the card says how the vocabularies differ");

        auto a = loadLikeTheApp(app, bundledModel()), b = loadLikeTheApp(app, kQwen2);
        QVERIFY(a && b);
        QString context = app.chat->systemPrompt().trimmed().isEmpty() ? QString() : app.chat->systemPrompt() + QStringLiteral("\n\n");
        context += QStringLiteral("Once upon a time\n\n");
        const std::vector<int32_t> answer(seq.tokens.begin() + seq.answerStart, seq.tokens.end());
        const std::string text = (*a)->tokenizer().decode(answer);
        auto expected = compareOnText(**a, **b, context.toStdString(), text);
        QVERIFY2(expected, expected ? "" : expected.error().message.c_str());
        QCOMPARE(s.bytes, int(text.size()));
        QCOMPARE(s.words, int(expected->words.size()));
        QCOMPARE(s.tokensA, expected->tokensA);
        QCOMPARE(s.tokensB, expected->tokensB);
        QCOMPARE(s.bitsPerByteA, expected->bitsPerByteA());
        QCOMPARE(s.bitsPerByteB, expected->bitsPerByteB());
        QVERIFY(s.bitsPerByteA != s.bitsPerByteB);  // two models, two readings
        // The words where the two differ most, most first.
        QCOMPARE(s.gaps.size(), std::min<qsizetype>(CompareSummary::kShownGaps, qsizetype(expected->words.size())));
        double largest = 0;
        const WordSurprisal* first = nullptr;
        for (const WordSurprisal& w : expected->words)
            if (std::abs(w.bitsB - w.bitsA) > largest) {
                largest = std::abs(w.bitsB - w.bitsA);
                first = &w;
            }
        QVERIFY(first);
        const QVariantMap top = s.gaps.first().toMap();
        QCOMPARE(top.value("text").toString(), QString::fromStdString(text.substr(first->begin, first->end - first->begin)).trimmed());
        QCOMPARE(top.value("bitsA").toDouble(), first->bitsA);
        QCOMPARE(top.value("bitsB").toDouble(), first->bitsB);
        for (qsizetype i = 1; i < s.gaps.size(); ++i) {
            const QVariantMap g = s.gaps[i].toMap(), before = s.gaps[i - 1].toMap();
            QVERIFY(std::abs(g.value("bitsB").toDouble() - g.value("bitsA").toDouble()) <=
                    std::abs(before.value("bitsB").toDouble() - before.value("bitsA").toDouble()));
        }
        // Each token is tinted by its words' gap, on the text's scale (8 bits), not the KL's.
        const ChatMessage& m = app.last();
        std::vector<std::string> pieces;
        for (const StepRecord& step : m.steps) pieces.push_back(step.piece);
        const std::vector<float> gaps = tokenGaps(*expected, pieces, text);
        QCOMPARE(gaps.size(), m.steps.size());
        QCOMPARE(m.compareKl, gaps);
        QVERIFY(m.compareOnText && m.compareFlip.empty());
        QCOMPARE(*std::max_element(gaps.begin(), gaps.end()), float(largest));
        QCOMPARE(app.chat->messages()->heatMode(), QStringLiteral("compare"));
        const HeatText* heat = app.chat->messages()->heatText(row);
        QVERIFY(heat);
        const bool dark = app.chat->messages()->darkTheme();
        QVERIFY(heat->spans == buildHeatText(m.steps, HeatMode::Compare, m.trimLeadingSpace, dark, {}, 0, gaps, {}, kCompareTextTintBits).spans);
        QCOMPARE(app.engine->modelPath(), bundledModel());
        QVERIFY(app.answer(QStringLiteral("The end")));
    }

    // A file that is no model: said plainly; the conversation's model stays.
    void whatCannotBeComparedIsSaid() {
        ChatFixture app(16);
        QVERIFY(loadAndWait(*app.engine, bundledModel()));
        CompareModel compare;
        compare.setChat(app.chat.get());
        QVERIFY(!compare.canRun());
        QVERIFY(!compare.run(bundledModel()));
        QCOMPARE(compare.status(), QStringLiteral("There is no finished answer to compare: send a message first."));
        QVERIFY(app.answer(QStringLiteral("Once upon a time")));
        QVERIFY(compare.canRun());

        QTemporaryDir dir;
        const QString hostile = dir.filePath(QStringLiteral("not-a-model.gguf"));
        QFile f(hostile);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("GGUF\x03\0\0\0 this is not a model", 28);
        f.close();
        QString status = runAndWait(compare, hostile);
        QVERIFY2(status.startsWith(QStringLiteral("The second model could not be loaded: ")), qPrintable(status));
        QVERIFY(!compare.hasResult());
        QCOMPARE(app.engine->modelPath(), bundledModel());
        QCOMPARE(app.engine->state(), EngineController::State::Ready);
        QVERIFY(app.answer(QStringLiteral("The end")));
    }

    // Tint "compare": a token's KL over 0.5 nats is the full tint (as p = 0 in probability mode),
    // KL 0 none; a flip has its own hue whatever its KL; a step past the compared ones: no tint.
    void theCompareTintFollowsTheKlAndMarksFlips() {
        auto step = [](const char* piece, float p) {
            StepRecord r;
            r.piece = piece;
            r.sample.pRaw = p;
            return r;
        };
        const QColor full = buildHeatText({step("x", 0.0f)}, HeatMode::Probability, false, false).spans.value(0).tint;
        QVERIFY(full.isValid());
        const std::vector<StepRecord> steps{step("a", 1.0f), step("b", 1.0f), step("c", 1.0f), step("d", 0.0f)};
        const HeatText heat = buildHeatText(steps, HeatMode::Compare, false, false, {}, 0, {0.0f, 0.5f, 0.0f}, {0, 0, 1});
        QCOMPARE(heat.spans, (QList<HeatSpan>{{QStringLiteral("a"), {}}, {QStringLiteral("b"), full}, {QStringLiteral("c"), flipTint(false)},
                                              {QStringLiteral("d"), {}}}));
        QVERIFY(flipTint(false) != full && flipTint(true) != flipTint(false));
        // On the text (word gaps in bits): 8 bits is the full tint, 4 half of it (as 0.25 nats is on the KL's scale).
        const HeatText half = buildHeatText(steps, HeatMode::Compare, false, false, {}, 0, {0.0f, 0.25f, 0.5f});
        const HeatText onText = buildHeatText(steps, HeatMode::Compare, false, false, {}, 0, {0.0f, 4.0f, 8.0f}, {}, kCompareTextTintBits);
        QCOMPARE(onText.spans, (QList<HeatSpan>{{QStringLiteral("a"), {}}, {QStringLiteral("b"), half.spans.value(1).tint}, {QStringLiteral("c"), full},
                                                {QStringLiteral("d"), {}}}));
        QVERIFY(half.spans.value(1).tint.isValid() && half.spans.value(1).tint != full);
        QCOMPARE(heatModeFromName(QStringLiteral("compare")), HeatMode::Compare);
        QCOMPARE(heatModeName(HeatMode::Compare), QStringLiteral("compare"));
    }

    // The result belongs to its answer: a new version of it, or another conversation, clears it.
    void theResultGoesWithItsAnswer() {
        ChatFixture app(16);
        QVERIFY(loadAndWait(*app.engine, bundledModel()));
        QVERIFY(app.answer(QStringLiteral("Once upon a time")));
        CompareModel compare;
        compare.setChat(app.chat.get());
        QCOMPARE(runAndWait(compare, bundledModel()), QString());
        QVERIFY(compare.hasResult());
        // A later turn leaves the compared answer as it was.
        QVERIFY(app.answer(QStringLiteral("Then")));
        QVERIFY(compare.hasResult());
        QCOMPARE(compare.summary().row, 1);
        QVERIFY(!app.chat->messages()->at(1).compareKl.empty());
        app.chat->newConversation();
        QTRY_VERIFY(!compare.hasResult());
        QCOMPARE(compare.summary().valid, false);
    }
};

QTEST_MAIN(TestCompare)
#include "tst_compare.moc"
