#pragma once
// StepGate: holds the engine's thread after step `holdAt` of each answer until released, stopped
// or destroyed, so that a test that looks at an answer while it streams sees it streaming however
// fast the machine is (on a quiet machine the bundled model writes 400 tokens before a 50 ms poll
// comes round). What it holds is the worker thread alone: the GUI thread keeps running, and a
// stop or a closing window cancels the job, which lets the gate open by itself as a slow model's
// next step would.

#include <QCoreApplication>
#include <QPointer>
#include <QTest>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "engine/engine_controller.h"

namespace inferscope {

class StepGate {
public:
    StepGate(EngineController& engine, int holdAt) : engine_(&engine), s_(std::make_shared<State>()) {
        s_->holdAt = holdAt;
        engine.setStepHookForTesting([s = s_](int step, const std::function<bool()>& cancelled) {
            if (step != s->holdAt) return;
            std::unique_lock lock(s->m);
            s->holding = true;
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
            while (!s->released && !cancelled() && std::chrono::steady_clock::now() < deadline)
                s->cv.wait_for(lock, std::chrono::milliseconds(5));
            s->expired = s->expired || (!s->released && !cancelled());
            s->holding = false;
        });
    }
    ~StepGate() {
        release();
        if (engine_) engine_->setStepHookForTesting({});  // the test may have closed the app first
    }
    StepGate(const StepGate&) = delete;
    StepGate& operator=(const StepGate&) = delete;

    // True while the engine waits at step holdAt.
    bool holding() const {
        std::lock_guard lock(s_->m);
        return s_->holding;
    }
    // Waits until the engine holds, then delivers the steps it sent before holding (they were
    // posted to the GUI thread first): what the window shows is the answer up to step holdAt.
    bool waitHeld(int ms = 20000) {
        if (!QTest::qWaitFor([this] { return holding(); }, ms)) return false;
        QCoreApplication::sendPostedEvents();
        QCoreApplication::processEvents();
        return true;
    }
    // True when the gate opened by its 60 s deadline, neither released nor cancelled: whoever
    // should have stopped the held answer (a stop, a closing window) waited for it instead.
    bool expired() const {
        std::lock_guard lock(s_->m);
        return s_->expired;
    }
    // Lets this and every later answer run on.
    void release() {
        {
            std::lock_guard lock(s_->m);
            s_->released = true;
        }
        s_->cv.notify_all();
    }

private:
    struct State {
        mutable std::mutex m;
        std::condition_variable cv;
        int holdAt = 0;
        bool holding = false;
        bool released = false;
        bool expired = false;
    };
    QPointer<EngineController> engine_;
    std::shared_ptr<State> s_;
};

}  // namespace inferscope
