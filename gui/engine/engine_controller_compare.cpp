// EngineController's comparison of two models on one answer (compare_jobs.h): handed to the local
// backend's worker, which loads the second model beside the conversation's; and side by side, the
// same prompt to both at once (EngineWorker::generatePair).
#include "engine/engine_controller.h"
#include "engine/local_backend.h"

namespace inferscope {

void EngineController::connectCompareRequests() {
    EngineWorker* worker = local_->worker();
    connect(this, &EngineController::requestCompare, worker, &EngineWorker::compareModels, Qt::QueuedConnection);
    connect(worker, &EngineWorker::compareFinished, this, &EngineController::compareFinished, Qt::QueuedConnection);
    connect(worker, &EngineWorker::compareFailed, this, &EngineController::compareFailed, Qt::QueuedConnection);
    connect(this, &EngineController::requestPair, worker, &EngineWorker::generatePair, Qt::QueuedConnection);
    connect(worker, &EngineWorker::pairModelReady, this, [this](quint64 jobId, const LoadedModel& model, double loadMs) {
        if (jobId == pairJob_) emit pairModelReady(jobId, model, loadMs);
    }, Qt::QueuedConnection);
}

EngineController::GenerationPair EngineController::startPair(GenerationJob a, GenerationJob b) {
    if (!model_ || backend_ != local_ || state_ != State::Ready || b.otherModel.empty()) return {};
    a.id = nextId_++;
    b.id = nextId_++;  // after a's: cancelling through b's id stops both
    a.otherModel.clear();
    a.measurement = b.measurement = false;
    a.speculative.reset();
    b.speculative.reset();
    emit requestPair(a, b);
    currentJob_ = a.id;
    pairJob_ = b.id;
    measuring_ = true;  // the status bar keeps the conversation's figures: each column has its own
    if (current_) current_->deleteLater();
    if (pair_) pair_->deleteLater();
    auto cancel = [this](quint64 id) {
        if (id == currentJob_ || id == pairJob_) stop();
    };
    current_ = new GenerationHandle(a.id, cancel, this);
    pair_ = new GenerationHandle(b.id, cancel, this);
    clearError();
    setState(State::Prefilling);
    return {current_, pair_};
}

bool EngineController::routeToPair(quint64 jobId, const std::function<void(GenerationHandle*)>& deliver, bool ends) {
    if (jobId == 0 || jobId != pairJob_) return false;
    if (!ends) {
        if (pair_) deliver(pair_);
        return true;
    }
    // Ready first (when A has ended too): whoever hears the end may start the next job at once.
    pairJob_ = 0;
    if (currentJob_ == 0) setState(pendingLoad_ ? State::Loading : State::Ready);
    if (GenerationHandle* handle = std::exchange(pair_, nullptr)) {
        deliver(handle);
        handle->deleteLater();
    }
    return true;
}

quint64 EngineController::compareModels(CompareJob job) {
    if (state_ != State::Ready || !abilities().comparesModels) return 0;
    job.id = nextId_++;
    emit requestCompare(job);
    return job.id;
}

void EngineController::cancelCompare(quint64 jobId) {
    // As cancelKvCost: the worker runs jobs in order, and those before this one have ended.
    local_->cancelThrough(jobId);
}

}  // namespace inferscope
