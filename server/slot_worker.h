#pragma once
// One slot's thread: runs the work posted to it, one piece at a time, on its session of the
// shared model (engine_group.h: the session's passes run on the group's compute thread) until
// destroyed (which first lets the piece in progress finish). A draft model for speculative
// decoding is the slot's own: loaded, used and destroyed on this thread only.

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
    // Starts the thread and waits for the draft model's load when one is asked for; ok() is
    // false when it failed (loadError()).
    SlotWorker(Engine& engine, const std::optional<EngineOptions>& draft);
    ~SlotWorker();
    SlotWorker(const SlotWorker&) = delete;
    SlotWorker& operator=(const SlotWorker&) = delete;

    Engine& engine() const { return engine_; }
    Engine* draft() const { return draft_.get(); }  // null: no draft model
    bool ok() const { return !failed_; }
    const Error& loadError() const { return loadError_; }
    // Queues work(engine, draft) for the thread and returns at once.
    using Work = std::function<void(Engine&, Engine*)>;
    void post(Work work);

private:
    void loop(std::optional<EngineOptions> draft);

    Engine& engine_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<Work> work_;
    bool loaded_ = false, quit_ = false, failed_ = false;
    std::unique_ptr<Engine> draft_;
    Error loadError_;
    std::thread thread_;
};

}  // namespace inferscope::server
