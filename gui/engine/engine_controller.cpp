#include "engine/engine_controller.h"

#include <QFile>
#include <QFileInfo>
#include <QSettings>
#include <QUrl>

#include "common/kernel_set.h"
#include "engine/engine_worker.h"
#include "engine/local_backend.h"
#include "engine/remote_backend.h"

namespace inferscope {
namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

}  // namespace

EngineController::EngineController(QObject* parent)
    : QObject(parent), local_(new LocalBackend(this)), remote_(new RemoteBackend(this)) {
    EngineWorker* worker = local_->worker();
    // GUI -> worker
    connect(this, &EngineController::requestLoad, worker, &EngineWorker::loadModel, Qt::QueuedConnection);
    connect(this, &EngineController::requestMachineMeasurement, worker, &EngineWorker::measureMachine, Qt::QueuedConnection);
    connect(worker, &EngineWorker::machineMeasured, this, [this](double gbps, double f32, double bf16) {
        QSettings s;
        s.setValue(machineKey(), QVariantList{gbps, f32, bf16});
        emit machineMeasured(gbps, f32, bf16);
    }, Qt::QueuedConnection);
    // worker -> GUI
    connect(worker, &EngineWorker::loadProgress, this, [this](quint64 id, float f, const QString& stage) {
        if (id != pendingLoad_) return;
        loadProgress_ = f;
        loadStage_ = stage;
        emit loadProgressChanged();
    }, Qt::QueuedConnection);
    connect(worker, &EngineWorker::modelLoaded, this, &EngineController::onModelLoaded, Qt::QueuedConnection);
    connect(worker, &EngineWorker::loadFailed, this, &EngineController::onLoadFailed, Qt::QueuedConnection);
    connect(worker, &EngineWorker::deviceChanged, this, [this](const QString& description) {
        if (!model_ || backend_ != local_) return;
        model_->device = description.toStdString();
        refreshLoaded();
        emit deviceChanged();
    }, Qt::QueuedConnection);
    connectKvRequests();
    connectCompareRequests();
    connectBackend(local_);
    connectBackend(remote_);
    connectRemote();
}

// Called before each signal that says what is loaded changed: QML's handlers of those signals run
// before any C++ connection, and read `loaded`.
void EngineController::refreshLoaded() {
    LoadedFacts now;
    now.name = modelName();
    now.path = modelPath();
    now.serverUrl = serverUrl();
    now.device = deviceDescription();
    now.kernelSet = kernelSet();
    now.precision = precision();
    now.details = modelDetails_;
    now.detectedTemplate = detectedTemplate();
    now.contextLength = contextLength();
    now.weightBytes = weightBytes();
    now.kvBytesReserved = kvBytesReserved();
    now.kvType = kvType();
    now.reportedStages = reportedStages();
    if (now == loaded_) return;
    loaded_ = std::move(now);
    emit loadedChanged();
}

// Each backend's events, for its current job only (a job of the other one, or an older one, is over).
void EngineController::connectBackend(InferenceBackend* backend) {
    connect(backend, &InferenceBackend::promptPrepared, this, [this](quint64 jobId, const QList<QList<int>>& chunkTokens) {
        if (routeToPair(jobId, [&](GenerationHandle* h) { emit h->promptPrepared(chunkTokens); })) return;
        if (jobId != currentJob_) return;
        if (current_) emit current_->promptPrepared(chunkTokens);
        emit promptPrepared(jobId, chunkTokens);
    });
    connect(backend, &InferenceBackend::prefillFinished, this, &EngineController::onPrefillFinished);
    connect(backend, &InferenceBackend::stepsReady, this, &EngineController::onStepsReady);
    connect(backend, &InferenceBackend::generationFinished, this, &EngineController::onGenerationFinished);
    connect(backend, &InferenceBackend::generationFailed, this, &EngineController::onGenerationFailed);
    connect(backend, &InferenceBackend::inspectionReady, this, [this](const InspectionReply& reply) {
        lastInspectionAnswered_ = std::max(lastInspectionAnswered_, reply.id);
        emit inspectionArrived(reply);
    });
    connect(backend, &InferenceBackend::reportedStagesChanged, this, [this, backend] {
        if (backend != backend_) return;
        refreshLoaded();
        emit reportedStagesChanged();
    });
}

void EngineController::use(InferenceBackend* backend) {
    backend_ = backend;
    refreshLoaded();
    emit reportedStagesChanged();
}

BackendAbilities EngineController::abilities() const { return model_ && backend_ ? backend_->abilities() : BackendAbilities(); }

QString EngineController::serverUrl() const {
    return model_ && backend_ == remote_ ? remote_->session().server().base.toString() : QString();
}

void EngineController::setRemoteTimeouts(const RemoteTimeouts& timeouts) { remote_->session().setTimeouts(timeouts); }

void EngineController::setStepHookForTesting(std::function<void(int, const std::function<bool()>&)> hook) { local_->worker()->setStepHook(std::move(hook)); }

