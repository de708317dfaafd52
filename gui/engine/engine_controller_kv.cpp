// EngineController's KV-cache requests (kv_jobs.h): the cache type of the loaded model and what
// another type costs on an answer.
#include "engine/engine_controller.h"
#include "engine/local_backend.h"

namespace inferscope {

void EngineController::connectKvRequests() {
    EngineWorker* worker = local_->worker();
    connect(this, &EngineController::requestKvType, worker, &EngineWorker::setKvType, Qt::QueuedConnection);
    connect(this, &EngineController::requestKvCost, worker, &EngineWorker::measureKvCost, Qt::QueuedConnection);
    connect(worker, &EngineWorker::kvTypeSet, this, &EngineController::onKvTypeSet, Qt::QueuedConnection);
    connect(worker, &EngineWorker::kvCostMeasured, this, &EngineController::kvCostMeasured, Qt::QueuedConnection);
    connect(worker, &EngineWorker::kvCostFailed, this, &EngineController::kvCostFailed, Qt::QueuedConnection);
}

QString EngineController::kvType() const { return abilities().showsCache ? QString::fromLatin1(kvTypeName(kv_.layout.type)) : QString(); }

QString EngineController::kvTypeProblem(const QString& type) const {
    auto parsed = parseKvType(type.toStdString());
    if (!parsed) return QString::fromStdString(parsed.error().message);
    if (!abilities().showsCache) return {};  // a server's head dimension is not known here
    auto ok = checkKvHeadDim(*parsed, model_->info.hparams.headDim);
    return ok ? QString() : QString::fromStdString(ok.error().message);
}

void EngineController::applyKvType(const QString& type) {
    auto parsed = parseKvType(type.toStdString());
    if (!parsed) return emit kvTypeRefused(QString::fromStdString(parsed.error().message));
    if (!model_ || type == kvType()) return;
    // A server's cache is its own: the setting waits for the next file (a refusal would put the
    // setting back to a type no cache has).
    if (!abilities().showsCache) return;
    if (generating() || state_ == State::Loading)
        return emit kvTypeRefused(tr("The KV cache type changes when the model is idle: stop the answer, then choose it again."));
    if (const QString problem = kvTypeProblem(type); !problem.isEmpty()) return emit kvTypeRefused(problem);
    pendingKvType_ = nextId_++;
    emit requestKvType(pendingKvType_, *parsed);
}

void EngineController::onKvTypeSet(quint64 requestId, const KvCacheStats& stats, const QString& error) {
    if (requestId != pendingKvType_ || !model_) return;
    pendingKvType_ = 0;
    if (!error.isEmpty()) return emit kvTypeRefused(error);
    setKv(stats);  // kvBytesReservedChanged: the new type's reservation
    model_->kv = stats;
    model_->cost = PassCost(model_->info.hparams, model_->weightBytesPerToken, model_->matmulMacsPerToken, stats.bytesPerToken);
    modelDetails_ = ModelDetails::of(*model_);
    refreshLoaded();
    emit statsChanged();
    emit kvTypeApplied(kvType());
}

quint64 EngineController::measureKvCost(KvCostJob job) {
    if (state_ != State::Ready || !abilities().showsCache) return 0;
    job.id = nextId_++;
    emit requestKvCost(job);
    return job.id;
}

void EngineController::cancelKvCost(quint64 jobId) {
    // Cancels every job up to this one: the ones before it have all finished or been cancelled
    // (the worker runs them in order, and a generation only starts while none is pending).
    local_->cancelThrough(jobId);
}

}  // namespace inferscope
