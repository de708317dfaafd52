#pragma once
// One slot's thread: loads its engine, then runs one piece of work at a time on it for whoever
// holds the slot (SlotPool::Lease::run), until destroyed. The engine is created, used and destroyed
// on this thread only.

#include <condition_variable>
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
    // Runs work(engine) on the thread; returns when it is done. One caller at a time (the lease holder).
    void run(const std::function<void(Engine&)>& work);

private:
    void loop(EngineOptions options);

    std::mutex mutex_;
    std::condition_variable wake_;
    const std::function<void(Engine&)>* work_ = nullptr;
    bool loaded_ = false, done_ = false, quit_ = false;
    std::unique_ptr<Engine> engine_;
    Error loadError_;
    std::thread thread_;
};

}  // namespace inferscope::server