// The local backend first: it cancels what runs and stops its thread while this object is whole.
EngineController::~EngineController() { delete local_; }

QString EngineController::modelName() const { return model_ ? qs(model_->info.name) : QString(); }
QString EngineController::modelPath() const { return model_ ? qs(model_->path) : QString(); }
QString EngineController::deviceDescription() const { return model_ ? qs(model_->device) : QString(); }
QString EngineController::kernelSet() const { return QString::fromLatin1(inferscope::kernelSetName()); }
QString EngineController::precision() const { return model_ ? qs(model_->precision) : QString(); }

QString EngineController::detectedTemplate() const {
    if (!model_ || !model_->detectedTemplate) return QString();
    return qs(std::string(chatTemplateName(*model_->detectedTemplate)));
}

QStringList EngineController::notices() const {
    QStringList out;
    if (model_)
        for (const auto& n : model_->notices) out << qs(n);
    return out;
}

void EngineController::setState(State s) {
    if (state_ == s) return;
    state_ = s;
    emit stateChanged();
}

void EngineController::setError(const QString& message) {
    errorMessage_ = message;
    emit errorMessageChanged();
}

void EngineController::clearError() { setError(QString()); }

void EngineController::loadModel(const QString& pathOrUrl, int contextLength) {
    if (pathOrUrl.startsWith(QLatin1String("http://")) || pathOrUrl.startsWith(QLatin1String("https://"))) {
        // A server from the recent list: "http://host:port#model" (the key and user info, if any, from this run).
        const QUrl entry(pathOrUrl);
        QUrl base = entry;
        base.setFragment(QString());
        const auto [key, userInfo] = credentials_.value(RemoteSession::normalizeBase(base.toString()).toString());
        base.setUserInfo(userInfo);
        return connectToServer(base.toString(), key, entry.fragment(QUrl::FullyDecoded));
    }
    connecting_ = false;
    const QUrl url(pathOrUrl);
    const QString path = url.isLocalFile() ? url.toLocalFile() : pathOrUrl;
    if (generating()) stop();  // the worker finishes the generation first, then loads
    EngineOptions opt;
    opt.modelPath = path.toStdString();
    opt.contextLength = contextLength;
    opt.kvType = preferredKvType_;
    opt.kvTypeFallback = true;  // the setting holds for every model: one that refuses it loads with f16, saying so
    opt.privateWeights = privateWeights_;
    pendingLoad_ = nextId_++;
    loadingPath_ = QFileInfo(path).fileName();
    loadProgress_ = 0;
    loadStage_ = tr("opening");
    emit loadProgressChanged();
    setState(State::Loading);
    emit requestLoad(pendingLoad_, opt);
}

void EngineController::onModelLoaded(quint64 requestId, const LoadedModel& model) {
    if (requestId != pendingLoad_) return;  // superseded by a later request
    pendingLoad_ = 0;
    model_ = model;
    local_->setModel(model);
    use(local_);
    modelDetails_ = ModelDetails::of(model);
    setKv(model.kv);
    prefillTps_ = decodeTps_ = ttftMs_ = 0;
    loadingPath_.clear();
    clearError();
    // The machine's limits: from the settings when this CPU was measured before, else measured now
    // (once, about a second on the worker; requested before anything reacting to the new model can
    // queue a generation, so the figures are there when its timeline is shown).
    const QVariantList cached = QSettings().value(machineKey()).toList();
    if (cached.size() == 3)
        emit machineMeasured(cached[0].toDouble(), cached[1].toDouble(), cached[2].toDouble());
    else if (autoMeasureMachine_)
        emit requestMachineMeasurement();
    setState(State::Ready);
    refreshLoaded();
    emit modelChanged();
    emit deviceChanged();
    emit statsChanged();
}

void EngineController::measureMachine() {
    if (model_) emit requestMachineMeasurement();
}

QString EngineController::machineKey() const {
    static const QString cpu = [] {
        QFile f(QStringLiteral("/proc/cpuinfo"));
        if (f.open(QIODevice::ReadOnly))
            for (const QByteArray& line : f.readAll().split('\n'))
                if (line.startsWith("model name")) return QString::fromUtf8(line.mid(line.indexOf(':') + 1).trimmed());
        return QStringLiteral("unknown CPU");
    }();
    const QString threads = model_ ? QString::fromStdString(model_->device) : QString();
    return QStringLiteral("machine/") + QString(cpu + QLatin1Char(' ') + threads).replace(QLatin1Char('/'), QLatin1Char('_'));
}

void EngineController::onLoadFailed(quint64 requestId, const QString& message) {
    if (requestId != pendingLoad_) return;
    pendingLoad_ = 0;
    loadingPath_.clear();
    setError(message);
    setState(model_ ? State::Ready : State::NoModel);
    emit loadFailed(message);
}

