#pragma once
// LocalBackend: this machine's engine as an InferenceBackend (inference_backend.h). It owns the
// EngineWorker and its thread; EngineController loads models and changes the cache through
// worker(), and generations and inspections go through the interface.

#include <QThread>
#include <atomic>
#include <memory>

#include "engine/engine_worker.h"
#include "engine/inference_backend.h"

namespace inferscope {

// What an answer made on this machine by `model` keeps of it (AnswerOrigin's local fields, its name
// and device included): LocalBackend::describe, and the comparison's second model, which can
// write an answer too (compare_jobs.h).
AnswerOrigin localAnswerOrigin(const LoadedModel& model, const KvCacheStats& kv);

class LocalBackend : public InferenceBackend {
    Q_OBJECT
public:
    explicit LocalBackend(QObject* parent = nullptr);
    ~LocalBackend() override;  // cancels what runs, then stops the thread

    EngineWorker* worker() const { return worker_; }
    // The loaded model's tokenizer (tokenText reads it), set at every load.
    void setModel(const LoadedModel& model) { tokenizer_ = model.tokenizer; }
    // Cancels every job up to `jobId` (the worker runs jobs in order).
    void cancelThrough(quint64 jobId);

    AnswerBackend kind() const override { return AnswerBackend::Local; }
    BackendAbilities abilities() const override {
        return {.tokenizes = true, .showsCache = true, .looksInside = true, .runsExperiments = true, .comparesModels = true, .drafts = true};
    }
    bool start(const GenerationJob& job) override;
    void cancel(quint64 jobId) override { cancelThrough(jobId); }
    std::optional<TokenText> tokenText(int32_t id) const override;
    void describe(AnswerOrigin& origin, const LoadedModel& model, const KvCacheStats& kv) const override;
    bool reportsStages() const override { return true; }
    void inspect(InspectionRequest request) override;

private:
    QThread thread_;
    std::shared_ptr<std::atomic<uint64_t>> cancelThrough_;
    EngineWorker* worker_ = nullptr;  // lives on thread_
    std::shared_ptr<const Tokenizer> tokenizer_;
};

}  // namespace inferscope
