#pragma once
// A whole chat for the GUI tests: EngineController (its worker thread and the real model once
// loaded), SamplingSettings, an in-memory ChatStore, ChatController with QAbstractItemModelTester
// watching its ChatModel, and the visualizer's StepInspector and TimelineModel.
#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTest>
#include <functional>
#include <memory>

#include "chat/chat_controller.h"
#include "store/chat_store.h"
#include "engine/engine_controller.h"
#include "settings/sampling_settings.h"
#include "visualizer/step_inspector.h"
#include "visualizer/timeline_model.h"

namespace inferscope::testing_gui {

struct ChatFixture {
    EngineController engine{nullptr};
    SamplingSettings sampling{nullptr};
    ChatStore store;
    std::unique_ptr<ChatController> chat;
    std::unique_ptr<QAbstractItemModelTester> tester;
    std::unique_ptr<StepInspector> inspector;
    std::unique_ptr<TimelineModel> timeline;

    // Answers of at most maxTokens tokens, sampled at `temperature` (0: greedy) with seed 42.
    explicit ChatFixture(int maxTokens, float temperature = 0.0f) {
        store.open(QStringLiteral(":memory:"));
        chat = std::make_unique<ChatController>(&engine, &sampling, &store);
        tester = std::make_unique<QAbstractItemModelTester>(chat->messages(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        inspector = std::make_unique<StepInspector>(chat.get(), nullptr);
        timeline = std::make_unique<TimelineModel>(chat.get(), inspector.get(), nullptr);
        SamplerParams p;
        p.temperature = temperature;
        p.seed = 42;
        chat->setSamplerOverride(p);
        sampling.setMaxTokens(maxTokens);
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
        for (int i = 0; i < ms / 20 && timeline->busy(); ++i) QTest::qWait(20);
        return !timeline->busy();
    }
};

// Every GUI test's initTestCase: settings and data in Qt's test locations.
inline void isolateSettings() {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("InferscopeTests"));
}

}  // namespace inferscope::testing_gui
