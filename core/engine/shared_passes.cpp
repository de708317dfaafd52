#include "engine/shared_passes.h"

#include <algorithm>

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
    (pass.isDecode() ? decodes_ : others_).push_back(&pass);
    wake_.notify_all();
    done_.wait(lock, [&pass] { return pass.done; });
}

void SharedPasses::beginDecoding() {
    std::lock_guard lock(mutex_);
    ++decoding_;
    stats_.decoding = decoding_;
}

void SharedPasses::endDecoding() {
    {
        std::lock_guard lock(mutex_);
        --decoding_;
        stats_.decoding = decoding_;
    }
    wake_.notify_all();  // the others' batch may be complete now
}

SharedPassStats SharedPasses::stats() const {
    std::lock_guard lock(mutex_);
    return stats_;
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
        // Decode passes are ready when every decoding session has one pending, or the oldest has
        // waited `gather`; another pass is ready at once.
        auto decodesReady = [this] {
            return !decodes_.empty() &&
                   (int32_t(decodes_.size()) >= decoding_ || Clock::now() >= decodes_.front()->queued + gather_);
        };
        if (quit_ && decodes_.empty() && others_.empty()) return;
        if (others_.empty() && !decodesReady()) {
            if (decodes_.empty()) wake_.wait(lock);
            else wake_.wait_until(lock, decodes_.front()->queued + gather_);
            continue;
        }
        std::vector<Pass*> decodes;
        if (decodesReady()) {
            decodes.assign(decodes_.begin(), decodes_.end());
            decodes_.clear();
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
        stats_.steps += 1;
        stats_.computeUs += us;
        if (!decodes.empty()) {
            const auto b = int32_t(decodes.size());
            stats_.decodeTokens += uint64_t(b);
            stats_.lastBatch = b;
            stats_.largestBatch = std::max(stats_.largestBatch, b);
            if (b > 1) stats_.batchedSteps += 1;
            if (stats_.batchSizes.size() <= size_t(b)) stats_.batchSizes.resize(size_t(b) + 1);
            stats_.batchSizes[size_t(b)] += 1;
        }
        if (other && !other->task) stats_.promptTokens += other->tokens.size();
        for (Pass* p : decodes) p->done = true;
        if (other) other->done = true;
        done_.notify_all();
    }
}

}  // namespace inferscope
