#pragma once
// The seam between the app and what answers it. InferenceBackend is what runs a GenerationJob:
// this machine's engine (LocalBackend, local_backend.h) or an OpenAI-compatible server
// (RemoteBackend, remote_backend.h); a second local model for comparison is the next one.
// EngineController keeps the model's lifecycle and the state machine and talks to the backend in
// use through this interface only. The rest of the app asks what the backend can do
// (BackendAbilities: `EngineController.abilities.showsCache` in QML), never which one it is.
//
// Each generation is a GenerationHandle: its own signals (the prompt's tokens, the prefill, the
// step batches, the end) and cancel(). Whoever started it listens to its handle, so nothing
// filters another job's events by id.

#include <QMetaType>
#include <QObject>
#include <QtQml/qqmlregistration.h>
#include <functional>
#include <optional>
#include <string>

#include "engine/engine_types.h"

namespace inferscope {

// What a backend can tell and do. QML reads it as a value type.
struct BackendAbilities {
    Q_GADGET
    QML_ANONYMOUS
    // A tokenizer here: prompts go as token chunks with any template (or none: completion mode),
    // the prompt's tokens come back, an answer's tokens stay in the context, a branch may pick any
    // token of the vocabulary. Without one the backend takes messages and applies its own template.
    Q_PROPERTY(bool tokenizes MEMBER tokenizes)
    // The backend wraps messages in its own chat template: no completion mode, no template choice.
    Q_PROPERTY(bool ownTemplate MEMBER ownTemplate)
    // The model's shape and its KV cache: figures known, the cache's type can be changed.
    Q_PROPERTY(bool showsCache MEMBER showsCache)
    // Layers and Attention: inspections of a cached position.
    Q_PROPERTY(bool looksInside MEMBER looksInside)
    // Timeline experiments and the machine's limits: jobs timed on this machine's engine.
    Q_PROPERTY(bool runsExperiments MEMBER runsExperiments)
    // Timings come over a network: a first token's time includes it, a prefill is the server's.
    Q_PROPERTY(bool overNetwork MEMBER overNetwork)
    // A second model can read an answer beside this one, token by token (compare_jobs.h).
    Q_PROPERTY(bool comparesModels MEMBER comparesModels)
    // Speculative decoding (GenerationJob::speculative): drafts verified by this machine's engine.
    Q_PROPERTY(bool drafts MEMBER drafts)
public:
    bool tokenizes = false;
    bool ownTemplate = false;
    bool showsCache = false;
    bool looksInside = false;
    bool runsExperiments = false;
    bool overNetwork = false;
    bool comparesModels = false;
    bool drafts = false;
    bool operator==(const BackendAbilities&) const = default;
};

// One generation, from startGeneration until finished or failed (then deleted later by its
// controller: keep it in a QPointer). Signals come on the GUI thread.
class GenerationHandle : public QObject {
    Q_OBJECT
public:
    GenerationHandle(quint64 id, std::function<void(quint64)> cancel, QObject* parent)
        : QObject(parent), id_(id), cancel_(std::move(cancel)) {}
    quint64 id() const { return id_; }
    // Stops it within one step (the answer so far ends as Cancelled).
    void cancel() { if (cancel_) cancel_(id_); }

signals:
    void promptPrepared(const QList<QList<int>>& chunkTokens);  // a local backend's tokens of each chunk
    void prefillFinished(const inferscope::PrefillStats& stats);
    void stepsArrived(const inferscope::StepBatch& batch);
    void finished(const inferscope::GenerationSummary& summary);
    void failed(const QString& message);

private:
    quint64 id_;
    std::function<void(quint64)> cancel_;
};

class InferenceBackend : public QObject {
    Q_OBJECT
public:
    using QObject::QObject;
    virtual AnswerBackend kind() const = 0;
    virtual BackendAbilities abilities() const = 0;
    // Runs `job` (its id set by the controller); false when this backend cannot run it (a server
    // runs no measurement and needs messages). Events come as the signals below, with the job's id.
    virtual bool start(const GenerationJob& job) = 0;
    virtual void cancel(quint64 jobId) = 0;
    // A token of this backend's vocabulary: its bytes (a control token's name as label).
    virtual std::optional<TokenText> tokenText(int32_t id) const = 0;
    // Fills in what an answer made now by `model` comes from (record/answer_origin.h).
    virtual void describe(AnswerOrigin& origin, const LoadedModel& model, const KvCacheStats& kv) const = 0;
    // The sampler stages whose probabilities its steps carry (all, or the raw one only).
    virtual bool reportsStages() const = 0;
    // Looks inside a cached position: the answer comes as inspectionReady (an error when it cannot).
    virtual void inspect(InspectionRequest request) = 0;

signals:
    void promptPrepared(quint64 jobId, const QList<QList<int>>& chunkTokens);
    void prefillFinished(quint64 jobId, const inferscope::PrefillStats& stats);
    void stepsReady(quint64 jobId, const inferscope::StepBatch& batch);
    void generationFinished(quint64 jobId, const inferscope::GenerationSummary& summary);
    void generationFailed(quint64 jobId, const QString& message);
    void inspectionReady(const inferscope::InspectionReply& reply);
    void reportedStagesChanged();
};

}  // namespace inferscope

Q_DECLARE_METATYPE(inferscope::BackendAbilities)
