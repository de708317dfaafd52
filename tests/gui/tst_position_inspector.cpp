// The Layers and Attention panels' data (PositionInspector) with the real model: the lens's last
// row is the Probabilities panel's distribution for the same token (same ids, same
// probabilities), the attention weights are the engine's own (Engine::inspectPosition run in the
// test on a second engine with the same tokens: equal bit for bit, each row summing to 1), a
// closed panel asks the engine for nothing, a token whose context the cache no longer holds is
// reported as such (no stale figures), and inspecting between decode steps changes no token.
#include <QSignalSpy>
#include <QTest>
#include <cmath>

#include "chat_fixture.h"
#include "gui_test_helpers.h"
#include "settings/sampling_settings.h"
#include "step_gate.h"
#include "visualizer/attention_heat_map.h"
#include "visualizer/position_inspector.h"

using namespace inferscope;
using namespace inferscope::testing_gui;

class TestPositionInspector : public QObject {
    Q_OBJECT

    struct Fixture : ChatFixture {
        PositionInspector view;
        explicit Fixture(bool attention = false) : ChatFixture(20) {
            view.setProperty("lens", !attention);
            view.setProperty("attention", attention);
            view.setEngine(engine.get());
            view.setSteps(inspector.get());
        }
        // Selects a step and waits for the engine's answer about it.
        bool inspect(int row, int step) {
            inspector->select(row, step);
            return QTest::qWaitFor([&] { return view.status() == QLatin1String("ready") && view.shownStep() == step; }, 20000);
        }
    };

    // A second engine given the same tokens: its cache (f16, the app's default) holds what the app's does.
    static std::unique_ptr<Engine> referenceEngine(const std::vector<int32_t>& prompt, int maxTokens) {
        EngineOptions opt;
        opt.modelPath = bundledModel().toStdString();
        opt.kvType = KvType::F16;
        auto engine = Engine::load(opt);
        if (!engine) return nullptr;
        GenerateRequest req;
        req.prompt = prompt;
        req.sampler.temperature = 0.0f;
        req.maxTokens = maxTokens;
        if (!(*engine)->generate(req)) return nullptr;
        return std::move(*engine);
    }

    // A fresh engine's first step captured inside its prefill, as the app's open panel asks.
    static Result<PositionInspection> firstStepCapture(const std::vector<int32_t>& prompt) {
        EngineOptions opt;
        opt.modelPath = bundledModel().toStdString();
        opt.kvType = KvType::F16;  // the app's default
        auto engine = Engine::load(opt);
        if (!engine) return std::unexpected(engine.error());
        struct First : GenerationObserver {
            std::shared_ptr<const PositionInspection> inspection;
            void onStep(const StepRecord& r) override { if (r.step == 0) inspection = r.inspection; }
        } first;
        GenerateRequest req;
        req.prompt = prompt;
        req.sampler.temperature = 0.0f;
        req.maxTokens = 1;
        req.inspect.attentionStep = 0;
        if (auto ok = (*engine)->generate(req, &first); !ok) return std::unexpected(ok.error());
        if (!first.inspection) return std::unexpected(Error{ErrorKind::InvalidArgument, "no capture"});
        return *first.inspection;
    }

private slots:
    void initTestCase() { useTestLocations(); }

