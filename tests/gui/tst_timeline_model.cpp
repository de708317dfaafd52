// The Timeline panel's data with the real model: prefill and per-step decode figures of an answer,
// the no-cache rerun (same tokens, K/V computed n(n+1)/2-style), and the prefill sweep.
#include <QSignalSpy>
#include <QTest>

#include "step_gate.h"
#include "chat/chat_controller.h"
#include "store/chat_store.h"
#include "chat_fixture.h"
#include "gui_test_helpers.h"
#include "settings/sampling_settings.h"
#include "visualizer/step_inspector.h"
#include "visualizer/timeline_model.h"

using namespace inferscope;
using namespace inferscope::testing_gui;

class TestTimelineModel : public QObject {
    Q_OBJECT

    struct Fixture : ChatFixture {
        Fixture() : ChatFixture(30) {}
    };

    // The inspector (whose selection the timeline shows) follows streaming at most 10 times a
    // second: the answer is on the timeline once the inspector has reached its newest step.
    static void waitFollowed(Fixture& f) {
        QTRY_VERIFY(f.inspector->row() == 1 && f.inspector->step() == int(f.last().steps.size()) - 1 && f.timeline->row() == 1);
    }

private slots:
    void initTestCase() { useTestLocations(); }

    void prefillAndDecodeFiguresOfAnAnswer() {
        Fixture f;
        QVERIFY(loadAndWait(*f.engine, bundledModel()));
        QVERIFY(f.answer("Once upon a time"));
        waitFollowed(f);
        QCOMPARE(f.timeline->row(), 1);
        const QVariantMap pf = f.timeline->prefill();
        QCOMPARE(pf.value("tokens").toInt(), 5);
        QCOMPARE(pf.value("reused").toInt(), 0);
        QVERIFY(pf.value("ms").toDouble() > 0);
        QCOMPARE(f.timeline->decodeMs().size(), 29);  // 30 tokens: the first from prefill
        QCOMPARE(f.timeline->decodeGBps().size(), 29);
        // The bytes a decode pass reads: every matrix and norm once and one row of the embedding,
        // plus 640 B of K and V (the default f16 cache) for each position up to and including its own.
        const ModelDetails& d = f.engine->modelDetails();
        const double weights = d.weightBytesPerToken;
        QCOMPARE(f.timeline->decodeBytes(9), weights + 640.0 * 10);
        // A prefill's FLOPs: 2 per multiply-add of every matrix per token (the LM head once) plus attention.
        const double macs = d.matmulMacsPerToken;
        const double lmHead = 512.0 * 64.0;
        QCOMPARE(f.timeline->prefillFlops(5, 0), 2 * (macs - lmHead) * 5 + 2 * lmHead + 4.0 * 8 * 8 * 5 * (1 + 2 + 3 + 4 + 5));
        const QVariantMap dc = f.timeline->decode();
        QCOMPARE(dc.value("passes").toInt(), 29);
        QVERIFY(dc.value("tokensPerSecond").toDouble() > 0);
    }

    void runWithoutCacheCountsTheRecomputation() {
        Fixture f;
        QVERIFY(loadAndWait(*f.engine, bundledModel()));
        QVERIFY(f.answer("Once upon a time"));
        waitFollowed(f);
        const int contextUsed = f.engine->contextUsed();
        const double kvBytesUsed = f.engine->kvBytesUsed();
        const double decodeRate = f.engine->decodeTokensPerSecond();
        QVERIFY(f.timeline->runWithoutCache());
        QVERIFY(f.timeline->busy());
        QVERIFY(f.waitIdle());
        const QVariantMap c = f.timeline->counters();
        const double P = 5, n = 30;
        QCOMPARE(c.value("cachedKv").toDouble(), P + n - 1);
        double uncached = P;
        for (int i = 1; i < int(n); ++i) uncached += P + i;  // pass i recomputes all P + i positions
        QCOMPARE(c.value("uncachedKv").toDouble(), uncached);
        QVERIFY(c.value("uncachedScores").toDouble() > c.value("cachedScores").toDouble());
        QCOMPARE(f.timeline->noCacheMs().size(), 29);
        QCOMPARE(c.value("kvVectorsPerPosition").toDouble(), 5.0 * 4.0);  // layers × KV heads
        // A measurement: the status bar and KV panel keep the conversation's figures.
        QCOMPARE(f.engine->contextUsed(), contextUsed);
        QCOMPARE(f.engine->kvBytesUsed(), kvBytesUsed);
        QCOMPARE(f.engine->decodeTokensPerSecond(), decodeRate);
    }

