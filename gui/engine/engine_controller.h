#pragma once
// EngineController: the GUI thread's face of the engine. It owns the two backends (this machine's
// engine and a server's client, inference_backend.h), loads a model into one or connects the
// other, keeps the state machine (NoModel → Loading → Ready ⇄ Prefilling → Decoding → …) and the
// figures the status bar shows, and hands each generation to the backend in use as a
// GenerationHandle. Registered for QML as a singleton; the app creates the one instance.

#include <QHash>
#include <QObject>
#include <QPointer>
#include <QQmlEngine>
#include <functional>
#include <optional>

#include "engine/compare_jobs.h"
#include "engine/engine_facts.h"
#include "engine/engine_types.h"
#include "engine/inference_backend.h"
#include "engine/kv_jobs.h"
#include "engine/model_details.h"
#include "app/qml_singleton.h"
#include "remote/remote_session.h"

namespace inferscope {

class LocalBackend;
class RemoteBackend;

class EngineController : public QObject, public QmlSingleton<EngineController> {
    Q_OBJECT
    QML_ELEMENT
    QML_SINGLETON
    Q_PROPERTY(State state READ state NOTIFY stateChanged)
    Q_PROPERTY(bool busy READ busy NOTIFY stateChanged)
    Q_PROPERTY(bool hasModel READ hasModel NOTIFY modelChanged)
    Q_PROPERTY(QString errorMessage READ errorMessage NOTIFY errorMessageChanged)
    Q_PROPERTY(QStringList notices READ notices NOTIFY modelChanged)
    // What the backend in use can tell and do (inference_backend.h); all false without a model.
    Q_PROPERTY(inferscope::BackendAbilities abilities READ abilities NOTIFY modelChanged)
    // engine_facts.h: what is loaded, the running figures, a load under way, a server's model list.
    // Connected to a server (engine_controller_remote.cpp), loaded.name is the server's model id,
    // loaded.path "http://host:port#model" (the recent list's entry) and loaded.serverUrl its address.
    Q_PROPERTY(inferscope::LoadedFacts loaded READ loaded NOTIFY loadedChanged)
    Q_PROPERTY(inferscope::LiveFigures figures READ figures NOTIFY statsChanged)
    Q_PROPERTY(inferscope::LoadingProgress loading READ loading NOTIFY loadProgressChanged)
    Q_PROPERTY(inferscope::ServerListing serverListing READ serverListing NOTIFY serverModelsChanged)

public:
    enum class State { NoModel, Loading, Ready, Prefilling, Decoding, Stopping };
    Q_ENUM(State)

    // No default constructor: with one, Qt 6.4's QML_SINGLETON would build its own instance
    // instead of calling create().
    explicit EngineController(QObject* parent);
    ~EngineController() override;

    // The app's instance, handed to QML (QML_SINGLETON without a default-constructed copy).

    State state() const { return state_; }
    bool busy() const { return state_ == State::Loading || generating(); }
    bool generating() const { return state_ == State::Prefilling || state_ == State::Decoding || state_ == State::Stopping; }
    bool hasModel() const { return model_.has_value(); }
    const std::optional<LoadedModel>& model() const { return model_; }
    QString modelName() const;
    QString modelPath() const;
    QString deviceDescription() const;
    QString kernelSet() const;
    QString precision() const;
    // Built once per load: bindings and the timeline's per-step cost figures read it often.
    const ModelDetails& modelDetails() const { return modelDetails_; }
    QString detectedTemplate() const;
    int contextLength() const { return model_ ? model_->contextLength : 0; }
    int contextUsed() const { return kv_.nUsed; }
    double weightBytes() const { return model_ ? double(model_->weightBytesResident) : 0.0; }
    double kvBytesReserved() const { return double(kv_.bytesReserved); }
    double kvBytesUsed() const { return double(kv_.bytesUsed); }
    const KvCacheStats& kvStats() const { return kv_; }
    double prefillTokensPerSecond() const { return prefillTps_; }
    double decodeTokensPerSecond() const { return decodeTps_; }
    double timeToFirstTokenMs() const { return ttftMs_; }
    double loadProgress() const { return loadProgress_; }
    QString loadStage() const { return loadStage_; }
    QString loadingPath() const { return loadingPath_; }
    QString errorMessage() const { return errorMessage_; }
    QStringList notices() const;
    const LoadedFacts& loaded() const { return loaded_; }
    LiveFigures figures() const {
        return {kv_.nUsed, double(kv_.bytesUsed), prefillTps_, decodeTps_, ttftMs_};
    }
    LoadingProgress loading() const { return {loadProgress_, loadStage_, loadingPath_}; }
    ServerListing serverListing() const { return {serverModels_, serverError_, listingModels_}; }

