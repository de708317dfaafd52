#pragma once
// The server's slots: N engines, each with its own KV cache and its own thread, handed to one
// request at a time. A request takes the free slot whose cache shares the longest prefix with its
// prompt (the engine then prefills only the rest), waits in a bounded queue when none is free, and
// is refused past it.
//
// Each slot is a whole Engine: the weights are memory-mapped from the file by each, so the page
// cache holds one copy of them (for the file's own types, --compute auto); every slot adds its KV
// cache, activations and oneDNN scratch (a --compute conversion would add its weights again). The
// engine is loaded and always run on its slot's thread: OpenMP's team and oneDNN's JIT kernels
// belong to the thread that computes (see ARCHITECTURE, Threads and warm-up), so the connection
// threads hand their work to it rather than computing themselves.

#include <condition_variable>
#include <cstdint>
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

// Of the free slots' cached sequences, the one sharing the longest prefix with `prompt` (the
// first such; -1 when none is free). Pure: unit-tested without engines.
int pickSlot(const std::vector<std::span<const int32_t>>& freeCaches, std::span<const int32_t> prompt);

class SlotWorker;

class SlotPool {
public:
    explicit SlotPool(size_t maxQueue);
    ~SlotPool();  // stops and joins the slots' threads
    // Starts a slot's thread and loads an engine on it; the engine lives as long as the pool.
    Result<const Engine*> addSlot(const EngineOptions& options);
    size_t size() const;
    size_t idle() const;  // slots no request holds

    // A slot held by one request; returned to the pool when the lease is destroyed.
    class Lease {
    public:
        Lease(SlotPool& pool, size_t slot) : pool_(pool), slot_(slot) {}
        ~Lease() { pool_.release(slot_); }
        Lease(const Lease&) = delete;
        Lease& operator=(const Lease&) = delete;
        // Runs work(engine) on the slot's thread and returns when it has.
        void run(const std::function<void(Engine&)>& work) const;
        size_t slot() const { return slot_; }

    private:
        SlotPool& pool_;
        size_t slot_;
    };

    enum class Refusal { QueueFull, Cancelled };
    // Waits for a slot while the queue has room; `gone` (asked every 50 ms while waiting) gives up.
    // Returns the lease or why there is none.
    struct Acquired {
        std::unique_ptr<Lease> lease;
        Refusal refusal = Refusal::QueueFull;
    };
    Acquired acquire(std::span<const int32_t> prompt, const std::function<bool()>& gone);

private:
    void release(size_t slot);
    mutable std::mutex mutex_;
    std::condition_variable freed_;
    std::vector<std::unique_ptr<SlotWorker>> workers_;
    std::vector<bool> busy_;
    size_t waiting_ = 0;
    size_t maxQueue_;
};

}  // namespace inferscope::server
