// Side by side (issue 30): one prompt to the loaded model and to a second GGUF at once, on the
// worker (EngineWorker::generatePair). Each column's answer is exactly what its model alone writes
// for the same prompt (greedy, on the same thread count); each answer is then read by the other
// model exactly as core's compareTeacherForced reads it; the same file twice differs in nothing;
// a file that is no model is refused with its message, the loaded model kept; Stop stops both.
#include <QFile>
#include <QFileInfo>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QUrl>

#include <sys/resource.h>

#include "chat_fixture.h"
#include "common/memory_budget.h"
#include "engine/compare.h"
#include "engine/engine_types.h"
#include "engine/kv_jobs.h"
#include "visualizer/side_by_side.h"

using namespace inferscope;
using namespace inferscope::testing_gui;

namespace {

const QString kWide = QStringLiteral(INFERSCOPE_SHARED_DIR "/models/quant/stories260K-wide.gguf");
const QString kWideQ4 = QStringLiteral(INFERSCOPE_SHARED_DIR "/models/quant/stories260K-wide-Q4_0.gguf");
const QString kPrompt = QStringLiteral("Once upon a time");

// Runs both and waits for the end (answers and comparisons): the status ("" when all went well).
QString runAndWait(SideBySide& pair, const QString& modelB) {
    QSignalSpy finished(&pair, &SideBySide::finished);
    if (!pair.run(kPrompt, modelB)) return pair.status().isEmpty() ? QStringLiteral("did not start") : pair.status();
    if (!finished.wait(60000)) return QStringLiteral("no end");
    return pair.status();
}

// A file loaded in the test as the worker loads it for a pair: the app's context and KV type, on
// the pair's thread count.
std::unique_ptr<Engine> loadAsThePair(const ChatFixture& app, const QString& path, int threads) {
    EngineOptions o;
    o.modelPath = path.toStdString();
    o.contextLength = app.engine->contextLength();
    o.kvType = parseKvType(app.engine->kvType().toStdString()).value();
    o.threads = threads;
    auto e = Engine::load(o);
    return e ? std::move(*e) : nullptr;
}

struct Alone {
    std::vector<int32_t> prompt;
    GenerationSummary summary;
};

// What `engine` writes alone for the pair's prompt, with the pair's sampler and length.
Alone answerAlone(Engine& engine, const GenerationJob& job) {
    Alone out;
    GenerateRequest req;
    req.prompt = tokenizeChunks(engine.tokenizer(), job.chunks);
    out.prompt = req.prompt;
    req.sampler = job.sampler;
    req.maxTokens = job.maxTokens;
    auto r = engine.generate(req);
    if (r) out.summary = *r;
    return out;
}

}  // namespace

