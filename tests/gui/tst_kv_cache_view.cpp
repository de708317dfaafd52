// The KV-cache panel's numbers against the engine's real allocations, with the bundled
// stories260K (5 layers, 8 query heads, 4 KV heads, head dim 8, the default f16 cache: 640 bytes per token):
// bytes reserved and used, per layer and per KV head, the runs of prompt and generated cells
// through a generation and a second turn that reuses the cache, the counterfactual rows
// (QAbstractItemModelTester throughout) and the grid's reading of the cells.
#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QTest>

#include "gui_test_helpers.h"
#include "manual_pacer_clock.h"
#include "visualizer/kv/kv_cache_grid.h"
#include "visualizer/kv/kv_cache_view.h"

using namespace inferscope;
using namespace inferscope::testing_gui;

namespace {

using Runs = std::vector<std::pair<int32_t, CellOrigin>>;

// The view's runs as the QML sees them, back as (count, origin) pairs.
Runs runsOf(const KvCacheView& view) {
    Runs out;
    for (const QVariant& v : view.originRuns()) {
        const QVariantMap m = v.toMap();
        out.emplace_back(m.value("count").toInt(), m.value("origin").toString() == "prompt" ? CellOrigin::Prompt : CellOrigin::Generated);
    }
    return out;
}

const char* originName(CellOrigin o) { return o == CellOrigin::Prompt ? "P" : o == CellOrigin::Generated ? "G" : "E"; }

QString describe(const Runs& runs) {
    QStringList parts;
    for (const auto& [n, o] : runs) parts << QStringLiteral("%1×%2").arg(n).arg(originName(o));
    return parts.join(' ');
}

// The variant row with this name.
const KvVariantModel::Row* rowNamed(const KvVariantModel& model, const QString& name) {
    for (const auto& r : model.rows())
        if (r.name == name) return &r;
    return nullptr;
}

}  // namespace

class TestKvCacheView : public QObject {
    Q_OBJECT

    struct Fixture {
        EngineController engine{nullptr};
        KvCacheView view;
        QAbstractItemModelTester attentionTester{view.attentionVariants(), QAbstractItemModelTester::FailureReportingMode::QtTest};
        QAbstractItemModelTester elementTester{view.elementVariants(), QAbstractItemModelTester::FailureReportingMode::QtTest};
        bool load() {
            if (!loadAndWait(engine, bundledModel())) return false;
            view.setEngine(&engine);
            return true;
        }
        std::optional<GenerationSummary> run(const GenerationJob& job) {
            QSignalSpy finished(&engine, &EngineController::generationFinished);
            if (engine.startGeneration(job) == 0 || !finished.wait(20000)) return std::nullopt;
            return finished.first().at(1).value<GenerationSummary>();
        }
    };

