// The KV-cache type as the app sets and shows it (Settings → KV cache, the KV panel) and "What
// q8_0 costs": a saved setting, applied to the loaded model through the worker (the cache
// re-created, a type the head dim refuses refused with the reason and the old cache kept), the
// panel's figures the new allocation (expected bytes worked out from the block format here), the
// sliding-window layers of gemma3-tiny, and the KL figures equal to core's two-engine scoring.
#include <QQmlComponent>
#include <QQmlEngine>
#include <QSettings>
#include <QSignalSpy>
#include <QTest>

#include "chat/token_heatmap.h"
#include "chat_fixture.h"
#include "engine/perplexity.h"
#include "kv_cache/kv_cache.h"
#include "visualizer/kv/kv_cache_grid.h"
#include "visualizer/kv/kv_cache_view.h"
#include "visualizer/kv/kv_cost_model.h"

using namespace inferscope;
using namespace inferscope::testing_gui;

namespace {

const QString kGemma3 = QStringLiteral(INFERSCOPE_SHARED_DIR "/models/arch/gemma3-tiny.gguf");

const KvVariantModel::Row* rowNamed(const KvVariantModel& model, const QString& name) {
    for (const auto& r : model.rows())
        if (r.name == name) return &r;
    return nullptr;
}

// Sets the type in Settings and waits for the engine's answer: "" when applied, else the refusal.
QString chooseKvType(ChatFixture& app, const QString& type) {
    QSignalSpy applied(app.engine.get(), &EngineController::kvTypeApplied);
    QSignalSpy refused(app.engine.get(), &EngineController::kvTypeRefused);
    app.settings->setKvType(type);
    if (!QTest::qWaitFor([&] { return !applied.isEmpty() || !refused.isEmpty(); }, 10000)) return QStringLiteral("no answer");
    return refused.isEmpty() ? QString() : refused.first().first().toString();
}

}  // namespace