    // Loads a model (a path or a file:// URL) on the worker. While generating, the generation is
    // cancelled first. The current model stays in use until the new one has loaded.
    Q_INVOKABLE void loadModel(const QString& pathOrUrl, int contextLength = 0);
    // Stops the running generation within one step (the answer so far is kept).
    Q_INVOKABLE void stop();
    Q_INVOKABLE void clearError();
    Q_INVOKABLE void reportError(const QString& message) { setError(message); }

    // engine_controller_remote.cpp. Lists a server's models (serverModels / serverError).
    Q_INVOKABLE void listServerModels(const QString& url, const QString& apiKey);
    // Connects to `model` on the server at `url` (checked against its /v1/models first: Loading,
    // then Ready, or loadFailed with the reason and the previous model kept). The API key is kept
    // for this run only, per server, never in the settings.
    Q_INVOKABLE void connectToServer(const QString& url, const QString& apiKey, const QString& model);
    BackendAbilities abilities() const;
    QString serverUrl() const;
    // The server in use (its address and credentials), or none while no server is connected.
    std::optional<RemoteServer> connectedServer() const;
    QStringList reportedStages() const;
    QStringList serverModels() const { return serverModels_; }
    QString serverError() const { return serverError_; }
    bool listingModels() const { return listingModels_; }
    // A token's bytes: the tokenizer's for a loaded file, the remote vocabulary's for a server.
    std::optional<std::string> tokenBytes(int32_t id) const;
    // A token's text as an answer's origin keeps it (a control token's name when it has no bytes).
    std::optional<TokenText> tokenText(int32_t id) const;
    // What an answer started now comes from (record/answer_origin.h), without its tokens; Unknown
    // while no model is loaded.
    AnswerOrigin answerOrigin() const;
    // "stories260K @ 127.0.0.1:8080" for a remote entry of the recent list, else the file's name.
    Q_INVOKABLE static QString entryLabel(const QString& entry);
    // The model menu's labels for `entries`, one each, all distinct when the entries are: two
    // entries that entryLabel would show alike get what tells them apart (a file's folder, a
    // server's whole address), and a long model or file name is cut in its middle, never the part
    // after it ("Meta-Llama-3.1-8B…Q4_K_M.gguf — lmstudio-community").
    Q_INVOKABLE static QStringList entryLabels(const QStringList& entries);

    // Measures the machine's limits on the worker (bandwidth, matmul peak); the result is kept in
    // the settings per CPU and thread count, and measured again only on request.
    Q_INVOKABLE void measureMachine();

    // Starts a generation (GUI thread) on the backend in use; returns its handle (deleted later
    // once it finished or failed: keep it in a QPointer), or null when no model is ready or the
    // backend cannot run the job. The same events also come as this object's signals below, for
    // the panels that follow every job.
    GenerationHandle* startGeneration(GenerationJob job);
    // Looks inside a cached position on the worker (between two decode steps while generating);
    // replaces any request not started yet. Returns its id; the answer comes as inspectionArrived.
    quint64 requestInspection(InspectionRequest request);
    // While `who` (an open Layers or Attention panel) wants it, generations look inside their first
    // token's pass as it runs (GenerationJob::inspect; that step's record carries the result):
    // the prefill's batched pass cannot be re-run bit for bit. Nobody asking: nothing is captured.
    void setFirstStepCapture(const QObject* who, bool lens, bool attention);
    // An inspection asked for has not been answered yet (a replaced one is answered by its successor).
    bool inspectionPending() const { return lastInspectionAsked_ > lastInspectionAnswered_; }

