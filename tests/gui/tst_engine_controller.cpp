// EngineController and EngineWorker with the real bundled model: loading with progress, a failed
// load keeping the previous model, streaming in batches, stop, cache reuse after an edit,
// errors as signals, loading while generating, and a GUI event loop that stays responsive; the
// ModelDetails the Model panel shows.
#include <QElapsedTimer>
#include <QFileInfo>
#include <QQmlComponent>
#include <QQmlContext>
#include <QQmlEngine>
#include <QtQml/QQmlExtensionPlugin>
#include <memory>
#include <QThread>
#include <atomic>
#include <QSignalSpy>
#include <QTest>
#include <QTimer>

#include "engine/engine_controller.h"
#include "fake_tool_homes.h"
#include "gui_test_helpers.h"

#include "app/qml_modules.h"  // Q_IMPORT_QML_PLUGIN of each module

using namespace inferscope;
using namespace inferscope::testing_gui;

class TestEngineController : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QCoreApplication::setOrganizationName(QStringLiteral("InferscopeTests"));
    }

    // The model menu: two servers offering the same long model, or two downloads of one file
    // name in different folders, read differently; names are cut in the middle, keeping the
    // quantization and the host; a label that needs no more detail gets none.
    void recentMenuLabelsTellEntriesApart() {
        const QString longModel = QStringLiteral("Meta-Llama-3.1-8B-Instruct-abliterated-v2-Q4_K_M.gguf");
        const QStringList entries = {
            QStringLiteral("http://192.168.1.20:8080/v1#") + longModel,
            QStringLiteral("http://192.168.1.21:8080/v1#") + longModel,
            QStringLiteral("/home/ana/.lmstudio/models/bartowski/Qwen2.5-0.5B-Instruct-Q8_0.gguf"),
            QStringLiteral("/home/ana/Downloads/Qwen2.5-0.5B-Instruct-Q8_0.gguf"),
            QStringLiteral("/opt/a/models/tiny.gguf"),
            QStringLiteral("/opt/b/models/tiny.gguf"),
            QStringLiteral("http://127.0.0.1:8080/v1#stories260K"),
            QStringLiteral("http://127.0.0.1:8080/api/v1#stories260K"),
            QStringLiteral("/m/stories260K.gguf"),
        };
        const QStringList expected = {
            QStringLiteral("Meta-Llama-3.1-8B-Instruct-\u2026d-v2-Q4_K_M.gguf @ 192.168.1.20:8080"),
            QStringLiteral("Meta-Llama-3.1-8B-Instruct-\u2026d-v2-Q4_K_M.gguf @ 192.168.1.21:8080"),
            QStringLiteral("Qwen2.5-0.5B-Instruct-Q8_0.gguf \u2014 bartowski"),
            QStringLiteral("Qwen2.5-0.5B-Instruct-Q8_0.gguf \u2014 Downloads"),
            QStringLiteral("tiny.gguf \u2014 /opt/a/models"),
            QStringLiteral("tiny.gguf \u2014 /opt/b/models"),
            QStringLiteral("stories260K @ http://127.0.0.1:8080/v1"),
            QStringLiteral("stories260K @ http://127.0.0.1:8080/api/v1"),
            QStringLiteral("stories260K.gguf"),
        };
        const QStringList labels = EngineController::entryLabels(entries);
        QCOMPARE(labels, expected);
        // The model button and the loading message keep the whole name.
        QCOMPARE(EngineController::entryLabel(entries[0]), longModel + QStringLiteral(" @ 192.168.1.20:8080"));
        // Two long names that cut alike are shown whole.
        const QStringList twins = {QStringLiteral("/m/Meta-Llama-3.1-8B-Instruct-variant-one-of-two-Q4_K_M.gguf"),
                                   QStringLiteral("/m/Meta-Llama-3.1-8B-Instruct-variant-two-of-two-Q4_K_M.gguf")};
        QCOMPARE(EngineController::entryLabels(twins),
                 (QStringList{QStringLiteral("Meta-Llama-3.1-8B-Instruct-variant-one-of-two-Q4_K_M.gguf"),
                              QStringLiteral("Meta-Llama-3.1-8B-Instruct-variant-two-of-two-Q4_K_M.gguf")}));
    }

    // A file opened from Ollama's store is a blob named by its hash: the menu says the model's name.
    void anOllamaBlobIsLabelledByItsModelName() {
        FakeHome home;
        QCOMPARE(EngineController::entryLabels({home.ollamaBlob}), QStringList{QStringLiteral("stories:260k (Ollama)")});
        QCOMPARE(EngineController::entryLabel(home.ollamaBlob), QStringLiteral("stories:260k (Ollama)"));
        // A blob no manifest names keeps its file name (cut in its middle).
        const QString orphan = QFileInfo(home.ollamaBlob).absolutePath() + QStringLiteral("/sha256-") + QString(64, QLatin1Char('0'));
        QCOMPARE(EngineController::entryLabel(orphan), QFileInfo(orphan).fileName());
    }

    void loadsTheBundledModelWithProgress() {
        EngineController engine(nullptr);
        QCOMPARE(engine.state(), EngineController::State::NoModel);
        QCOMPARE(engine.abilities(), BackendAbilities{});  // nothing to do without a model
        QSignalSpy progress(&engine, &EngineController::loadProgressChanged);
        QSignalSpy states(&engine, &EngineController::stateChanged);
        QVERIFY(loadAndWait(engine, bundledModel()));
        QCOMPARE(engine.state(), EngineController::State::Ready);
        QCOMPARE(engine.modelName(), QStringLiteral("stories260K"));
        QCOMPARE(engine.contextLength(), 2048);
        QCOMPARE(engine.kvBytesReserved(), 640.0 * 2048);  // 2 × 5 layers × 4 KV heads × 8 × 2 bytes per token (f16, the default)
        QCOMPARE(engine.weightBytes(), 292800.0 * 4);  // every F32 tensor, used in place from the mapping
        QVERIFY(progress.count() >= 2);
        QCOMPARE(engine.loadProgress(), 1.0);
        QVERIFY(states.count() >= 2);  // Loading, then Ready
        QCOMPARE(engine.modelDetails().kvHeads, 4);
        // This machine's engine: a tokenizer, a cache to show, insides to look at, experiments to time.
        const BackendAbilities can = engine.abilities();
        QVERIFY(can.tokenizes && can.showsCache && can.looksInside && can.runsExperiments);
        QVERIFY(!can.ownTemplate && !can.overNetwork);
        QCOMPARE(engine.serverUrl(), QString());
    }

    // What the Model panel shows, from stories260K's header and tensors: 5 blocks of 64-wide
    // embeddings, 8 query and 4 KV heads of 8, a 172-wide feed-forward, 512 tokens; 292,800 F32
    // weights in 48 tensors (token_embd and output 64 × 512, per block q 64 × 64, k and v 64 × 32,
    // o 64 × 64, gate and up 64 × 172, down 172 × 64, two norms of 64; the output norm).
    void modelDetailsDescribeTheLoadedFile() {
        EngineController engine(nullptr);
        QVERIFY(!engine.modelDetails().valid);
        QCOMPARE(engine.modelDetails(), ModelDetails{});
        QVERIFY(loadAndWait(engine, bundledModel()));
        const ModelDetails& d = engine.modelDetails();
        QVERIFY(d.valid);
        QCOMPARE(d.name, QStringLiteral("stories260K"));
        QCOMPARE(d.architecture, QStringLiteral("llama"));
        QCOMPARE(d.parameters, 292800.0);
        QCOMPARE(d.layers, 5);
        QCOMPARE(d.embedding, 64);
        QCOMPARE(d.heads, 8);
        QCOMPARE(d.kvHeads, 4);
        QCOMPARE(d.headDim, 8);
        QCOMPARE(d.feedForward, 172);
        QCOMPARE(d.vocabSize, 512);
        QCOMPARE(d.trainedContext, 2048);
        QCOMPARE(d.ropeFreqBase, 10000.0);
        QCOMPARE(d.tensorTypeCounts(), (QVariantMap{{QStringLiteral("F32"), 48}}));
        QCOMPARE(d.bitsPerWeight, 32.0);
        QCOMPARE(d.formatNote, QString());  // a float file: no quantized block to explain
        QCOMPARE(d.fileBytes, double(QFileInfo(bundledModel()).size()));
        // A decode pass reads every matrix and norm once and one 256-byte row of the embedding.
        QCOMPARE(d.weightBytesPerToken, 292800.0 * 4 - 512 * 64 * 4 + 64 * 4);
        // Multiply-adds of the matrices: per block 2 × 64 × 64 + 2 × 64 × 32 + 3 × 64 × 172, and the output 64 × 512.
        QCOMPARE(d.matmulMacsPerToken, 5.0 * (2 * 64 * 64 + 2 * 64 * 32 + 3 * 64 * 172) + 64 * 512);
        QCOMPARE(d.kvBytesPerToken, 2.0 * 5 * 4 * 8 * 2);  // K and V × layers × KV heads × head dim × 2 bytes (f16, the default)
        QCOMPARE(d.kvBytesPerElement, 2);
        QVERIFY(d.loadMs > 0);
        QCOMPARE(d.tokenizer, QStringLiteral("sentencepiece"));
        QCOMPARE(d.preTokenizer, QString());

        // QML reads the same value by its property names (the Model panel's bindings).
        QQmlEngine qml;
        qml.rootContext()->setContextProperty(QStringLiteral("engine"), &engine);
        QQmlComponent component(&qml);
        component.setData("import QtQml\nimport Inferscope.Engine\nQtObject {\n"
                          "  readonly property var d: engine.loaded.details\n"
                          "  property string shown: d.valid + ': ' + d.heads + ' query, ' + d.kvHeads + ' KV, ' + d.tensorTypes.F32\n"
                          "                         + ' F32 tensors, ' + d.tokenizer + ', ' + d.weightBytesPerToken + ' B per token'\n}\n",
                          QUrl());
        std::unique_ptr<QObject> o(component.create());
        QVERIFY2(o, qPrintable(component.errorString()));
        QCOMPARE(o->property("shown").toString(), QStringLiteral("true: 8 query, 4 KV, 48 F32 tensors, sentencepiece, 1040384 B per token"));
    }

    void aFailedLoadKeepsThePreviousModel() {
        EngineController engine(nullptr);
        QVERIFY(loadAndWait(engine, bundledModel()));
        QSignalSpy failed(&engine, &EngineController::loadFailed);
        engine.loadModel(QStringLiteral("/nonexistent/model.gguf"));
        QCOMPARE(engine.state(), EngineController::State::Loading);
        QVERIFY(failed.wait(5000));
        QCOMPARE(failed.first().first().toString(), QStringLiteral("cannot open /nonexistent/model.gguf: No such file or directory"));
        QCOMPARE(engine.errorMessage(), failed.first().first().toString());
        QCOMPARE(engine.state(), EngineController::State::Ready);
        QCOMPARE(engine.modelName(), QStringLiteral("stories260K"));
        // and it still generates
        QSignalSpy finished(&engine, &EngineController::generationFinished);
        QVERIFY(engine.startGeneration(textJob("Once upon a time", 5)) != 0);
        QVERIFY(finished.wait(10000));
    }

    void aPromptStreamsInBatches() {
        EngineController engine(nullptr);
        QVERIFY(loadAndWait(engine, bundledModel()));
        QSignalSpy prepared(&engine, &EngineController::promptPrepared);
        QSignalSpy prefill(&engine, &EngineController::prefillFinished);
        QSignalSpy steps(&engine, &EngineController::stepsArrived);
        QSignalSpy finished(&engine, &EngineController::generationFinished);
        QList<EngineController::State> states;
        connect(&engine, &EngineController::stateChanged, this, [&] { states << engine.state(); });
        GenerationHandle* handle = engine.startGeneration(textJob("Once upon a time", 40));
        QVERIFY(handle);
        const quint64 job = handle->id();
        // The job's own handle hears the same events, nothing else's.
        QSignalSpy handleSteps(handle, &GenerationHandle::stepsArrived);
        QSignalSpy handleFinished(handle, &GenerationHandle::finished);
        QSignalSpy handleGone(handle, &QObject::destroyed);
        QVERIFY(finished.wait(10000));
        QCOMPARE(prepared.count(), 1);
        const auto chunks = prepared.first().at(1).value<QList<QList<int>>>();
        QCOMPARE(chunks.size(), 1);
        QCOMPARE(chunks.first(), (QList<int>{1, 403, 407, 261, 378}));
        QCOMPARE(prefill.count(), 1);
        QCOMPARE(prefill.first().at(1).value<PrefillStats>().nComputed, 5);
        // Batched: fewer signals than tokens, all 40 steps delivered in order.
        QVERIFY(steps.count() >= 1);
        std::vector<int32_t> ids;
        for (const auto& args : steps) {
            QCOMPARE(args.first().toULongLong(), job);
            for (const auto& s : args.at(1).value<StepBatch>().steps) ids.push_back(s.sample.id);
        }
        const auto summary = finished.first().at(1).value<GenerationSummary>();
        QCOMPARE(ids.size(), size_t(40));
        QCOMPARE(ids, summary.tokens);
        QCOMPARE(handleSteps.count(), steps.count());
        QCOMPARE(handleFinished.count(), 1);
        QCOMPARE(handleFinished.first().at(0).value<GenerationSummary>().tokens, summary.tokens);
        QTRY_COMPARE(handleGone.count(), 1);  // deleted once it finished
        // llama.cpp's greedy continuation of "Once upon a time" starts ", there was a little girl".
        QCOMPARE(QString::fromStdString(summary.text).left(25), QStringLiteral(", there was a little girl"));
        QCOMPARE(states, (QList<EngineController::State>{EngineController::State::Prefilling, EngineController::State::Decoding,
                                                         EngineController::State::Ready}));
        QCOMPARE(engine.contextUsed(), 5 + 39);
        QVERIFY(engine.decodeTokensPerSecond() > 0);
        QVERIFY(engine.prefillTokensPerSecond() > 0);
    }

    void stopCancelsPromptly() {
        EngineController engine(nullptr);
        QVERIFY(loadAndWait(engine, bundledModel()));
        QSignalSpy steps(&engine, &EngineController::stepsArrived);
        QSignalSpy finished(&engine, &EngineController::generationFinished);
        auto job = textJob("Once upon a time", 1900, 1.0f);  // sampled: never ends by itself soon
        job.sampler.seed = 1;
        QVERIFY(engine.startGeneration(job) != 0);
        QVERIFY(steps.wait(10000));
        engine.stop();
        QCOMPARE(engine.state(), EngineController::State::Stopping);
        QVERIFY(finished.wait(5000));
        const auto summary = finished.first().at(1).value<GenerationSummary>();
        if (summary.reason == FinishReason::EndOfGeneration) QSKIP("the story ended before the stop arrived");
        QCOMPARE(summary.reason, FinishReason::Cancelled);
        QVERIFY2(summary.nGenerated < 1900, "the stop was not honoured");
        QCOMPARE(engine.state(), EngineController::State::Ready);
    }

    void anEditReusesTheCachedPrefix() {
        EngineController engine(nullptr);
        QVERIFY(loadAndWait(engine, bundledModel()));
        QSignalSpy prefill(&engine, &EngineController::prefillFinished);
        QSignalSpy finished(&engine, &EngineController::generationFinished);
        QVERIFY(engine.startGeneration(textJob("Once upon a time", 8)) != 0);
        QVERIFY(finished.wait(10000));
        // "Once upon a dog": the first three tokens (BOS, Once, upon) are unchanged.
        QVERIFY(engine.startGeneration(textJob("Once upon a dog", 8)) != 0);
        QVERIFY(finished.wait(10000));
        const auto second = prefill.last().at(1).value<PrefillStats>();
        QCOMPARE(second.nReused, 4);  // <s> Once upon a
        QCOMPARE(second.nComputed, second.nPrompt - 4);
    }

    void errorsSurfaceAsSignals() {
        EngineController engine(nullptr);
        QVERIFY(loadAndWait(engine, bundledModel(), 8));
        QCOMPARE(engine.contextLength(), 8);
        QSignalSpy failed(&engine, &EngineController::generationFailed);
        QVERIFY(engine.startGeneration(textJob("Once upon a time there was a girl named Lily", 4)) != 0);
        QVERIFY(failed.wait(5000));
        QVERIFY2(failed.first().at(1).toString().startsWith("the prompt is "), qPrintable(failed.first().at(1).toString()));
        QVERIFY(failed.first().at(1).toString().contains("but the context holds 8"));
        QCOMPARE(engine.errorMessage(), failed.first().at(1).toString());
        QCOMPARE(engine.state(), EngineController::State::Ready);
        auto bad = textJob("Once", 4);
        bad.sampler.topP = 1.5f;
        QVERIFY(engine.startGeneration(bad) != 0);
        QVERIFY(failed.wait(5000));
        QCOMPARE(failed.last().at(1).toString(), QStringLiteral("top-p must be in (0, 1], got 1.5"));
    }

    void loadingWhileGeneratingCancelsFirst() {
        EngineController engine(nullptr);
        QVERIFY(loadAndWait(engine, bundledModel()));
        QSignalSpy steps(&engine, &EngineController::stepsArrived);
        QSignalSpy finished(&engine, &EngineController::generationFinished);
        QSignalSpy loaded(&engine, &EngineController::modelChanged);
        auto job = textJob("Once upon a time", 1900, 1.0f);
        QVERIFY(engine.startGeneration(job) != 0);
        QVERIFY(steps.wait(10000));
        engine.loadModel(QStringLiteral(INFERSCOPE_TEST_DATA_DIR "/llama-2-tiny-random.gguf"));
        QVERIFY(loaded.wait(10000));
        QCOMPARE(finished.count(), 1);  // the generation ended (cancelled) before the new model came
        QCOMPARE(engine.modelDetails().vocabSize, 32000);
        QCOMPARE(engine.modelDetails().tokenizer, QString("sentencepiece"));
        QCOMPARE(engine.modelDetails().preTokenizer, QString());
        QCOMPARE(engine.state(), EngineController::State::Ready);
    }

    void theGuiThreadStaysResponsiveWhileDecoding() {
        // Nothing heavy runs on the GUI thread: every decode step runs on the worker's thread, and
        // a 5 ms timer on the GUI thread keeps firing during a long generation. Its worst lateness
        // is printed (a figure for a person, not a pass mark: the machine may be loaded).
        EngineController engine(nullptr);
        QVERIFY(loadAndWait(engine, bundledModel()));
        QThread* const guiThread = QThread::currentThread();
        std::atomic<int> stepsOnGuiThread{0}, stepsSeen{0};
        engine.setStepHookForTesting([&](int, const std::function<bool()>&) {
            ++stepsSeen;
            if (QThread::currentThread() == guiThread) ++stepsOnGuiThread;
        });
        QSignalSpy finished(&engine, &EngineController::generationFinished);
        auto job = textJob("Once upon a time", 1500, 1.0f);
        job.sampler.seed = 3;
        QElapsedTimer clock;
        qint64 last = 0, worst = 0;
        int ticks = 0;
        QTimer timer;
        timer.setInterval(5);
        connect(&timer, &QTimer::timeout, this, [&] {
            const qint64 now = clock.elapsed();
            if (ticks++ > 0) worst = std::max(worst, now - last);
            last = now;
        });
        clock.start();
        timer.start();
        QVERIFY(engine.startGeneration(job) != 0);
        QVERIFY(finished.wait(60000));
        timer.stop();
        qInfo("event loop: %d ticks over %lld ms of generation, worst gap %lld ms", ticks, clock.elapsed(), worst);
        engine.setStepHookForTesting({});
        QVERIFY(ticks > 5);
        QVERIFY(stepsSeen > 0);
        QCOMPARE(stepsOnGuiThread.load(), 0);
    }
};

QTEST_GUILESS_MAIN(TestEngineController)
#include "tst_engine_controller.moc"