class TestKvType : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { useTestLocations(); }
    void init() { QSettings().remove(QStringLiteral("engine/kvType")); }

    void theSettingIsSavedAndReadBack() {
        {
            AppSettings settings(nullptr);
            settings.setPersistent(true);
            QCOMPARE(settings.kvType(), QStringLiteral("f16"));  // the default
            settings.setKvType(QStringLiteral("q8_0"));
            settings.setKvType(QStringLiteral("q5_0"));  // not a cache type: ignored
            QCOMPARE(settings.kvType(), QStringLiteral("q8_0"));
        }
        QCOMPARE(AppSettings(nullptr).kvType(), QStringLiteral("q8_0"));
        QSettings().setValue(QStringLiteral("engine/kvType"), QStringLiteral("int8"));
        QCOMPARE(AppSettings(nullptr).kvType(), QStringLiteral("f16"));
    }

    // Settings → KV cache lists what QML reads from AppSettings.kvTypeChoices: core's types in
    // core's order, by the names the settings file keeps and with the labels the window shows.
    void theBoxListsCoresTypesWithTheWindowsLabels() {
        AppSettings settings(nullptr);
        AppSettings::setInstance(&settings);
        QQmlEngine qml;
        QQmlComponent component(&qml);
        component.setData("import QtQml\nimport Inferscope.Base\nQtObject {\n"
                          "  readonly property var names: AppSettings.kvTypeChoices.map((c) => c.name)\n"
                          "  readonly property var labels: AppSettings.kvTypeChoices.map((c) => c.label)\n}\n",
                          QUrl());
        std::unique_ptr<QObject> o(component.create());
        AppSettings::setInstance(nullptr);
        QVERIFY2(o, qPrintable(component.errorString()));
        const QStringList names = o->property("names").toStringList();
        QCOMPARE(names, (QStringList{"f32", "f16", "q8_0", "q4_0"}));
        QCOMPARE(o->property("labels").toStringList(), (QStringList{"FP32", "FP16", "Q8_0", "Q4_0"}));
        QCOMPARE(size_t(names.size()), allKvTypes().size());
        for (qsizetype i = 0; i < names.size(); ++i) {
            QCOMPARE(names[i], QString::fromLatin1(kvTypeName(allKvTypes()[size_t(i)])));
            settings.setKvType(names[i]);  // every name listed is one the setting takes
            QCOMPARE(settings.kvType(), names[i]);
            QCOMPARE(settings.kvTypeValue(), allKvTypes()[size_t(i)]);
        }
    }

    // stories260K (5 layers, 4 KV heads, head dim 8): the default F16 cache is 2 × 5 × 4 × 8 × 2 =
    // 640 bytes per token; F32 doubles it, the panel and the status bar's figure follow, and the
    // next answer computes its whole prompt again.
    void f32AppliesToTheLoadedModel() {
        ChatFixture app(6);
        QVERIFY(loadAndWait(*app.engine, bundledModel()));
        QVERIFY(app.answer(QStringLiteral("Once upon a time")));
        KvCacheView view;
        view.setEngine(app.engine.get());
        QCOMPARE(view.bytesPerToken(), 640.0);
        QCOMPARE(view.elementType(), QStringLiteral("FP16"));

        QCOMPARE(chooseKvType(app, QStringLiteral("f32")), QString());
        QCOMPARE(app.engine->kvType(), QStringLiteral("f32"));
        QCOMPARE(app.engine->kvBytesReserved(), 1280.0 * 2048);  // the status bar's memory figure
        QCOMPARE(app.engine->kvBytesUsed(), 0.0);                // the conversation's cache is recomputed
        QCOMPARE(view.bytesPerToken(), 1280.0);
        QCOMPARE(view.bytesReserved(), 1280.0 * 2048);
        QCOMPARE(view.bytesReservedPerLayer(), 1280.0 * 2048 / 5);
        QCOMPARE(view.elementType(), QStringLiteral("FP32"));
        QCOMPARE(view.elementSize(), QStringLiteral("4 B"));
        QVERIFY(rowNamed(*view.elementVariants(), QStringLiteral("FP32"))->loaded);
        QVERIFY(!rowNamed(*view.elementVariants(), QStringLiteral("FP16"))->loaded);
        QVERIFY(!rowNamed(*view.elementVariants(), QStringLiteral("Q8_0")));  // head dim 8: no blocks of 32

        QSignalSpy prefilled(app.engine.get(), &EngineController::prefillFinished);
        QVERIFY(app.answer(QStringLiteral("The dog")));
        QVERIFY(!prefilled.isEmpty());
        const auto stats = prefilled.first().at(1).value<PrefillStats>();
        QCOMPARE(stats.nReused, 0);
        QCOMPARE(stats.nComputed, stats.nPrompt);
        QCOMPARE(view.bytesUsed(), 1280.0 * view.usedCells());
    }

    void aBlockTypeIsRefusedForHeadDim8AndTheOldOneKept() {
        ChatFixture app(4);
        QVERIFY(loadAndWait(*app.engine, bundledModel()));
        const QString message = chooseKvType(app, QStringLiteral("q8_0"));
        QCOMPARE(message, QStringLiteral("a q8_0 KV cache needs a head dimension that is a multiple of 32 (its blocks are per head); "
                                         "this model's head dimension is 8: use an f16 or f32 KV cache"));
        QCOMPARE(app.engine->kvType(), QStringLiteral("f16"));
        QCOMPARE(app.engine->kvBytesReserved(), 640.0 * 2048);
        QCOMPARE(app.settings->kvType(), QStringLiteral("f16"));  // the setting shows the type in use
        QCOMPARE(app.engine->kvTypeProblem(QStringLiteral("q4_0")), QStringLiteral(
            "a q4_0 KV cache needs a head dimension that is a multiple of 32 (its blocks are per head); "
            "this model's head dimension is 8: use an f16 or f32 KV cache"));
    }

    // A saved q8_0 is every load's choice; a model that cannot use it loads with f16 and a notice.
    void aSavedBlockTypeLoadsHeadDim8WithF16AndANotice() {
        ChatFixture app(4);
        app.settings->setKvType(QStringLiteral("q8_0"));
        QVERIFY(loadAndWait(*app.engine, bundledModel()));
        QCOMPARE(app.engine->kvType(), QStringLiteral("f16"));
        QVERIFY2(app.engine->notices().join('\n').contains(QStringLiteral("KV cache f16 instead of q8_0")),
                 qPrintable(app.engine->notices().join('\n')));
        QCOMPARE(app.settings->kvType(), QStringLiteral("q8_0"));
    }

    // gemma3-tiny: 8 layers, 2 KV heads, head dim 64; layers il % 6 < 5 attend to the last 32
    // positions. Q8_0: a row of 64 values is 2 blocks of 34 bytes (a 2-byte scale + 32 int8).
    void q8_0OnGemma3IsTheRealAllocationAndTheWindowsShow() {
        if (!QFile::exists(kGemma3)) QSKIP("../shared/models/arch/gemma3-tiny.gguf not found");
        ChatFixture app(40);
        app.settings->setKvType(QStringLiteral("q8_0"));
        QVERIFY(loadAndWait(*app.engine, kGemma3));
        QCOMPARE(app.engine->kvType(), QStringLiteral("q8_0"));
        const double perToken = 2 * 8 * 2 * (2 * 34);  // 2,176
        const double context = app.engine->contextLength();
        QCOMPARE(app.engine->kvBytesReserved(), perToken * context);
        KvCacheView view;
        view.setEngine(app.engine.get());
        QCOMPARE(view.bytesPerToken(), perToken);
        QCOMPARE(view.bytesReservedPerLayer(), perToken / 8 * context);
        QCOMPARE(view.elementType(), QStringLiteral("Q8_0"));
        QCOMPARE(view.elementSize(), QStringLiteral("34/32 B"));
        QCOMPARE(rowNamed(*view.elementVariants(), QStringLiteral("Q8_0"))->bytesPerToken, uint64_t(2176));
        QVERIFY(rowNamed(*view.elementVariants(), QStringLiteral("Q8_0"))->loaded);
        QCOMPARE(rowNamed(*view.elementVariants(), QStringLiteral("Q4_0"))->bytesPerToken, uint64_t(2 * 8 * 2 * (2 * 18)));

        QVERIFY(app.answer(QStringLiteral("Tell me a story about a dragon and a knight who became friends.")));
        const int used = view.usedCells();
        QVERIFY2(used > 32, qPrintable(QString::number(used)));
        QCOMPARE(view.slidingLayers(), 7);
        QCOMPARE(view.slidingWindow(), 32);
        QCOMPARE(view.slidingLayerList(), QStringLiteral("0, 1, 2, 3, 4, 6, 7"));
        QVERIFY(!view.isSlidingLayer(5));
        // The next token at position `used` reads keys used − 31 .. used on a sliding layer.
        QCOMPARE(view.firstWindowPosition(), used - 31);
        QCOMPARE(view.cellsOutsideWindow(), used - 31);
        // Bytes per layer type: every layer holds every position; the sliding ones read 32.
        QCOMPARE(view.bytesUsedSlidingLayers(), 7 * perToken / 8 * used);
        QCOMPARE(view.bytesUsedGlobalLayers(), 1 * perToken / 8 * used);
        QCOMPARE(view.bytesNeededSlidingLayers(), 7 * perToken / 8 * 32);
        QVERIFY(view.layerTypeSummary().startsWith(QStringLiteral("Every layer allocates the same 544 KiB (272 B per token)")));

        // The grid says so under the pointer: layer 0 is sliding, layer 5 global.
        KvCacheGrid grid;
        grid.setSize(QSizeF(400, 160));
        grid.setSource(&view);
        grid.setViewMode(KvCacheGrid::ViewMode::Manual);
        grid.showRange(0, 100);
        const qreal x0 = 0.5 * 400 / 100;  // position 0
        const qreal pitch = 160.0 / 8;
        QVERIFY2(grid.describeAt(x0, 0.5 * pitch).contains(QStringLiteral("outside the window")), qPrintable(grid.describeAt(x0, 0.5 * pitch)));
        QVERIFY(!grid.describeAt(x0, 5.5 * pitch).contains(QStringLiteral("outside the window")));
        QCOMPARE(grid.layerTicks().first().toMap().value(QStringLiteral("label")).toString(), QStringLiteral("0w"));
    }

    // "What it costs" on stories260K's latest answer: FP32 against the FP16 in use (the head dim
    // refuses blocks); every figure equals what two engines, one per cache type, give when each scores
    // the same tokens — the perplexity command's way.
    void theCostEqualsTwoEnginesScoringTheAnswer() {
        ChatFixture app(24);
        QVERIFY(loadAndWait(*app.engine, bundledModel()));
        QSignalSpy prompts(app.engine.get(), &EngineController::promptPrepared);
        QVERIFY(app.answer(QStringLiteral("Once upon a time")));
        QCOMPARE(prompts.size(), 1);
        std::vector<int32_t> sequence;
        for (const QList<int>& chunk : prompts.first().at(1).value<QList<QList<int>>>()) sequence.insert(sequence.end(), chunk.begin(), chunk.end());
        const int32_t promptTokens = int32_t(sequence.size());
        const int row = app.chat->messages()->count() - 1;
        for (const StepRecord& s : app.last().steps) sequence.push_back(s.sample.id);
        const size_t answerTokens = app.last().steps.size();
        QVERIFY(answerTokens > 5);

        KvCostModel cost;
        cost.setChat(app.chat.get());
        QCOMPARE(cost.referenceType(), QStringLiteral("f16"));
        QCOMPARE(cost.testType(), QStringLiteral("f32"));
        QCOMPARE(cost.testChoices(), QStringList{QStringLiteral("f32")});
        QVERIFY(cost.canRun());
        QSignalSpy result(&cost, &KvCostModel::resultChanged);
        QVERIFY(cost.run());
        QVERIFY(cost.running());
        QTRY_VERIFY_WITH_TIMEOUT(!result.isEmpty(), 20000);
        QVERIFY2(cost.status().isEmpty(), qPrintable(cost.status()));
        QCOMPARE(cost.row(), row);
        QCOMPARE(cost.tokens(), int(answerTokens));

        // The reference: one core engine per type, Engine::score, compareDistributions.
        auto load = [](KvType type) {
            EngineOptions opt;
            opt.modelPath = bundledModel().toStdString();
            opt.kvType = type;
            opt.contextLength = 256;
            return Engine::load(opt);
        };
        auto f16 = load(KvType::F16), f32 = load(KvType::F32);
        QVERIFY(f16 && f32);
        std::vector<std::vector<float>> reference;
        QVERIFY((*f16)->score(sequence, [&](int32_t, std::span<const float> l) { reference.emplace_back(l.begin(), l.end()); }));
        DivergenceMeter meter;
        std::vector<double> kl;
        QVERIFY((*f32)->score(sequence, [&](int32_t pos, std::span<const float> l) {
            if (pos + 1 < promptTokens || pos + 1 >= int32_t(sequence.size())) return;
            const DistributionShift shift = compareDistributions(reference[size_t(pos)], l);
            meter.add(shift);
            kl.push_back(shift.kl);
        }));
        QCOMPARE(kl.size(), answerTokens);
        QCOMPARE(cost.meanKl(), meter.meanKl());
        QCOMPARE(cost.p99Kl(), meter.klQuantile(0.99));
        QCOMPARE(cost.maxKl(), meter.maxKl());
        QCOMPARE(cost.sameTop1(), int(meter.sameTop1()));
        QCOMPARE(cost.top1Agreement(), meter.top1Agreement());
        QVERIFY(cost.maxKl() > 0);

        // The heat map: the answer's tokens carry their KL, and the chat tints by it.
        const ChatMessage& answer = app.chat->messages()->at(row);
        QCOMPARE(answer.kvKl.size(), answerTokens);
        for (size_t i = 0; i < answerTokens; ++i) QCOMPARE(answer.kvKl[i], float(kl[i]));
        QCOMPARE(app.chat->messages()->heatMode(), QStringLiteral("kvcost"));
        // The conversation's own cache was left as it was.
        QCOMPARE(app.engine->kvType(), QStringLiteral("f16"));
        QVERIFY(app.engine->contextUsed() > 0);
    }

    // Tint "kvcost": a token's KL over 0.05 nats is the full tint (as p = 0 in probability mode),
    // 0.025 half of it (as p = 0.5); no KL, or a step past the measured ones: no tint.
    void theKvCostTintFollowsTheKl() {
        auto step = [](const char* piece, float p) {
            StepRecord r;
            r.piece = piece;
            r.sample.pRaw = p;
            return r;
        };
        const QColor full = buildHeatText({step("x", 0.0f)}, HeatMode::Probability, false, false).spans.value(0).tint;
        const QColor half = buildHeatText({step("x", 0.5f)}, HeatMode::Probability, false, false).spans.value(0).tint;
        QVERIFY(full.isValid());
        QVERIFY(half.isValid() && half != full);
        const std::vector<StepRecord> steps{step("a", 1.0f), step("b", 1.0f), step("c", 1.0f), step("d", 0.0f)};
        const HeatText heat = buildHeatText(steps, HeatMode::KvCost, false, false, {}, 0, {0.0f, 0.05f, 0.025f});
        QCOMPARE(heat.spans, (QList<HeatSpan>{{QStringLiteral("a"), {}}, {QStringLiteral("b"), full}, {QStringLiteral("c"), half}, {QStringLiteral("d"), {}}}));
        QCOMPARE(heatModeFromName(QStringLiteral("kvcost")), HeatMode::KvCost);
        QCOMPARE(heatModeName(HeatMode::KvCost), QStringLiteral("kvcost"));
    }

    void nothingToMeasureBeforeAnAnswer() {
        ChatFixture app(24);
        QVERIFY(loadAndWait(*app.engine, bundledModel()));
        KvCostModel cost;
        cost.setChat(app.chat.get());
        QVERIFY(!cost.canRun());
        QVERIFY(!cost.run());
        QCOMPARE(cost.status(), QStringLiteral("There is no finished answer to measure: send a message first."));
        QVERIFY(app.answer(QStringLiteral("Once upon a time")));
        QVERIFY(cost.canRun());
    }
};

QTEST_GUILESS_MAIN(TestKvType)
#include "tst_kv_type.moc"