    // engine_controller_kv.cpp. The KV cache type loads use (AppSettings.kvType).
    void setPreferredKvType(KvType type) { preferredKvType_ = type; }
    // A server's deadlines (the settings' "Timeouts"): the next request on uses them.
    void setRemoteTimeouts(const RemoteTimeouts& timeouts);
    // Every later local load copies the weights into the process's own pages (--no-mmap; EngineOptions::privateWeights).
    void setPrivateWeights(bool on) { privateWeights_ = on; }
    QString kvType() const;
    // Why the loaded model cannot use `type` ("" when it can, or without a model).
    Q_INVOKABLE QString kvTypeProblem(const QString& type) const;
    // Re-creates the loaded model's cache in `type` on the worker (kvTypeApplied, or kvTypeRefused
    // with the reason, the cache unchanged). Refused while generating.
    Q_INVOKABLE void applyKvType(const QString& type);
    // Measures a KvCostJob on the worker (kvCostMeasured / kvCostFailed); returns its id, or 0
    // when no model is ready. cancelKvCost stops it between positions.
    quint64 measureKvCost(KvCostJob job);
    void cancelKvCost(quint64 jobId);
    // engine_controller_compare.cpp. Reads a CompareJob's answer with the loaded model and a second
    // GGUF on the worker (compareFinished / compareFailed); returns its id, or 0 when no model is
    // ready or the backend in use cannot (abilities().comparesModels). cancelCompare stops it
    // between two batches. The conversation's model stays loaded.
    quint64 compareModels(CompareJob job);
    void cancelCompare(quint64 jobId);
    // Side by side: `a` on the loaded model and `b` on the second GGUF b.otherModel, at once
    // (EngineWorker::generatePair); each its own handle. B's figures come as pairModelReady before
    // its first event. Both null when no local model is ready; stop() stops both.
    struct GenerationPair {
        GenerationHandle* a = nullptr;
        GenerationHandle* b = nullptr;
    };
    GenerationPair startPair(GenerationJob a, GenerationJob b);

signals:
    void stateChanged();
    void modelChanged();
    void deviceChanged();  // the device description (its thread count), also on every load
    void statsChanged();
    void kvBytesReservedChanged();
    void loadProgressChanged();
    void errorMessageChanged();
    void loadedChanged();
    void loadFailed(const QString& message);
    void kvTypeApplied(const QString& type);
    void kvTypeRefused(const QString& message);
    void kvCostMeasured(quint64 jobId, const inferscope::KvCostResult& result);
    void kvCostFailed(quint64 jobId, const QString& message);
    void compareFinished(quint64 jobId, const inferscope::CompareResult& result);
    void compareFailed(quint64 jobId, const QString& message);
    void pairModelReady(quint64 jobId, const inferscope::LoadedModel& model, double loadMs);

    void promptPrepared(quint64 jobId, const QList<QList<int>>& chunkTokens);
    void prefillFinished(quint64 jobId, const inferscope::PrefillStats& stats);
    void stepsArrived(quint64 jobId, const inferscope::StepBatch& batch);
    void generationFinished(quint64 jobId, const inferscope::GenerationSummary& summary);
    void generationFailed(quint64 jobId, const QString& message);
    void machineMeasured(double bandwidthGBps, double peakGflopsF32, double peakGflopsBF16);
    void inspectionArrived(const inferscope::InspectionReply& reply);