    // While the answer streams, the prefill block already shows its tokens (it said "0 tokens"
    // until the answer ended).
    void prefillIsShownWhileTheAnswerStreams() {
        ChatFixture f(2000);
        QVERIFY(loadAndWait(*f.engine, bundledModel()));
        QSignalSpy done(f.chat.get(), &ChatController::answerFinished);
        StepGate gate(*f.engine, 3);  // the answer streams until the checks are done
        QVERIFY(f.chat->send(QStringLiteral("Once upon a time")));
        QVERIFY(gate.waitHeld());
        QTRY_VERIFY(f.chat->messages()->count() == 2 && f.chat->messages()->at(1).steps.size() >= 2);
        QTRY_COMPARE_WITH_TIMEOUT(f.timeline->prefill().value("tokens").toInt(), 5, 2000);
        QVERIFY(f.chat->generating());
        QCOMPARE(f.timeline->prefill().value("reused").toInt(), 0);
        f.chat->stop();
        QVERIFY(!done.isEmpty() || done.wait(20000));
        QCOMPARE(f.timeline->prefill().value("tokens").toInt(), 5);
    }

    // The experiments belong to the conversation they ran on: another conversation shows none
    // (they stayed attached to every conversation). Without an answer, the no-cache rerun says
    // why it cannot run (it did nothing); measuring the machine says it is under way.
    void experimentsBelongToTheirConversation() {
        Fixture f;
        QVERIFY(loadAndWait(*f.engine, bundledModel(), 256));
        QVERIFY(f.answer("Once upon a time"));
        waitFollowed(f);
        QVERIFY(f.timeline->runWithoutCache());
        QVERIFY(f.waitIdle());
        QVERIFY(f.timeline->runPrefillSweep());
        QVERIFY(f.waitIdle());
        QVERIFY(!f.timeline->noCacheMs().isEmpty());
        QVERIFY(!f.timeline->sweep().isEmpty());
        QSignalSpy experiments(f.timeline.get(), &TimelineModel::experimentsChanged);
        f.chat->newConversation();
        QVERIFY(!experiments.isEmpty());
        QVERIFY(f.timeline->noCacheMs().isEmpty());
        QVERIFY(f.timeline->counters().isEmpty());
        QVERIFY(f.timeline->sweep().isEmpty());
        QCOMPARE(f.timeline->status(), QString());

        QVERIFY(!f.timeline->runWithoutCache());
        QCOMPARE(f.timeline->status(), QStringLiteral("No answer to run again: send a message first."));

        QSignalSpy measured(f.engine.get(), &EngineController::machineMeasured);
        f.timeline->measureMachine();
        QVERIFY(f.timeline->measuring());
        QCOMPARE(f.timeline->status(), QStringLiteral("Measuring this machine: read bandwidth, then matrix multiply peak…"));
        QVERIFY(measured.wait(30000));
        QVERIFY(!f.timeline->measuring());
        QCOMPARE(f.timeline->status(), QStringLiteral("Machine measured."));
    }

    void prefillSweepDoublesTheLength() {
        Fixture f;
        QVERIFY(loadAndWait(*f.engine, bundledModel(), 256));
        QVERIFY(f.answer("Once upon a time"));
        const int contextUsed = f.engine->contextUsed();
        QVERIFY(contextUsed > 0);
        QVERIFY(f.timeline->runPrefillSweep());
        QVERIFY(f.waitIdle());
        QCOMPARE(f.engine->contextUsed(), contextUsed);  // not the sweep's 256 of 256
        const QVariantList sweep = f.timeline->sweep();
        QCOMPARE(sweep.size(), 6);  // 8 .. 256
        int expected = 8;
        for (const QVariant& v : sweep) {
            QCOMPARE(v.toMap().value("tokens").toInt(), expected);
            QVERIFY(v.toMap().value("ms").toDouble() > 0);
            expected *= 2;
        }
        QCOMPARE(f.engine->state(), EngineController::State::Ready);
    }
};

QTEST_GUILESS_MAIN(TestTimelineModel)
#include "tst_timeline_model.moc"