    // Every figure the panel shows equals the engine's stats, and the stats equal the formula.
    static void verifyAgainstEngine(const KvCacheView& view, const KvCacheStats& engine) {
        QCOMPARE(view.bytesPerToken(), 640.0);  // 2 × 5 × 4 × 8 × 2 (the default f16 cache)
        QCOMPARE(view.bytesReserved(), double(engine.bytesReserved));
        QCOMPARE(view.bytesReserved(), 640.0 * 2048);
        QCOMPARE(view.bytesUsed(), double(engine.bytesUsed));
        QCOMPARE(view.bytesUsed(), 640.0 * view.usedCells());
        QCOMPARE(view.bytesUsedPerLayer(), 640.0 / 5 * view.usedCells());
        QCOMPARE(view.bytesUsedPerHead(), 640.0 / 20 * view.usedCells());
        QCOMPARE(view.bytesReservedPerLayer(), 640.0 * 2048 / 5);
        QCOMPARE(view.bytesReservedPerHead(), 640.0 * 2048 / 20);
        QCOMPARE(view.usedCells(), engine.nUsed);
        QCOMPARE(view.promptCells() + view.generatedCells(), view.usedCells());
    }

private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QCoreApplication::setOrganizationName(QStringLiteral("InferscopeTests"));
    }

    void coreRunsFollowCommitsAndTruncation() {
        auto cache = KvCache::create({2, 2, 4, 16});
        QVERIFY(cache.has_value());
        QVERIFY(cache->stats().originRuns.empty());
        cache->commit(0, 5, CellOrigin::Prompt);
        for (int p = 5; p < 8; ++p) cache->commit(p, 1, CellOrigin::Generated);
        QCOMPARE(cache->stats().originRuns, (Runs{{5, CellOrigin::Prompt}, {3, CellOrigin::Generated}}));
        cache->truncate(6);  // a branch after the first generated token
        cache->commit(6, 2, CellOrigin::Prompt);
        cache->commit(8, 1, CellOrigin::Generated);
        const KvCacheStats s = cache->stats();
        QCOMPARE(s.originRuns, (Runs{{5, CellOrigin::Prompt}, {1, CellOrigin::Generated}, {2, CellOrigin::Prompt}, {1, CellOrigin::Generated}}));
        QCOMPARE(s.nUsed, 9);
        QCOMPARE(s.bytesReserved, uint64_t(2 * 2 * 2 * 4 * 16 * 4));  // K and V × layers × heads × dim × ctx × f32
        QCOMPARE(s.bytesReservedPerLayer, s.bytesReserved / 2);
        QCOMPARE(s.bytesReservedPerHead, s.bytesReserved / 4);
        cache->clear();
        QVERIFY(cache->stats().originRuns.empty());
    }

    // Gemma's sliding-window layers read only their window: per layer type, what the cells hold
    // and what a cache keeping only the window would need. 4 layers, 2 of them sliding with a
    // window of 16; 2 KV heads × 8 dims × 4 B × K and V = 128 B per layer per token; 40 positions:
    // the sliding layers hold 2 × 128 × 40 = 10,240 B and need 2 × 128 × 16 = 4,096 B.
    void slidingWindowLayersAreCountedByLayerType() {
        auto cache = KvCache::create({4, 2, 8, 64, KvType::F32, 16, 2, {1, 0, 1, 0}});
        QVERIFY(cache.has_value());
        cache->commit(0, 40, CellOrigin::Prompt);
        const KvCacheStats s = cache->stats();
        QCOMPARE(s.bytesUsed, uint64_t(20480));
        QCOMPARE(s.bytesUsedSlidingLayers, uint64_t(10240));
        QCOMPARE(s.bytesUsedGlobalLayers, uint64_t(10240));
        QCOMPARE(s.bytesNeededSlidingLayers, uint64_t(4096));
        KvCacheView view;
        view.setStats(s, 4);
        QCOMPARE(view.slidingLayers(), 2);
        QCOMPARE(view.slidingWindow(), 16);
        QCOMPARE(view.layerTypeSummary(), QStringLiteral("Every layer allocates the same 8 KiB (128 B per token): the engine keeps every "
                                                         "position on every layer. 2 of 4 layers (0, 2) attend to the last 16 positions only: "
                                                         "their cells hold 10 KiB, a cache keeping only the window would need 4 KiB. The 2 global "
                                                         "layers hold 10 KiB."));
        QVERIFY(view.isSlidingLayer(2));
        QVERIFY(!view.isSlidingLayer(3));
        // The next token, at 40, reads keys 25..40 on a sliding layer: 0..24 are kept, not read.
        QCOMPARE(view.firstWindowPosition(), 25);
        QCOMPARE(view.cellsOutsideWindow(), 25);
        // Gemma 3's 5:1 pattern at 8 layers leaves one global layer, named in the singular
        // ("The 1 global layers hold" before). 128 B per layer per token × 40 = 5 KiB.
        auto gemma3 = KvCache::create({8, 2, 8, 64, KvType::F32, 16, 7});
        QVERIFY(gemma3.has_value());
        gemma3->commit(0, 40, CellOrigin::Prompt);
        KvCacheView oneGlobal;
        oneGlobal.setStats(gemma3->stats(), 4);
        QCOMPARE(oneGlobal.layerTypeSummary(), QStringLiteral("Every layer allocates the same 8 KiB (128 B per token): the engine keeps "
                                                              "every position on every layer. 7 of 8 layers attend to the last 16 "
                                                              "positions only: their cells hold 35 KiB, a cache keeping only the window "
                                                              "would need 14 KiB. The global layer holds 5 KiB."));
        // Within the window the sliding layers need all they hold.
        cache->truncate(10);
        QCOMPARE(cache->stats().bytesNeededSlidingLayers, uint64_t(2 * 128 * 10));
        // Without sliding layers: all of it global, no summary.
        auto plain = KvCache::create({4, 2, 8, 64});
        plain->commit(0, 40, CellOrigin::Prompt);
        QCOMPARE(plain->stats().bytesUsedGlobalLayers, uint64_t(20480));
        QCOMPARE(plain->stats().bytesNeededSlidingLayers, uint64_t(0));
        view.setStats(plain->stats(), 4);
        QCOMPARE(view.layerTypeSummary(), QString());
    }

    // QML reads the figures as four values built once per new stats: they carry what the accessors
    // compute, the shape notifies only when it changes and the rest with every update.
    void theValuesQmlReadsMatchTheAccessors() {
        KvCacheView view;
        QSignalSpy shape(&view, &KvCacheView::shapeChanged);
        QSignalSpy changed(&view, &KvCacheView::changed);
        QCOMPARE(view.simulate(4, 8, 2, 8, 64, {QVariantMap{{"origin", "prompt"}, {"count", 5}}}), QString());
        QCOMPARE(shape.count(), 1);
        QVERIFY(view.shape().hasCache);
        QCOMPARE(view.shape().layers, 4);
        QCOMPARE(view.shape().groupSize, 4);
        QCOMPARE(view.shape().attention, QStringLiteral("GQA"));
        QCOMPARE(view.shape().elementType, view.elementType());
        QCOMPARE(view.fill().usedCells, 5);
        QCOMPARE(view.fill().originRuns, view.originRuns());
        QCOMPARE(view.bytes().used, view.bytesUsed());
        QCOMPARE(view.bytes().reservedPerHead, view.bytesReservedPerHead());
        QCOMPARE(view.bytes().perLayerPerToken, view.bytesPerLayerPerToken());
        QCOMPARE(view.sliding().layers, 0);
        // The same shape filled further: new figures, the shape left alone.
        QCOMPARE(view.simulate(4, 8, 2, 8, 64, {QVariantMap{{"origin", "prompt"}, {"count", 9}}}), QString());
        QCOMPARE(shape.count(), 1);
        QCOMPARE(changed.count(), 2);
        QCOMPARE(view.fill().usedCells, 9);
        view.clear();
        QCOMPARE(shape.count(), 2);
        QVERIFY(!view.shape().hasCache);
        QCOMPARE(view.bytes().used, 0.0);
        // The property QML reads is the same value.
        QCOMPARE(view.property("fill").value<KvCacheFill>(), view.fill());
    }

    void theLoadedCacheAsAllocated() {
        Fixture f;
        QVERIFY(f.load());
        QVERIFY(f.view.hasCache());
        QCOMPARE(f.view.layers(), 5);
        QCOMPARE(f.view.queryHeads(), 8);
        QCOMPARE(f.view.kvHeads(), 4);
        QCOMPARE(f.view.headDim(), 8);
        QCOMPARE(f.view.capacity(), 2048);
        QCOMPARE(f.view.bytesPerElement(), 2);
        QCOMPARE(f.view.elementType(), QStringLiteral("FP16"));
        QCOMPARE(f.view.attention(), QStringLiteral("GQA"));
        QCOMPARE(f.view.groupSize(), 2);
        QCOMPARE(f.view.usedCells(), 0);
        QVERIFY(f.view.originRuns().isEmpty());
        verifyAgainstEngine(f.view, f.engine.kvStats());
        QCOMPARE(f.view.bytesReserved(), f.engine.kvBytesReserved());
        QCOMPARE(f.view.bytesPerToken(), f.engine.modelDetails().kvBytesPerToken);
    }

    void aGenerationFillsTheCacheBatchByBatch() {
        Fixture f;
        QVERIFY(f.load());
        QSignalSpy batches(&f.engine, &EngineController::stepsArrived);
        QList<int> usedSeen;
        connect(&f.view, &KvCacheView::changed, this, [&] { usedSeen << f.view.usedCells(); });
        const auto summary = f.run(textJob("Once upon a time", 40));
        QVERIFY(summary);
        QCOMPARE(summary->reason, FinishReason::MaxTokens);
        // 5 prompt cells; 39 generated (the 40th token is sampled but not yet run through the model).
        QCOMPARE(f.view.usedCells(), 5 + 39);
        QCOMPARE(f.view.promptCells(), 5);
        QCOMPARE(f.view.generatedCells(), 39);
        QCOMPARE(runsOf(f.view), (Runs{{5, CellOrigin::Prompt}, {39, CellOrigin::Generated}}));
        QCOMPARE(f.view.stats().originRuns, summary->kv.originRuns);
        verifyAgainstEngine(f.view, summary->kv);
        QCOMPARE(f.view.bytesUsed(), 28160.0);  // 44 × 640
        // One update per batch (plus the end), never per token, and the fill only grows.
        QVERIFY2(usedSeen.size() <= batches.count() + 1, qPrintable(QString("%1 updates for %2 batches").arg(usedSeen.size()).arg(batches.count())));
        QVERIFY(std::is_sorted(usedSeen.begin(), usedSeen.end()));
        QCOMPARE(usedSeen.last(), 44);
    }

    void aSecondTurnReusesTheCachedCells() {
        Fixture f;
        QVERIFY(f.load());
        QSignalSpy prepared(&f.engine, &EngineController::promptPrepared);
        QSignalSpy prefill(&f.engine, &EngineController::prefillFinished);
        const auto first = f.run(textJob("Once upon a time", 20));
        QVERIFY(first);
        QCOMPARE(runsOf(f.view), (Runs{{5, CellOrigin::Prompt}, {19, CellOrigin::Generated}}));

        // Turn two: the first prompt and answer as exact tokens, then new text.
        const auto firstPrompt = prepared.first().at(1).value<QList<QList<int>>>().first();
        GenerationJob job = textJob("", 12);
        job.chunks.clear();
        PromptChunk history;
        history.hasTokens = true;
        history.tokens.assign(firstPrompt.begin(), firstPrompt.end());
        history.tokens.insert(history.tokens.end(), first->tokens.begin(), first->tokens.end());
        PromptChunk more;
        more.text = " The next day";
        job.chunks = {history, more};
        const auto second = f.run(job);
        QVERIFY(second);
        const PrefillStats p = prefill.last().at(1).value<PrefillStats>();
        QCOMPARE(p.nReused, 24);  // every cached cell: 5 prompt + 19 generated
        QVERIFY(p.nComputed >= 2);  // the last answer token, never run, and the new text
        // The reused cells keep their origin; the new prompt cells and the new answer follow.
        const Runs expected{{5, CellOrigin::Prompt}, {19, CellOrigin::Generated},
                            {p.nComputed, CellOrigin::Prompt}, {second->nGenerated - 1, CellOrigin::Generated}};
        QVERIFY2(runsOf(f.view) == expected, qPrintable(describe(runsOf(f.view)) + " != " + describe(expected)));
        QCOMPARE(f.view.usedCells(), p.nPrompt + second->nGenerated - 1);
        QCOMPARE(f.view.promptCells(), 5 + p.nComputed);
        verifyAgainstEngine(f.view, second->kv);
    }

    // Batches arriving back to back: the first is shown at once, the rest wait for the interval's
    // end and are shown then as one update (the latest stats), not one update each.
    void whileStreamingUpdatesAreAQuarterSecondApart() {
        ManualPacerClock clock;
        Fixture f;
        f.view.setPacerClock(clock);
        QVERIFY(f.load());
        QVERIFY(f.run(textJob("Once upon a time", 10)));
        QVERIFY(!f.view.intervalOver());  // the answer's end was shown at once: its interval starts
        clock.advance(KvCacheView::kStreamingIntervalMs);
        QVERIFY(f.view.intervalOver());
        QVERIFY(!f.view.updatePending());
        StepBatch batch;
        batch.kv = f.engine.kvStats();
        const int before = f.view.updates();
        emit f.engine.stepsArrived(1, batch);
        QCOMPARE(f.view.updates(), before + 1);
        for (int i = 0; i < 9; ++i) {
            clock.advance(10);
            emit f.engine.stepsArrived(1, batch);
        }
        QCOMPARE(f.view.updates(), before + 1);
        QVERIFY(f.view.updatePending());  // the nine wait for the interval's end, as one update
        clock.advance(KvCacheView::kStreamingIntervalMs - 90 - 1);
        QCOMPARE(f.view.updates(), before + 1);
        clock.advance(1);
        QCOMPARE(f.view.updates(), before + 2);
        // Nothing else is waiting: no further update comes without a new batch.
        QVERIFY(!f.view.updatePending());
        clock.advance(10 * KvCacheView::kStreamingIntervalMs);
        QCOMPARE(f.view.updates(), before + 2);
        // The end of an answer is shown at once.
        emit f.engine.stepsArrived(1, batch);
        QVERIFY(f.run(textJob("Once upon a time", 3)));
        QCOMPARE(f.view.usedCells(), 5 + 2);
    }

    void aHiddenViewCatchesUpWhenShown() {
        Fixture f;
        QVERIFY(f.load());
        f.view.setActive(false);
        const int updatesBefore = f.view.updates();
        QVERIFY(f.run(textJob("Once upon a time", 30)));
        QCOMPARE(f.view.updates(), updatesBefore);  // no work while hidden
        QCOMPARE(f.view.usedCells(), 0);
        f.view.setActive(true);
        QCOMPARE(f.view.updates(), updatesBefore + 1);
        QCOMPARE(f.view.usedCells(), 5 + 29);
        verifyAgainstEngine(f.view, f.engine.kvStats());
    }

    void counterfactualsFromTheCalculatorMatchTheAllocation() {
        Fixture f;
        QVERIFY(f.load());
        QVERIFY(f.run(textJob("Once upon a time", 10)));
        const KvVariantModel& attention = *f.view.attentionVariants();
        QCOMPARE(attention.rowCount(), 3);
        const auto* mha = rowNamed(attention, "MHA");
        const auto* gqa = rowNamed(attention, "GQA");
        const auto* mqa = rowNamed(attention, "MQA");
        QVERIFY(mha && gqa && mqa);
        QCOMPARE(mha->kvHeads, uint64_t(8));
        QCOMPARE(mha->bytesPerToken, uint64_t(1280));
        QCOMPARE(mha->ratio, 2.0);
        QVERIFY(gqa->loaded && !mha->loaded && !mqa->loaded);
        QCOMPARE(gqa->bytesPerToken, uint64_t(640));
        QCOMPARE(mqa->bytesPerToken, uint64_t(160));
        QCOMPARE(mqa->ratio, 0.25);
        // The row that matches the cache reproduces the engine's own allocation and fill.
        QCOMPARE(double(gqa->bytesAtCapacity), f.view.bytesReserved());
        QCOMPARE(double(gqa->bytesAtUsed), f.view.bytesUsed());
        QCOMPARE(mha->bytesAtCapacity, uint64_t(1280) * 2048);

        const KvVariantModel& element = *f.view.elementVariants();
        QCOMPARE(element.rowCount(), 2);  // head dim 8: no Q8_0 / Q4_0 (blocks of 32 per row)
        QVERIFY(rowNamed(element, "FP16")->loaded);
        QCOMPARE(rowNamed(element, "FP16")->bytesAtCapacity, gqa->bytesAtCapacity);
        QCOMPARE(rowNamed(element, "FP32")->bytesPerToken, uint64_t(1280));
        QCOMPARE(element.data(element.index(0), KvVariantModel::RatioTextRole).toString(), QStringLiteral("×2"));
        QCOMPARE(attention.data(attention.index(0), KvVariantModel::RatioTextRole).toString(), QStringLiteral("×2"));
    }

    void theGridReadsTheEnginesCells() {
        Fixture f;
        QVERIFY(f.load());
        KvCacheGrid grid;
        grid.setSize({320, 110});
        grid.setSource(&f.view);
        QCOMPARE(grid.viewMode(), KvCacheGrid::ViewMode::FollowFill);
        QCOMPARE(grid.viewLength(), 32);  // an empty cache: the smallest window
        QVERIFY(f.run(textJob("Once upon a time", 40)));
        QCOMPARE(grid.viewStart(), 0);
        QCOMPARE(grid.viewLength(), 64);  // 44 cells and room to grow, in a power of two
        QCOMPARE(grid.originAt(0), QStringLiteral("prompt"));
        QCOMPARE(grid.originAt(4), QStringLiteral("prompt"));
        QCOMPARE(grid.originAt(5), QStringLiteral("generated"));
        QCOMPARE(grid.originAt(43), QStringLiteral("generated"));
        QCOMPARE(grid.originAt(44), QStringLiteral("empty"));
        QCOMPARE(grid.originAt(2047), QStringLiteral("empty"));
        QCOMPARE(grid.originAt(2048), QString());
        QCOMPARE(grid.positionAt(0), 0);
        QCOMPARE(grid.positionAt(319.9), 63);
        QCOMPARE(grid.layerAt(0), 0);
        QCOMPARE(grid.layerAt(109), 4);
        QVERIFY(grid.showsHeads());  // 20 px rows hold 4 heads of 5 px
        QCOMPARE(grid.describeAt(5 * 5 + 1, 1), QStringLiteral("position 5, layer 0, KV head 0: generated token (decode)"));
        grid.setViewMode(KvCacheGrid::ViewMode::WholeContext);
        QCOMPARE(grid.viewLength(), 2048);
        QCOMPARE(grid.positionsPerPixel(), 6.4);
        grid.zoomAt(0, 0.5);
        QCOMPARE(grid.viewMode(), KvCacheGrid::ViewMode::Manual);
        QCOMPARE(grid.viewStart(), 0);
        QCOMPARE(grid.viewLength(), 1024);
        grid.panBy(-160);  // half the width to the left: later positions
        QCOMPARE(grid.viewStart(), 512);
        grid.centreOn(2047);  // clamped to the context
        QCOMPARE(grid.viewStart(), 1024);
    }
};

QTEST_MAIN(TestKvCacheView)
#include "tst_kv_cache_view.moc"
