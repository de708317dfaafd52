#include "server/slot_worker.h"

namespace inferscope::server {

SlotWorker::SlotWorker(const EngineOptions& options) : thread_([this, options] { loop(options); }) {
    std::unique_lock lock(mutex_);
    wake_.wait(lock, [this] { return loaded_; });
}

SlotWorker::~SlotWorker() {
    {
        std::lock_guard lock(mutex_);
        quit_ = true;
    }
    wake_.notify_all();
    thread_.join();
}

void SlotWorker::post(std::function<void(Engine&)> work) {
    {
        std::lock_guard lock(mutex_);
        work_.push_back(std::move(work));
    }
    wake_.notify_all();
}

void SlotWorker::loop(EngineOptions options) {
    auto loaded = Engine::load(options);
    {
        std::lock_guard lock(mutex_);
        if (loaded) engine_ = std::move(*loaded);
        else loadError_ = loaded.error();
        loaded_ = true;
    }
    wake_.notify_all();
    std::unique_lock lock(mutex_);
    for (;;) {
        wake_.wait(lock, [this] { return quit_ || !work_.empty(); });
        if (work_.empty()) break;  // quit, nothing left to run
        auto work = std::move(work_.front());
        work_.pop_front();
        lock.unlock();
        if (engine_) work(*engine_);
        lock.lock();
    }
    lock.unlock();
    engine_.reset();  // freed on the thread that made it
}

}  // namespace inferscope::server
