#pragma once
// One slot's thread: loads its engine, then runs the work posted to it, one piece at a time, until
// destroyed (which first lets the piece in progress finish). The engine is created, used and
// destroyed on this thread only.

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "engine/engine.h"

namespace inferscope::server {

class SlotWorker {
public:
    // Starts the thread and waits for the load; engine() is null when it failed (loadError()).
    explicit SlotWorker(const EngineOptions& options);
    ~SlotWorker();
    SlotWorker(const SlotWorker&) = delete;
    SlotWorker& operator=(const SlotWorker&) = delete;

    Engine* engine() const { return engine_.get(); }
    const Error& loadError() const { return loadError_; }
    // Queues work(engine) for the thread and returns at once.
    void post(std::function<void(Engine&)> work);

private:
    void loop(EngineOptions options);

    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::function<void(Engine&)>> work_;
    bool loaded_ = false, quit_ = false;
    std::unique_ptr<Engine> engine_;
    Error loadError_;
    std::thread thread_;
};

}  // namespace inferscope::server