    void lastLensRowIsTheProbabilitiesPanelsDistribution() {
        Fixture f;
        f.view.setActive(true);
        QVERIFY(loadAndWait(*f.engine, bundledModel()));
        QVERIFY(f.answer("Once upon a time"));
        const ChatMessage& answer = f.last();
        QCOMPARE(answer.steps.size(), size_t(20));
        // The first step: captured inside the prefill while the panel was open (no request, no
        // re-run); the others: their pass was a decode pass, re-run bit for bit.
        for (int step : {0, 1, 2, 7, 19}) {
            const int asked = f.view.requests();
            QVERIFY2(f.inspect(1, step), qPrintable(f.view.message()));
            QCOMPARE(f.view.requests(), asked + (step == 0 ? 0 : 1));
            QVERIFY(!f.view.rerunAfterPrefill());
            const StepRecord& rec = answer.steps[size_t(step)];
            QCOMPARE(f.view.position(), rec.position - 1);
            QCOMPARE(f.view.chosenToken(), f.inspector->liveTokenText(rec.sample.id));
            LensLayerModel* layers = f.view.layerModel();
            QCOMPARE(layers->rowCount(), f.engine->modelDetails().layers);
            const QVariantList last = layers->data(layers->index(layers->rowCount() - 1), LensLayerModel::CandidatesRole).toList();
            QCOMPARE(last.size(), 5);
            // The norm bars' scale: the largest of the rows' norms (positive: a stream has length).
            double maxNorm = 0;
            for (int l = 0; l < layers->rowCount(); ++l) maxNorm = std::max(maxNorm, layers->data(layers->index(l), LensLayerModel::ResidualNormRole).toDouble());
            QVERIFY(maxNorm > 0);
            QCOMPARE(layers->maxResidualNorm(), maxNorm);
            const QVariantList shown = f.inspector->candidates();  // what the Probabilities panel lists
            QVERIFY(shown.size() >= 5);
            for (int i = 0; i < 5; ++i) {
                const QVariantMap lens = last[i].toMap(), probs = shown[i].toMap();
                QCOMPARE(lens.value("id").toInt(), probs.value("id").toInt());
                QCOMPARE(lens.value("token").toString(), probs.value("token").toString());
                QCOMPARE(lens.value("p").toDouble(), probs.value("pRaw").toDouble());  // exactly: the same float
            }
            // The final choice (greedy: the pick) is top-1 from the settled layer on, and the
            // highlighted rows say so.
            const int settled = f.view.settledLayer(), first = f.view.firstTop1Layer();
            QVERIFY(first >= 0 && first <= settled && settled < layers->rowCount());
            for (int l = settled; l < layers->rowCount(); ++l) QVERIFY(layers->data(layers->index(l), LensLayerModel::TopIsFinalRole).toBool());
            QVERIFY(layers->data(layers->index(settled), LensLayerModel::SettledRole).toBool());
            QVERIFY(layers->data(layers->index(first), LensLayerModel::FirstTop1Role).toBool());
            if (settled > 0) QVERIFY(!layers->data(layers->index(settled - 1), LensLayerModel::TopIsFinalRole).toBool());
        }
    }

    // Opened only after the answer, the panel has no capture of the first step: it runs that pass
    // again over the cache and says the last digits may differ; the ranking is the same.
    void aFirstTokenLookedAtLaterIsARerun() {
        Fixture f;
        QVERIFY(loadAndWait(*f.engine, bundledModel()));
        QVERIFY(f.answer("Once upon a time"));
        f.view.setActive(true);
        QVERIFY(f.inspect(1, 0));
        QCOMPARE(f.view.requests(), 1);
        QVERIFY(f.view.rerunAfterPrefill());
        const QVariantList last = f.view.layerModel()->data(f.view.layerModel()->index(f.view.layerModel()->rowCount() - 1),
                                                            LensLayerModel::CandidatesRole).toList();
        QCOMPARE(last[0].toMap().value("id").toInt(), f.last().steps[0].sample.id);
        // The next answer, with the panel open, is captured: shown with no request.
        QVERIFY(f.answer("The cat"));
        QVERIFY(f.inspect(3, 0));
        QCOMPARE(f.view.requests(), 1);
        QVERIFY(!f.view.rerunAfterPrefill());
    }

