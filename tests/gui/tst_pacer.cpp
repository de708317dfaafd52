// Pacer, the one throttle of the GUI's paced views (gui/app/pacer.h): requests within an interval
// are one run at its end, a run is due exactly at the interval, cancel and ran() drop a pending
// run, runAfter() waits for the last call; on the test's ManualPacerClock, then once on Qt's.
#include <QTest>

#include "app/pacer.h"
#include "manual_pacer_clock.h"

using namespace inferscope;
using namespace inferscope::testing_gui;

class TestPacer : public QObject {
    Q_OBJECT

    struct Paced {
        ManualPacerClock clock;
        QList<qint64> runs;  // the clock's time at each run
        Pacer pacer{100, [this] { runs.append(clock.now()); }, clock};
    };

private slots:
    void theFirstRequestRunsAtOnce() {
        Paced p;
        p.pacer.request();
        QCOMPARE(p.runs, (QList<qint64>{0}));
        QVERIFY(!p.pacer.pending());
    }

    void requestsWithinAnIntervalAreOneRunAtItsEnd() {
        Paced p;
        p.pacer.request();
        for (int i = 0; i < 9; ++i) {
            p.clock.advance(10);
            p.pacer.request();
        }
        QCOMPARE(p.runs, (QList<qint64>{0}));
        QVERIFY(p.pacer.pending());
        QCOMPARE(p.pacer.intervalLeft(), 10);
        p.clock.advance(9);
        QCOMPARE(p.runs.size(), 1);
        p.clock.advance(1);
        QCOMPARE(p.runs, (QList<qint64>{0, 100}));
        QVERIFY(!p.pacer.pending());
        // Nothing more without a new request.
        p.clock.advance(1000);
        QCOMPARE(p.runs.size(), 2);
        QCOMPARE(p.clock.armed(), 0);
    }

    void aRunIsDueExactlyAtTheInterval() {
        Paced p;
        QVERIFY(p.pacer.due());  // none yet
        p.pacer.request();
        p.clock.advance(99);
        QVERIFY(!p.pacer.due());
        QCOMPARE(p.pacer.intervalLeft(), 1);
        p.clock.advance(1);
        QVERIFY(p.pacer.due());
        QCOMPARE(p.pacer.intervalLeft(), 0);
        p.pacer.request();  // at once, not at the end of another interval
        QCOMPARE(p.runs, (QList<qint64>{0, 100}));
        QVERIFY(!p.pacer.pending());
    }

    void aRunAtTheIntervalsEndStartsTheNextInterval() {
        Paced p;
        p.pacer.request();
        p.clock.advance(50);
        p.pacer.request();
        p.clock.advance(50);  // the pending run, at 100
        p.clock.advance(30);
        p.pacer.request();    // 30 ms after that run: waits for 200
        QCOMPARE(p.runs, (QList<qint64>{0, 100}));
        p.clock.advance(100);
        QCOMPARE(p.runs, (QList<qint64>{0, 100, 200}));
    }

    void cancelDropsThePendingRun() {
        Paced p;
        p.pacer.request();
        p.clock.advance(10);
        p.pacer.request();
        QVERIFY(p.pacer.pending());
        p.pacer.cancel();
        QVERIFY(!p.pacer.pending());
        p.clock.advance(1000);
        QCOMPARE(p.runs, (QList<qint64>{0}));
    }

    // The owner ran the action itself (an answer's end shown at once): the pending run is
    // dropped and the next interval counts from then.
    void ranDropsThePendingRunAndRestartsTheInterval() {
        Paced p;
        p.pacer.request();
        p.clock.advance(10);
        p.pacer.request();
        p.clock.advance(20);
        p.pacer.ran();
        QVERIFY(!p.pacer.pending());
        QCOMPARE(p.pacer.intervalLeft(), 100);
        p.clock.advance(99);
        QVERIFY(!p.pacer.due());
        p.clock.advance(1);
        QVERIFY(p.pacer.due());
        QCOMPARE(p.runs, (QList<qint64>{0}));
    }

    // Batches about one interval apart, a little early: taken with their batch, within the margin.
    void anEarlyMarginRunsSlightlyEarlyRequestsAtOnce() {
        Paced p;
        p.pacer.setEarlyMargin(20);
        p.pacer.request();
        p.clock.advance(79);
        p.pacer.request();  // too early: waits for the interval's end, not the margin's
        QVERIFY(p.pacer.pending());
        p.clock.advance(20);
        QCOMPARE(p.runs.size(), 1);
        p.clock.advance(1);
        QCOMPARE(p.runs, (QList<qint64>{0, 100}));
        p.clock.advance(80);
        p.pacer.request();  // 80 ms after: within the margin
        QCOMPARE(p.runs, (QList<qint64>{0, 100, 180}));
    }

    void runAfterWaitsForTheLastCall() {
        Paced p;
        p.pacer.runAfter(40);
        p.clock.advance(30);
        p.pacer.runAfter(40);  // the setting moved again: 40 ms from now
        p.clock.advance(39);
        QVERIFY(p.runs.isEmpty());
        p.clock.advance(1);
        QCOMPARE(p.runs, (QList<qint64>{70}));
        QVERIFY(!p.pacer.pending());
    }

    // Alarms ring in the order of their times, each at its time, within one advance().
    void advanceRingsEachAlarmAtItsTime() {
        ManualPacerClock clock;
        QList<QString> rung;
        Pacer a(100, [&] { rung << QStringLiteral("a@%1").arg(clock.now()); }, clock);
        Pacer b(100, [&] { rung << QStringLiteral("b@%1").arg(clock.now()); }, clock);
        a.runAfter(30);
        b.runAfter(10);
        clock.advance(100);
        QCOMPARE(rung, (QList<QString>{"b@10", "a@30"}));
        QCOMPARE(clock.now(), 100);
    }

    // A pacer gone before its run: nothing rings; a clock gone before the pacer: nothing breaks.
    void lifetimes() {
        ManualPacerClock clock;
        int runs = 0;
        {
            Pacer gone(100, [&] { ++runs; }, clock);
            gone.runAfter(10);
        }
        clock.advance(100);
        QCOMPARE(runs, 0);
        auto shortLived = std::make_unique<ManualPacerClock>();
        Pacer outlives(100, [&] { ++runs; }, *shortLived);
        outlives.runAfter(10);
        shortLived.reset();
        outlives.cancel();
        QCOMPARE(runs, 0);
    }

    // The app's clock: Qt's timers ring the run at the interval's end (its time is not asserted:
    // the GUI tests assert no durations).
    void theAppClockRingsThePendingRun() {
        int runs = 0;
        Pacer pacer(50, [&] { ++runs; });
        pacer.request();
        pacer.request();
        QCOMPARE(runs, 1);
        QVERIFY(pacer.pending());
        QVERIFY(!pacer.due());
        QTRY_COMPARE(runs, 2);
        QVERIFY(!pacer.pending());
    }
};

QTEST_MAIN(TestPacer)
#include "tst_pacer.moc"
