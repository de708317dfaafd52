#include "server/slot_worker.h"

namespace inferscope::server {

SlotWorker::SlotWorker(Engine& engine, const std::optional<EngineOptions>& draft)
    : engine_(engine), thread_([this, draft] { loop(draft); }) {
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

void SlotWorker::post(Work work) {
    {
        std::lock_guard lock(mutex_);
        work_.push_back(std::move(work));
    }
    wake_.notify_all();
}

void SlotWorker::loop(std::optional<EngineOptions> draft) {
    auto draftLoaded = draft ? Engine::load(*draft) : Result<std::unique_ptr<Engine>>(nullptr);
    {
        std::lock_guard lock(mutex_);
        if (!draftLoaded) {
            failed_ = true;
            loadError_ = Error{draftLoaded.error().kind, "draft model: " + draftLoaded.error().message};
        } else {
            draft_ = std::move(*draftLoaded);
        }
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
        if (!failed_) work(engine_, draft_.get());
        lock.lock();
    }
    lock.unlock();
    draft_.reset();  // freed on the thread that made it
}

}  // namespace inferscope::server
