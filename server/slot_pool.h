#pragma once
// The server's slots: N engines, each with its own KV cache and its own thread. Which request runs
// on which slot is Admission's choice (admission.h); the pool only runs work on a slot's thread.
//
// Each slot is a whole Engine: the weights are memory-mapped from the file by each, so the page
// cache holds one copy of them (for the file's own types, --compute auto); every slot adds its KV
// cache, activations and oneDNN scratch (a --compute conversion would add its weights again). The
// engine is loaded and always run on its slot's thread: OpenMP's team and oneDNN's JIT kernels
// belong to the thread that computes (see ARCHITECTURE, Threads and warm-up).

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "common/error.h"

namespace inferscope {
class Engine;
struct EngineOptions;
}  // namespace inferscope

namespace inferscope::server {

class SlotWorker;

class SlotPool {
public:
    SlotPool();
    ~SlotPool();  // waits for running work, then stops and joins the slots' threads
    // Starts a slot's thread and loads an engine on it; the engine lives as long as the pool.
    Result<const Engine*> addSlot(const EngineOptions& options);
    size_t size() const;
    // What slot i's KV cache holds; only while no work runs on it.
    std::span<const int32_t> cachedTokens(size_t slot) const;
    // Runs work(engine) on slot i's thread, later; one piece of work at a time per slot.
    void post(size_t slot, std::function<void(Engine&)> work);

private:
    mutable std::mutex mutex_;
    std::vector<std::unique_ptr<SlotWorker>> workers_;
};

}  // namespace inferscope::server
