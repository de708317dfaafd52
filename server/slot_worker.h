#pragma once
// One slot's thread: loads its engine, then runs the work posted to it, one piece at a time, until
// destroyed (which first lets the piece in progress finish). The engine is created, used and
// destroyed on this thread only.

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "engine/engine.h"

namespace inferscope::server {

class SlotWorker {
public:
    // Starts the thread and waits for the load (and the draft model's, for speculative decoding);
    // engine() is null when one failed (loadError()).
    SlotWorker(const EngineOptions& options, const std::optional<EngineOptions>& draft);
    ~SlotWorker();
    SlotWorker(const SlotWorker&) = delete;
    SlotWorker& operator=(const SlotWorker&) = delete;

    Engine* engine() const { return engine_.get(); }
    Engine* draft() const { return draft_.get(); }  // null: no draft model
    const Error& loadError() const { return loadError_; }
    // Queues work(engine, draft) for the thread and returns at once.
    using Work = std::function<void(Engine&, Engine*)>;
    void post(Work work);

private:
    void loop(EngineOptions options, std::optional<EngineOptions> draft);

    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<Work> work_;
    bool loaded_ = false, quit_ = false;
    std::unique_ptr<Engine> engine_, draft_;
    Error loadError_;
    std::thread thread_;
};

}  // namespace inferscope::server
