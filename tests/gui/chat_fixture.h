#pragma once
// A whole chat for the GUI tests: the app's object graph (AppGraph: EngineController with its
// worker thread and the real model once loaded, SamplingSettings, an in-memory ChatStore,
// ChatController, the visualizer's StepInspector and TimelineModel), no window, and
// QAbstractItemModelTester watching the chat's ChatModel.
#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QTest>
#include <functional>
#include <memory>

#include "app/app_graph.h"
#include "gui_test_helpers.h"  // useTestLocations(), for each suite's initTestCase

namespace inferscope::testing_gui {

struct ChatFixture : AppGraph {
    // Declared after the graph's objects: gone before the model it watches.
    std::unique_ptr<QAbstractItemModelTester> tester =
        std::make_unique<QAbstractItemModelTester>(chat->messages(), QAbstractItemModelTester::FailureReportingMode::QtTest);

    // Answers of at most maxTokens tokens, sampled at `temperature` (0: greedy) with seed 42; the
    // chat's and the inspector's paces on `clock` when given (a ManualPacerClock), else on Qt's timers.
    explicit ChatFixture(int maxTokens, float temperature = 0.0f, PacerClock* clock = nullptr) : AppGraph(Options{.pacerClock = clock}) {
        SamplerParams p;
        p.temperature = temperature;
        p.seed = 42;
        chat->setSamplerOverride(p);
        sampling->setMaxTokens(maxTokens);
    }
    ~ChatFixture() {
        tester.reset();
        shutDown();
    }
    // Runs `start` (send, regenerate, branch…) and waits for the answer to finish.
    bool answer(const std::function<bool()>& start) {
        QSignalSpy done(chat.get(), &ChatController::answerFinished);
        if (!start()) return false;
        return done.wait(20000);
    }
    bool answer(const QString& text) {
        return answer([&] { return chat->send(text); });
    }
    const ChatMessage& last() const { return chat->messages()->at(chat->messages()->count() - 1); }
    // Waits for the timeline's experiment (no-cache run, sweep) to end.
    bool waitIdle(int ms = 30000) {
        return QTest::qWaitFor([&] { return !timeline->busy(); }, ms);
    }
};

}  // namespace inferscope::testing_gui
