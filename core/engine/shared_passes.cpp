#include "engine/shared_passes.h"

#include <algorithm>

#include "common/prefix.h"
#include "model/llama_model.h"

namespace inferscope {
namespace {
using Clock = std::chrono::steady_clock;
}

SharedPasses::SharedPasses(std::chrono::microseconds gather) : gather_(gather), thread_([this] { loop(); }) {}

SharedPasses::~SharedPasses() {
    {
        std::lock_guard lock(mutex_);
        quit_ = true;
    }
    wake_.notify_all();
    thread_.join();
}

void SharedPasses::run(const std::function<void()>& fn) {
    Pass pass;
    pass.task = fn;
    submit(pass);
}

std::span<const float> SharedPasses::forward(LlamaModel& model, LlamaContext& ctx, std::span<const int32_t> tokens, int32_t position0,
                                             CellOrigin origin, ForwardProbe* probe, float* everyRow) {
    Pass pass;
    pass.model = &model;
    pass.ctx = &ctx;
    pass.tokens = tokens;
    pass.position = position0;
    pass.origin = origin;
    pass.probe = probe;
    pass.everyRow = everyRow;
    submit(pass);
    return pass.logits;
}

void SharedPasses::submit(Pass& pass) {
    std::unique_lock lock(mutex_);
    pass.queued = Clock::now();
    // Only a decoding session's step joins a batch. A one-token prompt comes before its session
    // decodes: held for the batch, it would wait on sessions that may be waiting for it.
    const bool decode = pass.isDecode() && std::ranges::count(decoding_, pass.ctx) > 0;
    (decode ? decodes_ : others_).push_back(&pass);
    if (decode && std::ranges::count(waitFor_, pass.ctx) == 0) waitFor_.push_back(pass.ctx);
    wake_.notify_all();
    done_.wait(lock, [&pass] { return pass.done; });
}

void SharedPasses::beginDecoding(const LlamaContext& ctx) {
    std::lock_guard lock(mutex_);
    decoding_.push_back(&ctx);
    stats_.decoding = int32_t(decoding_.size());
    waitFor_.push_back(&ctx);
}

void SharedPasses::endDecoding(const LlamaContext& ctx) {
    {
        std::lock_guard lock(mutex_);
        std::erase(decoding_, &ctx);
        stats_.decoding = int32_t(decoding_.size());
        std::erase(waitFor_, &ctx);
    }
    wake_.notify_all();  // the others' batch may be complete now
}

bool SharedPasses::everyWaitedForIsPending() const {
    for (const LlamaContext* c : waitFor_)
        if (std::none_of(decodes_.begin(), decodes_.end(), [c](const Pass* p) { return p->ctx == c; })) return false;
    return true;
}

// The gather wait runs from the later of the oldest pass's arrival and the end of the last step:
// passes that queued while a step computed do not run the moment it ends, without the sessions
// that step served, whose next passes are about to come (that split 4 sessions into two batches
// of 2 that took turns, each always ready first).
Clock::time_point SharedPasses::gatherDeadline() const { return std::max(decodes_.front()->queued, stepEnded_) + gather_; }

bool SharedPasses::decodesReady() const {
    return !decodes_.empty() && (everyWaitedForIsPending() || Clock::now() >= gatherDeadline());
}

namespace {
int64_t secondsNow() { return std::chrono::duration_cast<std::chrono::seconds>(Clock::now().time_since_epoch()).count(); }
}  // namespace

void SharedPasses::countRate(int64_t second, uint64_t tokens) {
    if (second > rateSecond_) {  // shift the buckets by the seconds gone by
        const int64_t shift = std::min<int64_t>(second - rateSecond_, kRateWindow + 1);
        for (int i = kRateWindow; i >= 0; --i) rateBuckets_[i] = i >= shift ? rateBuckets_[i - shift] : 0;
        rateSecond_ = second;
    }
    rateBuckets_[0] += tokens;
}

SharedPassStats SharedPasses::stats() const {
    std::lock_guard lock(mutex_);
    SharedPassStats s = stats_;
    // The last kRateWindow whole seconds (now - kRateWindow .. now - 1); bucket j counts the
    // second rateSecond_ - j.
    const int64_t lag = secondsNow() - rateSecond_;
    uint64_t sum = 0;
    for (int64_t j = std::max<int64_t>(0, 1 - lag); j <= std::min<int64_t>(kRateWindow, kRateWindow - lag); ++j) sum += rateBuckets_[j];
    s.decodeTokensPerSecond = double(sum) / kRateWindow;
    return s;
}

int32_t SharedPasses::extentOf(const LlamaContext& ctx) const {
    std::lock_guard lock(mutex_);
    for (const Member& m : members_)
        if (m.ctx == &ctx) return int32_t(m.written.size());
    return 0;
}

void SharedPasses::addMember(LlamaContext& ctx) {
    std::lock_guard lock(mutex_);
    members_.push_back(Member{&ctx, {}});
}

void SharedPasses::forgetMembers() {
    std::lock_guard lock(mutex_);
    members_.clear();
}

void SharedPasses::noteWritten(const Pass& pass) {
    for (Member& m : members_)
        if (m.ctx == pass.ctx) {
            // A pass writes at its position: what the cache held from there on is overwritten.
            m.written.resize(size_t(pass.position));
            m.written.insert(m.written.end(), pass.tokens.begin(), pass.tokens.end());
            return;
        }
}

std::pair<const SharedPasses::Member*, size_t> SharedPasses::longestPrefix(const LlamaContext& into, std::span<const int32_t> tokens,
                                                                           size_t have) const {
    const Member* from = nullptr;
    size_t best = have + kMinCopy - 1;
    for (const Member& m : members_) {
        if (m.ctx == &into || m.ctx->cache().layout() != into.cache().layout()) continue;
        const size_t shared = commonPrefixLength(m.written, tokens);
        if (shared > best) {
            best = shared;
            from = &m;
        }
    }
    return {from, from ? best : have};
}

int32_t SharedPasses::copyLongestPrefix(LlamaContext& into, std::span<const int32_t> tokens, int32_t have) {
    {
        // Asked here first, so that a prompt no other cache shares does not wait for a step.
        std::lock_guard lock(mutex_);
        if (!longestPrefix(into, tokens, size_t(have)).first) return have;
    }
    int32_t got = have;
    // Between steps, on the compute thread: no pass writes any cache meanwhile, and members_ and
    // their tokens change only on this thread (under the lock, for the readers elsewhere).
    run([&] {
        const auto self = std::ranges::find_if(members_, [&into](const Member& m) { return m.ctx == &into; });
        const auto [from, n] = longestPrefix(into, tokens, size_t(have));
        if (!from || self == members_.end() || into.cache().used() != have) return;
        into.cache().copyPositions(from->ctx->cache(), have, int32_t(n));
        std::lock_guard lock(mutex_);
        self->written.assign(tokens.begin(), tokens.begin() + ptrdiff_t(n));
        got = int32_t(n);
        stats_.prefixCopies += 1;
        stats_.prefixTokensCopied += n - size_t(have);
    });
    return got;
}

void SharedPasses::runDecodes(std::vector<Pass*>& decodes) {
    // One decodeBatch per model (a server has one; a context made by another model cannot join).
    std::stable_sort(decodes.begin(), decodes.end(), [](const Pass* a, const Pass* b) { return a->model < b->model; });
    std::vector<DecodeSequence> batch;
    std::vector<std::span<const float>> logits;
    for (size_t from = 0; from < decodes.size();) {
        size_t to = from;
        while (to < decodes.size() && decodes[to]->model == decodes[from]->model) ++to;
        batch.clear();
        for (size_t i = from; i < to; ++i) batch.push_back({decodes[i]->ctx, decodes[i]->tokens[0], decodes[i]->position, decodes[i]->origin});
        logits.assign(batch.size(), {});
        if (decodes[from]->model->decodeBatch(batch, logits)) {
            for (size_t i = from; i < to; ++i) decodes[i]->logits = logits[i - from];
        } else {  // no memory for the batch's rows: one pass each, the same logits
            for (size_t i = from; i < to; ++i)
                decodes[i]->logits = decodes[i]->model->forward(*decodes[i]->ctx, decodes[i]->tokens, decodes[i]->position, decodes[i]->origin);
        }
        from = to;
    }
}

void SharedPasses::loop() {
    std::unique_lock lock(mutex_);
    for (;;) {
        // Decode passes are ready when every session waited for has one pending, or the oldest has
        // waited `gather`; another pass is ready at once.
        if (quit_ && decodes_.empty() && others_.empty()) return;
        if (others_.empty() && !decodesReady()) {
            if (decodes_.empty()) wake_.wait(lock);
            else wake_.wait_until(lock, gatherDeadline());
            continue;
        }
        std::vector<Pass*> decodes;
        if (decodesReady()) {
            if (!everyWaitedForIsPending()) stats_.gatherTimeouts += 1;
            decodes.assign(decodes_.begin(), decodes_.end());
            decodes_.clear();
            // A decoding session missing from this batch is busy elsewhere: the next batches do
            // not wait for it until its pass arrives (submit() puts it back).
            std::erase_if(waitFor_, [&decodes](const LlamaContext* c) {
                return std::none_of(decodes.begin(), decodes.end(), [c](const Pass* p) { return p->ctx == c; });
            });
        }
        Pass* other = nullptr;
        if (!others_.empty()) {
            other = others_.front();
            others_.pop_front();
        }
        lock.unlock();

        const auto t0 = Clock::now();
        if (!decodes.empty()) runDecodes(decodes);
        if (other && other->task) other->task();
        else if (other)
            other->logits = other->model->forward(*other->ctx, other->tokens, other->position, other->origin, other->probe, other->everyRow);
        const auto us = uint64_t(std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count());

        lock.lock();
        stepEnded_ = Clock::now();
        stats_.steps += 1;
        stats_.computeUs += us;
        if (!decodes.empty()) {
            const auto b = int32_t(decodes.size());
            stats_.decodeTokens += uint64_t(b);  // only decoding sessions' steps join a batch (submit)
            countRate(secondsNow(), uint64_t(b));
            stats_.lastBatch = b;
            stats_.largestBatch = std::max(stats_.largestBatch, b);
            if (b > 1) stats_.batchedSteps += 1;
            if (stats_.batchSizes.size() <= size_t(b)) stats_.batchSizes.resize(size_t(b) + 1);
            stats_.batchSizes[size_t(b)] += 1;
        }
        if (other && !other->task && other->origin == CellOrigin::Prompt) stats_.promptTokens += other->tokens.size();
        for (Pass* p : decodes) {
            noteWritten(*p);
            p->done = true;
        }
        if (other && !other->task) noteWritten(*other);
        if (other) other->done = true;
        done_.notify_all();
    }
}

}  // namespace inferscope
