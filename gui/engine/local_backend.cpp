#include "engine/local_backend.h"

namespace inferscope {

LocalBackend::LocalBackend(QObject* parent)
    : InferenceBackend(parent), cancelThrough_(std::make_shared<std::atomic<uint64_t>>(0)) {
    worker_ = new EngineWorker(cancelThrough_);
    worker_->moveToThread(&thread_);
    connect(&thread_, &QThread::finished, worker_, &QObject::deleteLater);
    connect(worker_, &EngineWorker::promptPrepared, this, &InferenceBackend::promptPrepared, Qt::QueuedConnection);
    connect(worker_, &EngineWorker::prefillFinished, this, &InferenceBackend::prefillFinished, Qt::QueuedConnection);
    connect(worker_, &EngineWorker::stepsReady, this, &InferenceBackend::stepsReady, Qt::QueuedConnection);
    connect(worker_, &EngineWorker::generationFinished, this, &InferenceBackend::generationFinished, Qt::QueuedConnection);
    connect(worker_, &EngineWorker::generationFailed, this, &InferenceBackend::generationFailed, Qt::QueuedConnection);
    connect(worker_, &EngineWorker::inspectionReady, this, &InferenceBackend::inspectionReady, Qt::QueuedConnection);
    thread_.setObjectName("inferscope-engine");
    thread_.start();
}

LocalBackend::~LocalBackend() {
    // Closing mid-generation: cancel, let the worker return, then stop its thread.
    cancelThrough_->store(UINT64_MAX);
    thread_.quit();
    thread_.wait();
}

void LocalBackend::cancelThrough(quint64 jobId) {
    if (jobId != 0 && cancelThrough_->load() < jobId) cancelThrough_->store(jobId);
}

bool LocalBackend::start(const GenerationJob& job) {
    QMetaObject::invokeMethod(worker_, [w = worker_, job] { w->generate(job); }, Qt::QueuedConnection);
    return true;
}

std::optional<TokenText> LocalBackend::tokenText(int32_t id) const {
    if (!tokenizer_ || id < 0 || id >= tokenizer_->vocabSize()) return std::nullopt;
    return tokenTextOf(*tokenizer_, id);
}

void LocalBackend::describe(AnswerOrigin& o, const LoadedModel& model, const KvCacheStats& kv) const { o = localAnswerOrigin(model, kv); }

void LocalBackend::inspect(InspectionRequest request) {
    if (worker_->postInspection(std::move(request)))
        QMetaObject::invokeMethod(worker_, [w = worker_] { w->serviceInspection(); }, Qt::QueuedConnection);
}

}  // namespace inferscope
