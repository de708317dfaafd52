#include "app/pacer.h"

#include <QElapsedTimer>
#include <QTimer>
#include <algorithm>
#include <limits>

namespace inferscope {
namespace {

class QtAlarm final : public PacerClock::Alarm {
public:
    explicit QtAlarm(std::function<void()> ring) {
        timer_.setSingleShot(true);
        timer_.setTimerType(Qt::PreciseTimer);
        QObject::connect(&timer_, &QTimer::timeout, &timer_, std::move(ring));
    }
    void start(qint64 ms) override { timer_.start(int(std::clamp<qint64>(ms, 0, std::numeric_limits<int>::max()))); }
    void stop() override { timer_.stop(); }
    bool active() const override { return timer_.isActive(); }

private:
    QTimer timer_;
};

class QtPacerClock final : public PacerClock {
public:
    QtPacerClock() { since_.start(); }
    qint64 now() const override { return since_.elapsed(); }
    std::unique_ptr<Alarm> alarm(std::function<void()> ring) override { return std::make_unique<QtAlarm>(std::move(ring)); }

private:
    QElapsedTimer since_;
};

}  // namespace

PacerClock& PacerClock::app() {
    static QtPacerClock clock;
    return clock;
}

Pacer::Pacer(qint64 intervalMs, std::function<void()> action, PacerClock& clock)
    : intervalMs_(intervalMs), action_(std::move(action)), clock_(&clock), alarm_(clock.alarm([this] { ring(); })) {}

void Pacer::setClock(PacerClock& clock) {
    if (&clock == clock_) return;
    clock_ = &clock;
    alarm_ = clock.alarm([this] { ring(); });
    lastRun_.reset();
}

void Pacer::request() {
    if (pending()) return;
    if (due()) {
        ran();
        if (action_) action_();
        return;
    }
    alarm_->start(intervalLeft());
}

void Pacer::runAfter(qint64 ms) { alarm_->start(ms); }

void Pacer::cancel() { alarm_->stop(); }

bool Pacer::due() const { return !lastRun_ || clock_->now() - *lastRun_ >= intervalMs_ - earlyMs_; }

qint64 Pacer::intervalLeft() const { return lastRun_ ? std::max<qint64>(0, *lastRun_ + intervalMs_ - clock_->now()) : 0; }

void Pacer::ran() {
    alarm_->stop();
    lastRun_ = clock_->now();
}

void Pacer::ring() {
    lastRun_ = clock_->now();
    if (action_) action_();
}

}  // namespace inferscope
