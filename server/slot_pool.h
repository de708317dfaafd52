#pragma once
// The server's slots: N sessions of one model (engine_group.h: one copy of the weights, one
// compute thread that runs every slot's decode step in one batch, each slot its own KV cache), each
// with its own thread. Which request runs on which slot is Admission's choice (admission.h); the
// pool only runs work on a slot's thread.
//
// The context given is the KV budget of all the slots together, split evenly.

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "common/error.h"
#include "engine/engine.h"
#include "engine/engine_group.h"

namespace inferscope::server {

class SlotWorker;

// What one slot holds now, for /slots and /metrics (read from any thread).
struct SlotState {
    bool busy = false;
    int32_t cachedTokens = 0;   // positions of its KV cache in use
    int32_t capacity = 0;       // its share of the budget
    uint64_t kvBytesPerToken = 0;
    uint64_t kvBytes = 0;       // its KV cache's bytes (allocated for the whole share)
    uint64_t requests = 0;      // requests it has run
};

class SlotPool {
public:
    SlotPool();
    ~SlotPool();  // waits for running work, then stops and joins the slots' threads
    // Loads the model once and starts `slots` slots (each with a draft model of its own for
    // speculative decoding, when asked).
    Result<void> load(const EngineOptions& options, int32_t slots, const std::optional<EngineOptions>& draft = std::nullopt);
    size_t size() const { return workers_.size(); }
    const Engine& engine(size_t slot) const;
    // What slot i's KV cache holds; only while no work runs on it.
    std::span<const int32_t> cachedTokens(size_t slot) const;
    // Runs work(engine, draft model or null) on slot i's thread, later; one piece at a time per slot.
    void post(size_t slot, std::function<void(Engine&, Engine*)> work);

    SlotState state(size_t slot) const;
    SharedPassStats passStats() const { return group_->stats(); }

private:
    struct Live {  // a slot's figures, written by its thread
        std::atomic<bool> busy{false};
        std::atomic<int32_t> cachedTokens{0};
        std::atomic<uint64_t> requests{0};
        int32_t capacity = 0;
        uint64_t kvBytesPerToken = 0, kvBytes = 0;
    };
    std::unique_ptr<EngineGroup> group_;  // declared first: destroyed after the slots' threads
    std::vector<std::unique_ptr<Live>> live_;
    std::vector<std::unique_ptr<SlotWorker>> workers_;
};

}  // namespace inferscope::server
