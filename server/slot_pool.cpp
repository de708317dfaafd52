#include "server/slot_pool.h"

#include <algorithm>
#include <chrono>

#include "engine/engine.h"
#include "server/slot_worker.h"

namespace inferscope::server {

int pickSlot(const std::vector<std::span<const int32_t>>& freeCaches, std::span<const int32_t> prompt) {
    int best = -1;
    size_t bestShared = 0;
    for (size_t i = 0; i < freeCaches.size(); ++i) {
        const auto& cache = freeCaches[i];
        const size_t n = std::min(cache.size(), prompt.size());
        const size_t shared = size_t(std::mismatch(cache.begin(), cache.begin() + ptrdiff_t(n), prompt.begin()).first - cache.begin());
        if (best < 0 || shared > bestShared) {
            best = int(i);
            bestShared = shared;
        }
    }
    return best;
}

SlotPool::SlotPool(size_t maxQueue) : maxQueue_(maxQueue) {}
SlotPool::~SlotPool() = default;

Result<const Engine*> SlotPool::addSlot(const EngineOptions& options) {
    auto worker = std::make_unique<SlotWorker>(options);
    if (!worker->engine()) return std::unexpected(worker->loadError());
    const Engine* engine = worker->engine();
    std::lock_guard lock(mutex_);
    workers_.push_back(std::move(worker));
    busy_.push_back(false);
    freed_.notify_all();
    return engine;
}

size_t SlotPool::size() const {
    std::lock_guard lock(mutex_);
    return workers_.size();
}

size_t SlotPool::idle() const {
    std::lock_guard lock(mutex_);
    return size_t(std::count(busy_.begin(), busy_.end(), false));
}

void SlotPool::Lease::run(const std::function<void(Engine&)>& work) const {
    SlotWorker* worker = nullptr;
    {
        std::lock_guard lock(pool_.mutex_);
        worker = pool_.workers_[slot_].get();
    }
    worker->run(work);
}

SlotPool::Acquired SlotPool::acquire(std::span<const int32_t> prompt, const std::function<bool()>& gone) {
    std::unique_lock lock(mutex_);
    bool queued = false;
    for (;;) {
        std::vector<std::span<const int32_t>> caches;
        std::vector<size_t> free;
        for (size_t i = 0; i < workers_.size(); ++i)
            if (!busy_[i]) {  // an idle slot's thread does not touch its engine
                free.push_back(i);
                caches.push_back(workers_[i]->engine()->cachedTokens());
            }
        if (const int pick = pickSlot(caches, prompt); pick >= 0) {
            if (queued) --waiting_;
            busy_[free[size_t(pick)]] = true;
            return {std::make_unique<Lease>(*this, free[size_t(pick)]), {}};
        }
        if (!queued) {
            if (waiting_ >= maxQueue_) return {nullptr, Refusal::QueueFull};
            ++waiting_;
            queued = true;
        }
        freed_.wait_for(lock, std::chrono::milliseconds(50));
        if (gone && gone()) {
            --waiting_;
            return {nullptr, Refusal::Cancelled};
        }
    }
}

void SlotPool::release(size_t slot) {
    {
        std::lock_guard lock(mutex_);
        busy_[slot] = false;
    }
    freed_.notify_one();
}

}  // namespace inferscope::server
