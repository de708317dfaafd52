// EngineController's comparison of two models on one answer (compare_jobs.h): handed to the local
// backend's worker, which loads the second model beside the conversation's.
#include "engine/engine_controller.h"
#include "engine/local_backend.h"

namespace inferscope {

void EngineController::connectCompareRequests() {
    EngineWorker* worker = local_->worker();
    connect(this, &EngineController::requestCompare, worker, &EngineWorker::compareModels, Qt::QueuedConnection);
    connect(worker, &EngineWorker::compareFinished, this, &EngineController::compareFinished, Qt::QueuedConnection);
    connect(worker, &EngineWorker::compareFailed, this, &EngineController::compareFailed, Qt::QueuedConnection);
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
