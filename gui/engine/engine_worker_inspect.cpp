// EngineWorker's side of the Layers and Attention panels: one pending inspection at a time, run
// when the engine is idle or between two decode steps, and only on the context the GUI asked for.
//
// Between two steps the engine is inside generate(): inspectPosition then re-runs one cached
// position over the cache as it would when idle (it writes no cache cell, counter or generated
// token; the step's logits were sampled before the observer was called and the next pass writes
// new ones), so the answer is the same with the panel open (tst_position_inspector checks the ids
// and every probability).
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

void EngineWorker::inspectBetweenSteps() {
    if (!inspectionPending_.load(std::memory_order_acquire)) return;
    {
        std::lock_guard lock(inspectMutex_);
        if (!pendingInspection_) return;
        // Following the stream: wait until the last inspection's cost is at most
        // kInspectDutyPercent of the time since (a click is served at once).
        if (pendingInspection_->follow && lastInspectCostUs_ > 0 &&
            nowUs() - lastInspectEndUs_ < lastInspectCostUs_ * (100 / kInspectDutyPercent - 1))
            return;
    }
    if (auto request = takeInspection()) emit inspectionReady(inspect(*request));
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
    lastInspectEndUs_ = nowUs();
    lastInspectCostUs_ = lastInspectEndUs_ - t0;
    return reply;
}

}  // namespace inferscope
