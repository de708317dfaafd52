#include "server/slot_pool.h"

#include "engine/engine.h"
#include "server/slot_worker.h"

namespace inferscope::server {

SlotPool::SlotPool() = default;
SlotPool::~SlotPool() = default;

Result<const Engine*> SlotPool::addSlot(const EngineOptions& options, const std::optional<EngineOptions>& draft) {
    auto worker = std::make_unique<SlotWorker>(options, draft);
    if (!worker->engine()) return std::unexpected(worker->loadError());
    const Engine* engine = worker->engine();
    std::lock_guard lock(mutex_);
    workers_.push_back(std::move(worker));
    return engine;
}

size_t SlotPool::size() const {
    std::lock_guard lock(mutex_);
    return workers_.size();
}

std::span<const int32_t> SlotPool::cachedTokens(size_t slot) const {
    std::lock_guard lock(mutex_);
    return workers_[slot]->engine()->cachedTokens();
}

void SlotPool::post(size_t slot, std::function<void(Engine&, Engine*)> work) {
    SlotWorker* worker = nullptr;
    {
        std::lock_guard lock(mutex_);
        worker = workers_[slot].get();
    }
    worker->post(std::move(work));
}

}  // namespace inferscope::server