class TestSideBySide : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { useTestLocations(); }

    // Two quantizations of one model: each column is its model's own answer, at once; each answer
    // read by the other model as core reads it.
    void twoQuantizationsAnswerAtOnceAsEachAlone() {
        if (!QFileInfo::exists(kWide) || !QFileInfo::exists(kWideQ4))
            QSKIP("../shared/models/quant/stories260K-wide{,-Q4_0}.gguf not found: skipped");
        ChatFixture app(40);
        QVERIFY(loadAndWait(*app.engine, kWide));
        SideBySide pair;
        pair.setChat(app.chat.get());
        QVERIFY(pair.canRun());
        const QString status = runAndWait(pair, QUrl::fromLocalFile(kWideQ4).toString());  // as the file dialog gives it
        QVERIFY2(status.isEmpty(), qPrintable(status));
        const QVariantMap a = pair.columnA(), b = pair.columnB();
        const int threads = a.value("threads").toInt();
        QVERIFY(threads >= 1);
        QCOMPARE(b.value("threads").toInt(), threads);

        const GenerationJob job = app.chat->singleTurnJob(kPrompt);
        auto engineA = loadAsThePair(app, kWide, threads), engineB = loadAsThePair(app, kWideQ4, threads);
        QVERIFY(engineA && engineB);
        const Alone aloneA = answerAlone(*engineA, job), aloneB = answerAlone(*engineB, job);
        QVERIFY(aloneA.summary.nGenerated > 5);
        QCOMPARE(a.value("text").toString(), QString::fromStdString(aloneA.summary.text));
        QCOMPARE(b.value("text").toString(), QString::fromStdString(aloneB.summary.text));
        QCOMPARE(a.value("tokens").toInt(), aloneA.summary.nGenerated);
        QCOMPARE(b.value("tokens").toInt(), aloneB.summary.nGenerated);
        QCOMPARE(a.value("finish").toString(), QStringLiteral("length limit"));
        QCOMPARE(a.value("name").toString(), QStringLiteral("%1 (stories260K-wide.gguf)").arg(QString::fromStdString(engineA->info().name)));
        QVERIFY(b.value("name").toString().endsWith(QStringLiteral("(stories260K-wide-Q4_0.gguf)")));

        // Each column's own figures: the engine's, and B's memory as B holds it.
        for (const QVariantMap& c : {a, b}) {
            QVERIFY(c.value("firstTokenMs").toDouble() > 0);
            QVERIFY(c.value("prefillMs").toDouble() > 0);
            QCOMPARE(c.value("prefillTokens").toInt(), int(aloneA.prompt.size()));
            QVERIFY(c.value("decodeTps").toDouble() > 0);
            QVERIFY(c.value("kvBytes").toDouble() > 0);
        }
        QCOMPARE(uint64_t(a.value("weightBytes").toDouble()), engineA->model().weightBytesResident());
        QCOMPARE(uint64_t(b.value("weightBytes").toDouble()), engineB->model().weightBytesResident());

        // Each answer under the other model, as compareTeacherForced gives it.
        for (int side = 0; side < 2; ++side) {
            const Alone& alone = side == 0 ? aloneA : aloneB;
            std::vector<int32_t> seq = alone.prompt;
            seq.insert(seq.end(), alone.summary.tokens.begin(), alone.summary.tokens.end());
            DivergenceMeter divergence;
            PerplexityMeter pa, pb;
            QVERIFY(compareTeacherForced(*engineA, *engineB, seq, int32_t(alone.prompt.size()), [](const TokenComparison&) {}, divergence, pa, pb));
            const QVariantMap cmp = (side == 0 ? a : b).value("compared").toMap();
            QVERIFY(cmp.value("valid").toBool());
            QCOMPARE(cmp.value("onText").toBool(), false);
            QCOMPARE(cmp.value("meanKl").toDouble(), divergence.meanKl());
            QCOMPARE(cmp.value("maxKl").toDouble(), divergence.maxKl());
            QCOMPARE(cmp.value("top1Agreement").toDouble(), divergence.top1Agreement());
            QCOMPARE(cmp.value("perplexityOwn").toDouble(), side == 0 ? pa.perplexity() : pb.perplexity());
            QCOMPARE(cmp.value("perplexityOther").toDouble(), side == 0 ? pb.perplexity() : pa.perplexity());
            QVERIFY(divergence.meanKl() > 0);
        }
        // Tinted where they part, and the loaded model still the conversation's.
        QVERIFY(a.value("html").toString().contains(QStringLiteral("background-color")));
        QCOMPARE(app.engine->modelPath(), kWide);
        QCOMPARE(app.engine->state(), EngineController::State::Ready);
        QVERIFY(app.answer(kPrompt));
    }

    // The same file twice: the same answer, and KL 0 on both.
    void theSameFileTwiceDiffersInNothing() {
        ChatFixture app(24);
        QVERIFY(loadAndWait(*app.engine, bundledModel()));
        SideBySide pair;
        pair.setChat(app.chat.get());
        const QString status = runAndWait(pair, bundledModel());
        QVERIFY2(status.isEmpty(), qPrintable(status));
        const QVariantMap a = pair.columnA(), b = pair.columnB();
        QVERIFY(a.value("tokens").toInt() > 5);
        QCOMPARE(b.value("text").toString(), a.value("text").toString());
        for (const QVariantMap& c : {a, b}) {
            const QVariantMap cmp = c.value("compared").toMap();
            QVERIFY2(cmp.value("valid").toBool(), qPrintable(cmp.value("error").toString()));
            QCOMPARE(cmp.value("meanKl").toDouble(), 0.0);
            QCOMPARE(cmp.value("top1Agreement").toDouble(), 1.0);
            QCOMPARE(cmp.value("perplexityOwn").toDouble(), cmp.value("perplexityOther").toDouble());
            QVERIFY(!c.value("html").toString().contains(QStringLiteral("background-color")));  // KL 0: no tint
        }
    }

    // A file that is no model: both columns say why, the loaded model stays and answers.
    void aFileThatIsNoModelIsRefused() {
        ChatFixture app(8);
        QVERIFY(loadAndWait(*app.engine, bundledModel()));
        QTemporaryDir dir;
        const QString junk = dir.filePath(QStringLiteral("junk.gguf"));
        QFile f(junk);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("not a model at all");
        f.close();
        SideBySide pair;
        pair.setChat(app.chat.get());
        const QString status = runAndWait(pair, junk);
        QVERIFY2(status.startsWith(QStringLiteral("The second model could not be loaded: ")), qPrintable(status));
        QCOMPARE(pair.columnB().value("error").toString(), status);
        QCOMPARE(pair.columnA().value("tokens").toInt(), 0);
        QVERIFY(!pair.running());
        QCOMPARE(app.engine->modelPath(), bundledModel());
        QTRY_COMPARE(app.engine->state(), EngineController::State::Ready);
        QVERIFY(app.answer(kPrompt));
    }

    // The second model's load is checked against what is left with the first one loaded: with the
    // process's data limit a little above what it uses now, B does not fit and the pair says so
    // with the figures; the loaded model stays and answers.
    void whenBothCannotFitItSaysSo() {
#ifdef __SANITIZE_ADDRESS__
        QSKIP("AddressSanitizer's own mappings count against the data limit: skipped in that build");
#endif
        if (!QFileInfo::exists(kWideQ4)) QSKIP("../shared/models/quant/stories260K-wide-Q4_0.gguf not found: skipped");
        ChatFixture app(8);
        QVERIFY(loadAndWait(*app.engine, bundledModel()));
        SideBySide pair;
        pair.setChat(app.chat.get());
        rlimit before{};
        QCOMPARE(getrlimit(RLIMIT_DATA, &before), 0);
        rlimit tight = before;
        tight.rlim_cur = rlim_t(readMemoryFigures().dataUsed + (uint64_t(48) << 20));  // below the loader's 64 MiB margin
        if (before.rlim_cur != RLIM_INFINITY && before.rlim_cur < tight.rlim_cur) QSKIP("the data limit is already tighter: skipped");
        QCOMPARE(setrlimit(RLIMIT_DATA, &tight), 0);
        const QString status = runAndWait(pair, kWideQ4);
        QCOMPARE(setrlimit(RLIMIT_DATA, &before), 0);
        qInfo("%s", qPrintable(status));
        QVERIFY2(status.startsWith(QStringLiteral("The two models do not fit in memory together: stories260K-wide does not fit in memory with a context of ")) &&
                     status.contains(QStringLiteral("the data-segment limit (RLIMIT_DATA)")),
                 qPrintable(status));
        QCOMPARE(pair.columnB().value("error").toString(), status);
        QCOMPARE(app.engine->modelPath(), bundledModel());
        QTRY_COMPARE(app.engine->state(), EngineController::State::Ready);
        QVERIFY(app.answer(kPrompt));
    }

    // Stop ends both; the model is ready again.
    void stopEndsBoth() {
        ChatFixture app(200);
        QVERIFY(loadAndWait(*app.engine, bundledModel()));
        SideBySide pair;
        pair.setChat(app.chat.get());
        QSignalSpy finished(&pair, &SideBySide::finished);
        QVERIFY(pair.run(kPrompt, bundledModel()));
        QVERIFY(pair.running());
        QVERIFY(!pair.canRun());
        pair.cancel();
        QVERIFY(finished.wait(30000));
        QVERIFY(!pair.running());
        for (const QVariantMap& c : {pair.columnA(), pair.columnB()})
            QVERIFY2(c.value("finish").toString() == QStringLiteral("stopped") || !c.value("error").toString().isEmpty(),
                     qPrintable(c.value("finish").toString() + c.value("error").toString()));
        QVERIFY(!pair.columnA().value("compared").toMap().value("valid").toBool());
        QTRY_COMPARE(app.engine->state(), EngineController::State::Ready);
        QVERIFY(pair.canRun());
    }
};

QTEST_MAIN(TestSideBySide)
#include "tst_side_by_side.moc"