    void attentionWeightsAreTheEnginesOwn() {
        Fixture f(true);
        f.view.setActive(true);
        QVERIFY(loadAndWait(*f.engine, bundledModel()));
        QVERIFY(f.answer("Once upon a time"));
        const ChatMessage& answer = f.last();
        std::vector<int32_t> prompt = f.inspector->contextBefore(1);
        auto reference = referenceEngine(prompt, 20);
        QVERIFY(reference);
        for (int step : {0, 5, 19}) {
            QVERIFY(f.inspect(1, step));
            const int position = answer.steps[size_t(step)].position - 1;
            // The first step was captured inside the prefill (the panel was open): so is the
            // reference's; the later ones are re-runs over the cache on both sides.
            auto expected = step == 0 ? firstStepCapture(prompt) : reference->inspectPosition(position, InspectOptions{false, true, 5});
            QVERIFY(expected);
            const AttentionMap& a = expected->attention;
            QCOMPARE(f.view.layerCount(), a.nLayer);
            QCOMPARE(f.view.headCount(), a.nHead);
            QCOMPARE(f.view.kvHeadCount(), a.nHeadKv);
            QCOMPARE(f.view.keyCount(), position + 1);
            for (int l = 0; l < a.nLayer; ++l)
                for (int h = 0; h < a.nHead; ++h) {
                    const QList<qreal> row = f.view.attentionRow(l, h);
                    QCOMPARE(row.size(), a.nKeys);
                    double sum = 0;
                    for (int j = 0; j < a.nKeys; ++j) {
                        QCOMPARE(row[j], double(a.row(l, h)[size_t(j)]));
                        sum += row[j];
                    }
                    QVERIFY2(std::abs(sum - 1.0) < 1e-5, qPrintable(QString::number(sum, 'g', 9)));
                    QCOMPARE(f.view.kvHeadOf(h), a.kvHeadOf(h));
                }
            // What the heat-map paints: the engine's weights; the overview their mean over heads.
            AttentionHeatMap map;
            map.setInspector(&f.view);
            for (int l = 0; l < a.nLayer; ++l) {
                map.setLayerIndex(l);
                QCOMPARE(map.rows(), a.nHead);
                QCOMPARE(map.columns(), a.nKeys);
                for (int h = 0; h < a.nHead; ++h)
                    for (int j = 0; j < a.nKeys; ++j) QCOMPARE(map.valueAt(h, j), double(a.row(l, h)[size_t(j)]));
            }
            map.setLayerIndex(-1);
            QCOMPARE(map.rows(), a.nLayer);
            for (int l = 0; l < a.nLayer; ++l) {
                double rowSum = 0;
                for (int j = 0; j < a.nKeys; ++j) {
                    double mean = 0;
                    for (int h = 0; h < a.nHead; ++h) mean += a.row(l, h)[size_t(j)];
                    QCOMPARE(map.valueAt(l, j), mean / a.nHead);
                    rowSum += map.valueAt(l, j);
                }
                QVERIFY(std::abs(rowSum - 1.0) < 1e-5);
            }
            QCOMPARE(f.view.tokenAt(position), f.inspector->liveTokenText(step > 0 ? answer.steps[size_t(step) - 1].sample.id : prompt.back()));
        }
        // Hover over a cell: the token at that position and the engine's weight; off the cells: nothing.
        {
            AttentionHeatMap map;
            map.setInspector(&f.view);
            map.setLayerIndex(0);
            map.setWidth(64 + 10.0 * f.view.keyCount());  // 10 px per position
            map.setHeight(map.implicitHeight());
            const int position = answer.steps[3].position, head = 1;
            QHoverEvent move(QEvent::HoverMove, QPointF(64 + 10.0 * position + 5, head * AttentionHeatMap::kRowHeight + 7), QPointF(),
                             QPointF());
            QCoreApplication::sendEvent(&map, &move);
            const QString hover = map.hoverText();
            QVERIFY2(hover.startsWith(QStringLiteral("position %1 “\u2068%2\u2069”: weight %3 — head 1 (reads KV head %4), layer 0")
                                          .arg(position).arg(f.inspector->liveTokenText(answer.steps[3].sample.id))
                                          .arg(map.valueAt(head, position), 0, 'f', 4).arg(f.view.kvHeadOf(head))),
                     qPrintable(hover));
            QVERIFY(hover.contains(QStringLiteral("Click to look inside this token.")));
            QHoverEvent off(QEvent::HoverMove, QPointF(10, 7), QPointF(), QPointF());
            QCoreApplication::sendEvent(&map, &off);
            QCOMPARE(map.hoverText(), QString());
        }
        // Selecting a cached key position selects the token there, when it is a generated one.
        QVERIFY(f.view.selectPosition(answer.steps[3].position));
        QCOMPARE(f.inspector->step(), 3);
        QVERIFY(!f.view.selectPosition(1));  // a prompt token: nothing to select
    }

