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
#include <optional>
#include <span>
#include <vector>

#include "common/error.h"
#include "engine/engine.h"

namespace inferscope::server {

class SlotWorker;

class SlotPool {
public:
    SlotPool();
    ~SlotPool();  // waits for running work, then stops and joins the slots' threads
    // Starts a slot's thread and loads an engine on it (and a draft model, for speculative
    // decoding); they live as long as the pool.
    Result<const Engine*> addSlot(const EngineOptions& options, const std::optional<EngineOptions>& draft = std::nullopt);
    size_t size() const;
    // What slot i's KV cache holds; only while no work runs on it.
    std::span<const int32_t> cachedTokens(size_t slot) const;
    // Runs work(engine, draft model or null) on slot i's thread, later; one piece at a time per slot.
    void post(size_t slot, std::function<void(Engine&, Engine*)> work);

private:
    mutable std::mutex mutex_;
    std::vector<std::unique_ptr<SlotWorker>> workers_;
};

}  // namespace inferscope::server
