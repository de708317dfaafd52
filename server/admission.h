#pragma once
// Who runs next: requests take a ticket in arrival order (first in, first out), at most
// `maxWaiting` wait beyond the slots that are free, and a ticket becomes a slot when it is at the
// front of the line, its prompt is known (tokenized) and a slot is free. Of the free slots, the
// one whose KV cache shares the longest prefix with the prompt is taken (the engine then prefills
// only the rest). Thread-safe; callbacks run on the thread that made the slot available, outside
// the lock.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

namespace inferscope::server {

// Of the free slots' cached sequences, the one sharing the longest prefix with `prompt` (the
// first such; -1 when none is free). Pure: unit-tested without engines.
int pickSlot(const std::vector<std::span<const int32_t>>& freeCaches, std::span<const int32_t> prompt);

class Admission {
public:
    using Ticket = uint64_t;
    using OnSlot = std::function<void(size_t slot)>;
    // cachedTokens(slot): what a free slot's cache holds (read only while the slot is free).
    Admission(size_t slots, size_t maxWaiting, std::function<std::span<const int32_t>(size_t)> cachedTokens);

    // A place in line, or nothing when the line is full.
    std::optional<Ticket> enter();
    // The ticket's prompt is known: onSlot(slot) is called once it is its turn and a slot is free.
    void ready(Ticket ticket, std::vector<int32_t> prompt, OnSlot onSlot);
    // Gives up a place not yet served. False when the ticket already has its slot (or is unknown).
    bool leave(Ticket ticket);
    // A slot's request is done: the slot serves the next in line.
    void release(size_t slot);

    size_t slots() const;
    size_t idle() const;     // slots no request holds
    size_t waiting() const;  // tickets without a slot

private:
    struct Waiter {
        Ticket ticket;
        bool ready = false;
        std::vector<int32_t> prompt;
        OnSlot onSlot;
    };
    void pump();  // hands free slots to the front of the line

    mutable std::mutex mutex_;
    std::deque<Waiter> line_;
    std::vector<bool> busy_;
    size_t maxWaiting_;
    Ticket next_ = 1;
    std::function<std::span<const int32_t>(size_t)> cachedTokens_;
};

}  // namespace inferscope::server
