#include "server/slot_pool.h"

#include "engine/engine.h"
#include "server/slot_worker.h"

namespace inferscope::server {

SlotPool::SlotPool() = default;
SlotPool::~SlotPool() = default;

Result<void> SlotPool::load(const EngineOptions& options, int32_t slots, const std::optional<EngineOptions>& draft) {
    auto group = EngineGroup::load(options, slots);
    if (!group) return std::unexpected(group.error());
    group_ = std::move(*group);
    for (size_t i = 0; i < group_->size(); ++i) {
        auto worker = std::make_unique<SlotWorker>(group_->session(i), draft);
        if (!worker->ok()) return std::unexpected(worker->loadError());
        workers_.push_back(std::move(worker));
        auto live = std::make_unique<Live>();
        const KvCacheStats kv = group_->session(i).kvStats();  // no work runs yet
        live->capacity = group_->session(i).contextLength();
        live->kvBytesPerToken = kv.bytesPerToken;
        live->kvBytes = kv.bytesReserved;
        live_.push_back(std::move(live));
    }
    return {};
}

const Engine& SlotPool::engine(size_t slot) const { return workers_[slot]->engine(); }

std::span<const int32_t> SlotPool::cachedTokens(size_t slot) const { return workers_[slot]->engine().cachedTokens(); }

void SlotPool::post(size_t slot, std::function<void(Engine&, Engine*)> work) {
    Live& live = *live_[slot];
    workers_[slot]->post([&live, work = std::move(work)](Engine& engine, Engine* draft) {
        live.busy = true;
        live.requests += 1;
        work(engine, draft);
        live.cachedTokens = int32_t(engine.cachedTokens().size());
        live.busy = false;
    });
}

SlotState SlotPool::state(size_t slot) const {
    const Live& live = *live_[slot];
    const bool busy = live.busy.load();
    // While a request runs, what its last pass left (the engine's own list is its thread's).
    const int32_t cached = busy ? group_->positionsInUse(slot) : live.cachedTokens.load();
    return {busy, cached, live.capacity, live.kvBytesPerToken, live.kvBytes, live.requests.load()};
}

}  // namespace inferscope::server
