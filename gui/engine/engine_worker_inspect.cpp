// EngineWorker's side of the Layers and Attention panels: one pending inspection at a time, run
// when the engine is idle or between two decode steps, and only on the context the GUI asked for.
//
// Between two steps the engine is inside generate(): inspectPosition then re-runs one cached
// position over the cache as it would when idle (it writes no cache cell, counter or generated
// token; the step's logits were sampled before the observer was called and the next pass writes
// new ones), so the answer is the same with the panel open (tst_position_inspector checks the ids
// and every probability). The app's jobs capture at most the first step (GenerationJob::inspect,
// while a panel is open): the engine reads that capture out of its probe before the step reaches
// the observer, so it never overlaps these re-runs, which share the probe.
#include <algorithm>
#include <chrono>

#include "engine/engine_worker.h"

namespace inferscope {
namespace {

int64_t nowUs() {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

bool EngineWorker::postInspection(InspectionRequest request) {
    std::lock_guard lock(inspectMutex_);
    pendingInspection_ = std::move(request);
    inspectionPending_.store(true, std::memory_order_release);
    const bool wake = !wakeQueued_;
    wakeQueued_ = true;
    return wake;
}

std::optional<InspectionRequest> EngineWorker::takeInspection() {
    std::lock_guard lock(inspectMutex_);
    std::optional<InspectionRequest> r = std::move(pendingInspection_);
    pendingInspection_.reset();
    inspectionPending_.store(false, std::memory_order_release);
    return r;
}

void EngineWorker::serviceInspection() {
    {
        std::lock_guard lock(inspectMutex_);
        wakeQueued_ = false;
    }
    if (shuttingDown()) return;
    if (auto request = takeInspection()) emit inspectionReady(inspect(*request));
}

void EngineWorker::inspectBetweenSteps(int64_t forwardUs) {
    if (!inspectionPending_.load(std::memory_order_acquire)) return;
    {
        std::lock_guard lock(inspectMutex_);
        if (!pendingInspection_) return;
        // Following the stream: only while this generation's inspections, this one included, stay
        // within kInspectDutyPercent of its time so far (a click is served at once). Before any
        // inspection of this model, one is taken to cost a decode pass per layer and one more
        // (the re-run, then up to a LM head per layer: an LM head is at most a pass).
        if (pendingInspection_->follow) {
            if (lastInspectCostUs_ == 0 && forwardUs <= 0) return;  // step 0 came from the prefill: no pass timed yet
            // Twice the estimate: on a busy machine one inspection took many times the last (67 ms, then 2.3 s).
            const int64_t estimate = 2 * (lastInspectCostUs_ > 0 ? lastInspectCostUs_
                                                                 : (int64_t(engine_->hparams().nLayer) + 1) * std::max<int64_t>(forwardUs, 1));
            if ((generationInspectUs_ + estimate) * 100 > (nowUs() - generationStartUs_) * kInspectDutyPercent) return;
        }
    }
    if (auto request = takeInspection()) {
        const int64_t t0 = nowUs();
        emit inspectionReady(inspect(*request));
        generationInspectUs_ += nowUs() - t0;
    }
}

void EngineWorker::startGenerationBudget() {
    generationStartUs_ = nowUs();
    generationInspectUs_ = 0;
}

InspectionReply EngineWorker::inspect(const InspectionRequest& request) {
    const int64_t t0 = nowUs();
    InspectionReply reply;
    reply.id = request.id;
    reply.position = request.position;
    if (!engine_) {
        reply.error = tr("No model is loaded.").toStdString();
        return reply;
    }
    // Only the context the panel asked about: the cache may hold another conversation by now,
    // or have been cut back to a shorter one.
    const auto cached = engine_->cachedTokens();
    const auto asked = request.context;
    if (request.position < 0 || size_t(request.position) + 1 != asked.size() || asked.size() > cached.size() ||
        !std::equal(asked.begin(), asked.end(), cached.begin())) {
        reply.notCached = true;
        return reply;
    }
    auto result = engine_->inspectPosition(request.position, request.options);
    if (!result) reply.error = result.error().message;
    else reply.inspection = std::make_shared<const PositionInspection>(std::move(*result));
    lastInspectCostUs_ = nowUs() - t0;
    return reply;
}

}  // namespace inferscope
