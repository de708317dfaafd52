#pragma once
// Pacer: one throttled or delayed action of the GUI thread, on a PacerClock. Two uses:
//  - "at most every N ms" (request()): the views that follow a streaming answer — ChatModel's heat
//    map, StepInspector's step and details, KvCacheView's figures — each redraw costs the GUI
//    thread, and on two cores that comes out of the decode;
//  - "once, N ms from now" (runAfter()): work that waits for a setting to rest (the replay).
// The clock is injected: the app's is Qt's timers (PacerClock::app()); a test hands every paced
// object one ManualPacerClock (tests/gui/manual_pacer_clock.h) and advances it by hand, so what a
// person would see N ms later is checked exactly and without sleeping. GUI thread only.

#include <QtGlobal>
#include <functional>
#include <memory>
#include <optional>

namespace inferscope {

class PacerClock {
public:
    // A single-shot alarm: rings once, `ms` after start(); start() again re-arms it; stop() and
    // destroying it disarm it.
    class Alarm {
    public:
        virtual ~Alarm() = default;
        virtual void start(qint64 ms) = 0;
        virtual void stop() = 0;
        virtual bool active() const = 0;
    };

    virtual ~PacerClock() = default;
    virtual qint64 now() const = 0;  // milliseconds, monotonic
    virtual std::unique_ptr<Alarm> alarm(std::function<void()> ring) = 0;

    // The app's clock: a monotonic clock and precise Qt timers (never early: a coarse timer may
    // ring 5% before its time, and a run before the interval's end would break the pace).
    static PacerClock& app();
};

class Pacer {
public:
    // `action` is what the pacer runs when a run falls due; it may be empty for an owner that only
    // asks due() and reports its runs with ran().
    Pacer(qint64 intervalMs, std::function<void()> action, PacerClock& clock = PacerClock::app());
    Pacer(const Pacer&) = delete;
    Pacer& operator=(const Pacer&) = delete;

    // Another clock (a test's), set before the first request: the last run and a pending one
    // belonged to the previous clock and are forgotten.
    void setClock(PacerClock& clock);
    // A request this much before the interval's end runs at once. For actions that follow batches
    // coming about one interval apart, a few ms early or late: one a little early is taken with
    // its batch rather than drawn in a frame of its own a few ms later.
    void setEarlyMargin(qint64 ms) { earlyMs_ = ms; }

    // At most every interval: the action now when due(), else once at the interval's end; the
    // requests until then are that one run.
    void request();
    // The action once, `ms` from now; a later call moves it (the last call counts).
    void runAfter(qint64 ms);
    void cancel();
    bool pending() const { return alarm_->active(); }
    // No run yet, or the interval since the last one is over (less the early margin).
    bool due() const;
    // Milliseconds until the interval since the last run is over (0 when it is).
    qint64 intervalLeft() const;
    // The owner ran the action itself (at once: the end of an answer, a panel shown again): the
    // interval starts now and a pending run is dropped.
    void ran();

private:
    void ring();

    qint64 intervalMs_;
    qint64 earlyMs_ = 0;
    std::function<void()> action_;
    PacerClock* clock_;
    std::unique_ptr<PacerClock::Alarm> alarm_;
    std::optional<qint64> lastRun_;
};

}  // namespace inferscope
