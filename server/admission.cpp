#include "server/admission.h"

#include <algorithm>

#include "common/prefix.h"

namespace inferscope::server {

int pickSlot(const std::vector<std::span<const int32_t>>& freeCaches, std::span<const int32_t> prompt) {
    int best = -1;
    size_t bestShared = 0;
    for (size_t i = 0; i < freeCaches.size(); ++i) {
        const size_t shared = commonPrefixLength(freeCaches[i], prompt);
        if (best < 0 || shared > bestShared) {
            best = int(i);
            bestShared = shared;
        }
    }
    return best;
}

Admission::Admission(size_t slots, size_t maxWaiting, std::function<std::span<const int32_t>(size_t)> cachedTokens)
    : busy_(slots, false), maxWaiting_(maxWaiting), cachedTokens_(std::move(cachedTokens)) {}

std::optional<Admission::Ticket> Admission::enter() {
    std::lock_guard lock(mutex_);
    const size_t free = size_t(std::count(busy_.begin(), busy_.end(), false));
    if (line_.size() >= free + maxWaiting_) return std::nullopt;
    line_.push_back(Waiter{next_, false, {}, {}});
    return next_++;
}

void Admission::ready(Ticket ticket, std::vector<int32_t> prompt, OnSlot onSlot) {
    {
        std::lock_guard lock(mutex_);
        auto it = std::find_if(line_.begin(), line_.end(), [&](const Waiter& w) { return w.ticket == ticket; });
        if (it == line_.end()) return;  // left meanwhile
        it->ready = true;
        it->prompt = std::move(prompt);
        it->onSlot = std::move(onSlot);
    }
    pump();
}

bool Admission::leave(Ticket ticket) {
    bool left = false;
    {
        std::lock_guard lock(mutex_);
        auto it = std::find_if(line_.begin(), line_.end(), [&](const Waiter& w) { return w.ticket == ticket; });
        if (it != line_.end()) {
            line_.erase(it);
            left = true;
        }
    }
    if (left) pump();  // the one behind may now be at the front
    return left;
}

void Admission::release(size_t slot) {
    {
        std::lock_guard lock(mutex_);
        if (slot < busy_.size()) busy_[slot] = false;
    }
    pump();
}

void Admission::pump() {
    for (;;) {
        OnSlot call;
        size_t slot = 0;
        {
            std::lock_guard lock(mutex_);
            if (line_.empty() || !line_.front().ready) return;
            std::vector<std::span<const int32_t>> caches;
            std::vector<size_t> free;
            for (size_t i = 0; i < busy_.size(); ++i)
                if (!busy_[i]) {
                    free.push_back(i);
                    caches.push_back(cachedTokens_ ? cachedTokens_(i) : std::span<const int32_t>());
                }
            const int pick = pickSlot(caches, line_.front().prompt);
            if (pick < 0) return;
            slot = free[size_t(pick)];
            busy_[slot] = true;
            call = std::move(line_.front().onSlot);
            line_.pop_front();
        }
        if (call) call(slot);
    }
}

size_t Admission::slots() const {
    std::lock_guard lock(mutex_);
    return busy_.size();
}

size_t Admission::idle() const {
    std::lock_guard lock(mutex_);
    return size_t(std::count(busy_.begin(), busy_.end(), false));
}

size_t Admission::waiting() const {
    std::lock_guard lock(mutex_);
    return line_.size();
}

}  // namespace inferscope::server
