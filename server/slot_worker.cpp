#include "server/slot_worker.h"

namespace inferscope::server {

SlotWorker::SlotWorker(const EngineOptions& options, const std::optional<EngineOptions>& draft)
    : thread_([this, options, draft] { loop(options, draft); }) {
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

void SlotWorker::loop(EngineOptions options, std::optional<EngineOptions> draft) {
    auto loaded = Engine::load(options);
    auto draftLoaded = loaded && draft ? Engine::load(*draft) : Result<std::unique_ptr<Engine>>(nullptr);
    {
        std::lock_guard lock(mutex_);
        if (!loaded) {
            loadError_ = loaded.error();
        } else if (!draftLoaded) {
            loadError_ = Error{draftLoaded.error().kind, "draft model: " + draftLoaded.error().message};
        } else {
            engine_ = std::move(*loaded);
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
        if (engine_) work(*engine_, draft_.get());
        lock.lock();
    }
    lock.unlock();
    draft_.reset();  // freed on the thread that made them
    engine_.reset();
}

}  // namespace inferscope::server