    // to the local backend's worker (queued)
    void requestLoad(quint64 requestId, const inferscope::EngineOptions& options);
    void requestMachineMeasurement();
    void requestKvType(quint64 requestId, inferscope::KvType type);
    void requestKvCost(const inferscope::KvCostJob& job);
    void requestCompare(const inferscope::CompareJob& job);
    void requestPair(const inferscope::GenerationJob& a, const inferscope::GenerationJob& b);
    void reportedStagesChanged();
    void serverModelsChanged();

private:
    void setState(State s);
    void refreshLoaded();  // loaded_ from what is loaded now; loadedChanged when it changed
    void setError(const QString& message);
    void setKv(const KvCacheStats& kv);  // kv_, and kvBytesReservedChanged when the reservation changed
    void onModelLoaded(quint64 requestId, const LoadedModel& model);
    void onLoadFailed(quint64 requestId, const QString& message);
    void onPrefillFinished(quint64 jobId, const PrefillStats& stats);
    void onStepsReady(quint64 jobId, const StepBatch& batch);
    void onGenerationFinished(quint64 jobId, const GenerationSummary& summary);
    void onGenerationFailed(quint64 jobId, const QString& message);
    QString machineKey() const;  // QSettings key of this CPU and thread count
    void connectKvRequests();    // engine_controller_kv.cpp
    void connectCompareRequests();  // engine_controller_compare.cpp
    // A side-by-side pair's B (pairJob_) gets its own events on its handle: true when jobId is its.
    bool routeToPair(quint64 jobId, const std::function<void(GenerationHandle*)>& deliver, bool ends = false);
    void onKvTypeSet(quint64 requestId, const KvCacheStats& stats, const QString& error);
    void connectRemote();  // engine_controller_remote.cpp: the session's signals
    void onServerModels(const QStringList& ids);
    void onServerModelsFailed(const QString& message);
    void connectBackend(InferenceBackend* backend);
    void use(InferenceBackend* backend);  // the backend a load or connection made current

    LocalBackend* local_ = nullptr;    // children of this object
    RemoteBackend* remote_ = nullptr;
    InferenceBackend* backend_ = nullptr;  // the one in use: null without a model
    bool connecting_ = false;  // a connectToServer waits for the model list
    RemoteServer pendingServer_;
    QHash<QString, std::pair<QString, QString>> credentials_;  // per server base: (API key, user info), this run only
    QStringList serverModels_;
    QString serverError_;
    bool listingModels_ = false;
    State state_ = State::NoModel;
    std::optional<LoadedModel> model_;
    ModelDetails modelDetails_;
    LoadedFacts loaded_;
    KvCacheStats kv_;
    quint64 nextId_ = 1;
    quint64 pendingLoad_ = 0;
    quint64 currentJob_ = 0;
    QPointer<GenerationHandle> current_;
    quint64 pairJob_ = 0;               // a side-by-side pair's B while it runs
    QPointer<GenerationHandle> pair_;
    bool measuring_ = false;  // the current job is a GenerationJob::measurement
    double prefillTps_ = 0, decodeTps_ = 0, ttftMs_ = 0;
    qint64 decodeStartUs_ = 0;
    int decodeSteps_ = 0;
    double loadProgress_ = 0;
    QString loadStage_, loadingPath_, errorMessage_;
    bool autoMeasureMachine_ = false;
    KvType preferredKvType_ = KvType::F16;  // AppSettings' default
    bool privateWeights_ = false;
    quint64 pendingKvType_ = 0;
    quint64 lastInspectionAsked_ = 0, lastInspectionAnswered_ = 0;
    QHash<const QObject*, std::pair<bool, bool>> firstStepCapture_;  // who → (lens, attention)

public:
    // The app measures the machine after the first load (about a second, once per CPU); off by
    // default so that tests and tools do not pay for it.
    void setAutoMeasureMachine(bool on) { autoMeasureMachine_ = on; }
    // See EngineWorker::StepHook (tests only: tests/gui/step_gate.h).
    void setStepHookForTesting(std::function<void(int step, const std::function<bool()>& cancelled)> hook);
};

}  // namespace inferscope
