#pragma once
// EngineWorker: owns the engine on its own thread. The GUI talks to it only through queued
// signals and slots carrying value types (engine_types.h); the one thing shared is the cancel
// mark, an atomic job id. Step records are batched here, about one batch per 100 ms (engine_worker.cpp),
// so a fast model does not flood the GUI thread with events.

#include <QObject>
#include <QString>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>

#include "engine/engine_types.h"
#include "engine/compare_jobs.h"
#include "engine/kv_jobs.h"

namespace inferscope {

// What a loaded engine is, as the GUI keeps it (its facts, figures and tokenizer).
LoadedModel describeLoaded(const Engine& engine, const std::string& path);

class EngineWorker : public QObject {
    Q_OBJECT
public:
    // cancelThrough: every job with id <= its value is cancelled (set by the GUI thread).
    explicit EngineWorker(std::shared_ptr<std::atomic<uint64_t>> cancelThrough, QObject* parent = nullptr);
    ~EngineWorker() override;

    // Called on this thread after each decode step, with the step's index and a check of whether
    // the job was cancelled; while one is set every step is sent to the GUI at once. Tests use it to
    // hold an answer mid-stream (StepGate) so that what they check while it streams does not depend
    // on how fast the machine is. Thread-safe; takes effect from the next job.
    using StepHook = std::function<void(int step, const std::function<bool()>& cancelled)>;
    void setStepHook(StepHook hook);

    // Inspection (engine_worker_inspect.cpp). Called on the GUI thread: keeps `request` as the one
    // pending inspection (a newer one replaces it: never more than one waits); true when the
    // worker must be woken with serviceInspection (no wake-up queued yet).
    bool postInspection(InspectionRequest request);
    // Called on this thread between two decode steps (after a batch is sent; forwardUs: the last
    // decode pass's time): runs the pending inspection if there is one and its turn has come
    // (InspectionRequest::follow). Costs one atomic load when nothing is pending.
    void inspectBetweenSteps(int64_t forwardUs);
    // During a generation, follow requests together take at most this share of its wall time
    // (the bound for an open panel is 10%, and painting it costs too).
    static constexpr int kInspectDutyPercent = 5;

public slots:
    void loadModel(quint64 requestId, const inferscope::EngineOptions& options);
    void generate(const inferscope::GenerationJob& job);
    // Measures this machine's memory read bandwidth and matmul peak (F32, BF16) on the engine's
    // threads: the limits the timeline compares prefill and decode against. Takes about a second.
    void measureMachine();
    // engine_worker_kv.cpp: re-creates the cache in `type` (kvTypeSet: the new stats, or why not);
    // measures a KvCostJob (cancelled like a generation, through its id).
    void setKvType(quint64 requestId, inferscope::KvType type);
    void measureKvCost(const inferscope::KvCostJob& job);
    // engine_worker_compare.cpp: the job's answer read by the loaded model and by a second GGUF
    // (loaded here, kept for the next job while its file is unchanged); compareFinished or
    // compareFailed ("cancelled" when cancelled like a generation, through its id).
    void compareModels(const inferscope::CompareJob& job);
    // engine_worker_pair.cpp: side by side. `a` runs on the loaded model here while `b` runs on the
    // second model (b.otherModel: loaded as compareModels loads it, kept alike) on a thread of its
    // own, both at once; each job's events come with its own id, as a generation's. B's figures
    // come first as pairModelReady; a B that cannot be loaded (or does not fit beside A) fails both.
    void generatePair(const inferscope::GenerationJob& a, const inferscope::GenerationJob& b);
    // Frees the second model (another model loaded, or nothing to compare any more).
    void releaseModelB();
    // Runs the pending inspection, if any (the engine idle).
    void serviceInspection();

signals:
    void loadProgress(quint64 requestId, float fraction, const QString& stage);
    void modelLoaded(quint64 requestId, const inferscope::LoadedModel& model);
    void loadFailed(quint64 requestId, const QString& message);

    void promptPrepared(quint64 jobId, const QList<QList<int>>& chunkTokens);
    void prefillFinished(quint64 jobId, const inferscope::PrefillStats& stats);
    void stepsReady(quint64 jobId, const inferscope::StepBatch& batch);
    void generationFinished(quint64 jobId, const inferscope::GenerationSummary& summary);
    void generationFailed(quint64 jobId, const QString& message);
    void machineMeasured(double bandwidthGBps, double peakGflopsF32, double peakGflopsBF16);
    void deviceChanged(const QString& description);  // "CPU avx512_core_bf16, 1 thread" after a thread-count change
    void kvTypeSet(quint64 requestId, const inferscope::KvCacheStats& stats, const QString& error);
    void kvCostMeasured(quint64 jobId, const inferscope::KvCostResult& result);
    void kvCostFailed(quint64 jobId, const QString& message);
    void compareFinished(quint64 jobId, const inferscope::CompareResult& result);
    void compareFailed(quint64 jobId, const QString& message);
    void inspectionReady(const inferscope::InspectionReply& reply);
    void pairModelReady(quint64 jobId, const inferscope::LoadedModel& model, double loadMs);  // generatePair's B (loadMs 0: kept loaded)

private:
    bool shuttingDown() const;  // EngineController is being destroyed: queued work is skipped
    // A job's speculative decoding as the engine takes it: its draft model loaded (or kept from the
    // last job) and checked against the model's vocabulary; else why not, in the user's words.
    Result<SpeculativeOptions> speculativeFor(const SpeculativeJob& job);
    // Runs a job on `engine` (the loaded model's, or byB the second model's); besideA: on the
    // thread of a side-by-side pair's B, where nothing looks inside and no step hook holds it.
    void runJob(Engine& engine, const GenerationJob& job, bool byB, bool besideA);
    // The second model at `path` loaded (or kept: the same file, context and KV type); else why not.
    QString ensureModelB(const std::string& path, double* loadMs);
    std::unique_ptr<Engine> engine_;
    EngineOptions options_;                // what engine_ was loaded with (a draft model is loaded alike)
    std::unique_ptr<Engine> draftEngine_;  // the last job's draft model, kept for the next
    std::string draftPath_;                // its file
    int32_t draftContext_ = 0;             // the model's context it was loaded for (its own is that long)
    int32_t maxTokenBytes_ = 0;  // of the loaded model (LoadedModel::maxTokenBytes)
    std::string modelPath_;
    std::unique_ptr<Engine> engineB_;    // the second model of the last comparison (compare_jobs.h)
    std::string modelPathB_, stampB_;    // its path, and its file's size and time when loaded
    std::shared_ptr<std::atomic<uint64_t>> cancelThrough_;
    std::mutex hookMutex_;
    std::shared_ptr<const StepHook> stepHook_;

    InspectionReply inspect(const InspectionRequest& request);
    void startGenerationBudget();  // a generation starts: its follow inspections' budget is new
    std::optional<InspectionRequest> takeInspection();
    std::mutex inspectMutex_;
    std::optional<InspectionRequest> pendingInspection_;  // under inspectMutex_
    bool wakeQueued_ = false;                              // under inspectMutex_
    std::atomic<bool> inspectionPending_{false};
    // This thread's: the budget of follow requests. The cost of the last inspection of this model
    // (0: none yet, then estimated from a decode pass), and this generation's start and spending.
    int64_t lastInspectCostUs_ = 0, generationStartUs_ = 0, generationInspectUs_ = 0;
};

}  // namespace inferscope
