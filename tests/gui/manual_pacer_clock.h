#pragma once
// A PacerClock that only moves when a test says so: handed to the paced objects (ChatModel,
// StepInspector, KvCacheView, or AppGraph::Options::pacerClock for all of them), it lets a test
// check what a person sees N ms later by advancing N ms, at once and exactly, instead of sleeping
// and hoping the timer fired.
#include <algorithm>
#include <vector>

#include "app/pacer.h"

namespace inferscope::testing_gui {

class ManualPacerClock final : public PacerClock {
public:
    ManualPacerClock() = default;
    ManualPacerClock(const ManualPacerClock&) = delete;
    ManualPacerClock& operator=(const ManualPacerClock&) = delete;
    // Alarms that outlive the clock (their owners destroyed after it) never ring again.
    ~ManualPacerClock() override {
        for (ManualAlarm* a : alarms_) a->clock_ = nullptr;
    }

    qint64 now() const override { return now_; }
    std::unique_ptr<Alarm> alarm(std::function<void()> ring) override { return std::make_unique<ManualAlarm>(this, std::move(ring)); }

    // Moves time on by `ms`, ringing on the way, synchronously, every alarm due by then: in the
    // order of their times (of their starts when equal), each with now() at its own time. An
    // alarm that a ring starts rings too if it falls due within the `ms`.
    void advance(qint64 ms) {
        const qint64 end = now_ + ms;
        while (ManualAlarm* next = nextDueBy(end)) {
            now_ = next->at_;
            next->armed_ = false;
            next->ring_();
        }
        now_ = end;
    }
    // How many alarms are armed (a test checks nothing else is waiting).
    int armed() const { return int(std::count_if(alarms_.begin(), alarms_.end(), [](const ManualAlarm* a) { return a->armed_; })); }

private:
    class ManualAlarm final : public Alarm {
    public:
        ManualAlarm(ManualPacerClock* clock, std::function<void()> ring) : clock_(clock), ring_(std::move(ring)) { clock_->alarms_.push_back(this); }
        ~ManualAlarm() override {
            if (clock_) std::erase(clock_->alarms_, this);
        }
        void start(qint64 ms) override {
            if (!clock_) return;
            armed_ = true;
            at_ = clock_->now_ + std::max<qint64>(0, ms);
            order_ = ++clock_->starts_;
        }
        void stop() override { armed_ = false; }
        bool active() const override { return armed_; }

        ManualPacerClock* clock_;
        std::function<void()> ring_;
        bool armed_ = false;
        qint64 at_ = 0;
        quint64 order_ = 0;
    };

    ManualAlarm* nextDueBy(qint64 end) const {
        ManualAlarm* next = nullptr;
        for (ManualAlarm* a : alarms_)
            if (a->armed_ && a->at_ <= end && (!next || a->at_ < next->at_ || (a->at_ == next->at_ && a->order_ < next->order_))) next = a;
        return next;
    }

    qint64 now_ = 0;
    quint64 starts_ = 0;
    std::vector<ManualAlarm*> alarms_;
};

}  // namespace inferscope::testing_gui
