#pragma once
// N sessions on one model: one copy of the weights, one compute thread, N KV caches (a server's
// slots). Each session is an Engine, used by one thread at a time as any engine is; their forward
// passes run on the group's compute thread, where every session's decode step joins one batch
// (shared_passes.h: continuous batching, chunked prefill).
//
// The context: `options.contextLength` is the total KV budget, split evenly (llama.cpp's server
// splits its -c among -np slots the same way); 0 takes the model's trained length (or the largest
// that fits in memory now) as the total.

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/error.h"
#include "engine/engine.h"
#include "engine/shared_passes.h"

namespace inferscope {

class EngineGroup {
public:
    // Loads the model on the compute thread and makes `sessions` contexts (1..64). Errors: those of
    // Engine::load, or InvalidArgument when the budget leaves a session fewer than 16 positions.
    static Result<std::unique_ptr<EngineGroup>> load(const EngineOptions& options, int32_t sessions,
                                                     std::chrono::microseconds gather = std::chrono::milliseconds(10),
                                                     const LoadProgress& progress = {});
    ~EngineGroup();  // no session may be generating

    size_t size() const { return sessions_.size(); }
    Engine& session(size_t i) { return *sessions_[i]; }
    const Engine& session(size_t i) const { return *sessions_[i]; }
    SharedPassStats stats() const { return passes_->stats(); }
    int32_t totalContext() const;  // the budget: every session's capacity summed
    // Positions of session i's KV cache in use as its last pass left them (any thread; while it
    // generates, its own cachedTokens() may not be read from another).
    int32_t positionsInUse(size_t i) const { return passes_->extentOf(*sessions_[i]->context_); }

private:
    EngineGroup() = default;
    std::unique_ptr<SharedPasses> passes_;  // declared first: destroyed after the sessions
    std::vector<std::unique_ptr<Engine>> sessions_;
};

}  // namespace inferscope