    void aClosedPanelAsksNothing() {
        Fixture f;
        QVERIFY(loadAndWait(*f.engine, bundledModel()));
        QVERIFY(f.answer("Once upon a time"));
        f.inspector->select(1, 4);
        f.inspector->select(1, 6);
        QCOMPARE(f.view.requests(), 0);
        QCOMPARE(f.view.status(), QStringLiteral("none"));
        f.view.setActive(true);  // the tab is shown
        QCOMPARE(f.view.requests(), 1);
        QTRY_COMPARE(f.view.status(), QStringLiteral("ready"));
        QCOMPARE(f.view.shownStep(), 6);
    }

    void aTokenNoLongerCachedIsSaidSo() {
        Fixture f;
        f.view.setActive(true);
        QVERIFY(loadAndWait(*f.engine, bundledModel()));
        QVERIFY(f.answer("Once upon a time"));
        const qint64 first = f.chat->conversationId();
        QVERIFY(f.inspect(1, 3));
        f.chat->newConversation();
        QVERIFY(f.answer("A little dog"));  // the cache now holds this conversation
        QVERIFY(f.chat->openConversation(first));
        f.inspector->select(1, 3);
        QTRY_COMPARE(f.view.status(), QStringLiteral("notCached"));
        QVERIFY(!f.view.hasResult());
        QCOMPARE(f.view.layerModel()->rowCount(), 0);
        QVERIFY(f.view.message().contains(QStringLiteral("no longer in the KV cache")));
    }

    // A click while the answer streams is served between two decode steps; the answer is the one
    // a run without the panel gives, token for token and probability for probability.
    void inspectingBetweenStepsChangesNoToken() {
        Fixture f;
        f.view.setActive(true);
        QVERIFY(loadAndWait(*f.engine, bundledModel()));
        StepGate gate(*f.engine, 5);
        QSignalSpy done(f.chat.get(), &ChatController::answerFinished);
        QVERIFY(f.chat->send("Once upon a time"));
        QVERIFY(gate.waitHeld());
        f.inspector->select(1, 2);  // posted while the engine is held inside the generation
        QCOMPARE(f.view.status(), QStringLiteral("waiting"));
        gate.release();
        QVERIFY(QTest::qWaitFor([&] { return f.view.status() == QLatin1String("ready"); }, 20000));
        QTRY_VERIFY_WITH_TIMEOUT(!done.isEmpty(), 20000);
        QCOMPARE(f.view.shownStep(), 2);
        const ChatMessage& answer = f.last();
        auto reference = referenceEngine(f.inspector->contextBefore(1), 20);
        QVERIFY(reference);
        // The reference engine's generated steps.
        struct Steps : GenerationObserver {
            std::vector<StepRecord> steps;
            void onStep(const StepRecord& r) override { steps.push_back(r); }
        } observer;
        GenerateRequest req;
        req.prompt = f.inspector->contextBefore(1);
        req.sampler.temperature = 0.0f;
        req.maxTokens = 20;
        reference->reset();
        QVERIFY(reference->generate(req, &observer));
        QCOMPARE(answer.steps.size(), observer.steps.size());
        for (size_t s = 0; s < answer.steps.size(); ++s) {
            QCOMPARE(answer.steps[s].sample.id, observer.steps[s].sample.id);
            QCOMPARE(answer.steps[s].sample.pRaw, observer.steps[s].sample.pRaw);
            QCOMPARE(answer.steps[s].sample.entropyBits, observer.steps[s].sample.entropyBits);
        }
    }
};

QTEST_MAIN(TestPositionInspector)
#include "tst_position_inspector.moc"