GenerationHandle* EngineController::startGeneration(GenerationJob job) {
    if (!model_ || !backend_ || state_ != State::Ready) return nullptr;
    job.id = nextId_++;
    if (!job.measurement && job.otherModel.empty())
        for (const auto& [lens, attention] : std::as_const(firstStepCapture_)) {
            if (lens) job.inspect.lensStep = 0;
            if (attention) job.inspect.attentionStep = 0;
        }
    if (!backend_->start(job)) return nullptr;
    currentJob_ = job.id;
    measuring_ = job.measurement || !job.otherModel.empty();  // the status bar keeps the loaded model's figures
    if (current_) current_->deleteLater();  // a finished job's handle, not yet deleted
    current_ = new GenerationHandle(job.id, [this](quint64 id) {
        if (id == currentJob_) stop();
    }, this);
    if (!measuring_) {
        decodeSteps_ = 0;
        decodeStartUs_ = 0;
        decodeTps_ = 0;
    }
    clearError();
    setState(State::Prefilling);
    return current_;
}

void EngineController::setFirstStepCapture(const QObject* who, bool lens, bool attention) {
    if (!lens && !attention) firstStepCapture_.remove(who);
    else firstStepCapture_.insert(who, {lens, attention});
}

quint64 EngineController::requestInspection(InspectionRequest request) {
    request.id = nextId_++;
    lastInspectionAsked_ = request.id;
    if (backend_) backend_->inspect(std::move(request));
    else local_->inspect(std::move(request));
    return lastInspectionAsked_;
}

void EngineController::stop() {
    if (!generating()) return;
    setState(State::Stopping);
    backend_->cancel(std::max(currentJob_, pairJob_));  // a pair's B has the higher id: both stop
}

void EngineController::setKv(const KvCacheStats& kv) {
    const bool reservedChanged = kv.bytesReserved != kv_.bytesReserved;
    kv_ = kv;
    if (!reservedChanged) return;
    refreshLoaded();
    emit kvBytesReservedChanged();
}

void EngineController::onPrefillFinished(quint64 jobId, const PrefillStats& stats) {
    if (routeToPair(jobId, [&](GenerationHandle* h) { emit h->prefillFinished(stats); })) return;
    if (jobId != currentJob_) return;
    if (!measuring_) {
        prefillTps_ = stats.tokensPerSecond();
        ttftMs_ = double(stats.us) / 1000.0;
    }
    if (state_ == State::Prefilling) setState(State::Decoding);
    emit statsChanged();
    if (current_) emit current_->prefillFinished(stats);
    emit prefillFinished(jobId, stats);
}

void EngineController::onStepsReady(quint64 jobId, const StepBatch& batch) {
    if (routeToPair(jobId, [&](GenerationHandle* h) { emit h->stepsArrived(batch); })) return;
    if (jobId != currentJob_) return;
    if (measuring_) {
        if (current_) emit current_->stepsArrived(batch);
        emit stepsArrived(jobId, batch);
        return;
    }
    // Live decode rate from the engine's own timings of each decode pass.
    for (const auto& s : batch.steps)
        if (s.step > 0) {
            decodeStartUs_ += s.forwardUs;
            decodeSteps_ += 1;
        }
    if (decodeStartUs_ > 0) decodeTps_ = decodeSteps_ * 1e6 / double(decodeStartUs_);
    if (batch.kv) setKv(*batch.kv);
    emit statsChanged();
    if (current_) emit current_->stepsArrived(batch);
    emit stepsArrived(jobId, batch);
}

void EngineController::onGenerationFinished(quint64 jobId, const GenerationSummary& summary) {
    if (routeToPair(jobId, [&](GenerationHandle* h) { emit h->finished(summary); }, true)) return;
    if (jobId != currentJob_) return;
    if (!measuring_) {
        setKv(summary.kv);
        prefillTps_ = summary.prefill.tokensPerSecond();
        decodeTps_ = summary.decodeTokensPerSecond();
        ttftMs_ = double(summary.timeToFirstTokenUs) / 1000.0;
    }
    currentJob_ = 0;
    setState(pendingLoad_ ? State::Loading : pairJob_ ? state_ : State::Ready);  // a pair's B still running: busy
    emit statsChanged();
    if (GenerationHandle* handle = std::exchange(current_, nullptr)) {
        emit handle->finished(summary);
        handle->deleteLater();
    }
    emit generationFinished(jobId, summary);
}

void EngineController::onGenerationFailed(quint64 jobId, const QString& message) {
    if (routeToPair(jobId, [&](GenerationHandle* h) { emit h->failed(message); }, true)) return;
    if (jobId != currentJob_) return;
    currentJob_ = 0;
    setError(message);
    setState(pendingLoad_ ? State::Loading : pairJob_ ? state_ : State::Ready);
    if (GenerationHandle* handle = std::exchange(current_, nullptr)) {
        emit handle->failed(message);
        handle->deleteLater();
    }
    emit generationFailed(jobId, message);
}

}  // namespace inferscope
