#include "engine/engine_controller.h"

#include <QFile>
#include <QFileInfo>
#include <QSettings>
#include <QUrl>

#include "common/kernel_set.h"
#include "engine/engine_worker.h"

namespace inferscope {
namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

}  // namespace

EngineController::EngineController(QObject* parent)
    : QObject(parent), cancelThrough_(std::make_shared<std::atomic<uint64_t>>(0)) {
    worker_ = new EngineWorker(cancelThrough_);
    worker_->moveToThread(&thread_);
    connect(&thread_, &QThread::finished, worker_, &QObject::deleteLater);
    // GUI -> worker
    connect(this, &EngineController::requestLoad, worker_, &EngineWorker::loadModel, Qt::QueuedConnection);
    connect(this, &EngineController::requestGenerate, worker_, &EngineWorker::generate, Qt::QueuedConnection);
    connect(this, &EngineController::requestMachineMeasurement, worker_, &EngineWorker::measureMachine, Qt::QueuedConnection);
    connect(this, &EngineController::requestInspectionService, worker_, &EngineWorker::serviceInspection, Qt::QueuedConnection);
    connect(worker_, &EngineWorker::inspectionReady, this, [this](const InspectionReply& reply) {
        lastInspectionAnswered_ = std::max(lastInspectionAnswered_, reply.id);
        emit inspectionArrived(reply);
    }, Qt::QueuedConnection);
    connect(worker_, &EngineWorker::machineMeasured, this, [this](double gbps, double f32, double bf16) {
        QSettings s;
        s.setValue(machineKey(), QVariantList{gbps, f32, bf16});
        emit machineMeasured(gbps, f32, bf16);
    }, Qt::QueuedConnection);
    // worker -> GUI
    connect(worker_, &EngineWorker::loadProgress, this, [this](quint64 id, float f, const QString& stage) {
        if (id != pendingLoad_) return;
        loadProgress_ = f;
        loadStage_ = stage;
        emit loadProgressChanged();
    }, Qt::QueuedConnection);
    connect(worker_, &EngineWorker::modelLoaded, this, &EngineController::onModelLoaded, Qt::QueuedConnection);
    connect(worker_, &EngineWorker::loadFailed, this, &EngineController::onLoadFailed, Qt::QueuedConnection);
    connect(worker_, &EngineWorker::promptPrepared, this, &EngineController::promptPrepared, Qt::QueuedConnection);
    connect(worker_, &EngineWorker::prefillFinished, this, &EngineController::onPrefillFinished, Qt::QueuedConnection);
    connect(worker_, &EngineWorker::stepsReady, this, &EngineController::onStepsReady, Qt::QueuedConnection);
    connect(worker_, &EngineWorker::generationFinished, this, &EngineController::onGenerationFinished, Qt::QueuedConnection);
    connect(worker_, &EngineWorker::generationFailed, this, &EngineController::onGenerationFailed, Qt::QueuedConnection);
    connect(worker_, &EngineWorker::deviceChanged, this, [this](const QString& description) {
        if (!model_) return;
        model_->device = description.toStdString();
        emit deviceChanged();
    }, Qt::QueuedConnection);
    connectKvRequests();
    connectRemote();
    thread_.setObjectName("inferscope-engine");
    thread_.start();
}

void EngineController::setStepHookForTesting(std::function<void(int, const std::function<bool()>&)> hook) { worker_->setStepHook(std::move(hook)); }

EngineController::~EngineController() {
    // Closing mid-generation: cancel, let the worker return, then stop its thread.
    cancelThrough_->store(UINT64_MAX);
    thread_.quit();
    thread_.wait();
}

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
    remote_ = false;
    stagesReported_ = false;
    emit reportedStagesChanged();
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

quint64 EngineController::startGeneration(GenerationJob job) {
    if (!model_ || state_ != State::Ready) return 0;
    if (remote_) return startRemoteGeneration(std::move(job));
    job.id = nextId_++;
    currentJob_ = job.id;
    measuring_ = job.measurement;
    if (measuring_) {
        clearError();
        setState(State::Prefilling);
        emit requestGenerate(job);
        return job.id;
    }
    for (const auto& [lens, attention] : std::as_const(firstStepCapture_)) {
        if (lens) job.inspect.lensStep = 0;
        if (attention) job.inspect.attentionStep = 0;
    }
    decodeSteps_ = 0;
    decodeStartUs_ = 0;
    decodeTps_ = 0;
    clearError();
    setState(State::Prefilling);
    emit requestGenerate(job);
    return job.id;
}

void EngineController::setFirstStepCapture(const QObject* who, bool lens, bool attention) {
    if (!lens && !attention) firstStepCapture_.remove(who);
    else firstStepCapture_.insert(who, {lens, attention});
}

quint64 EngineController::requestInspection(InspectionRequest request) {
    request.id = nextId_++;
    const quint64 id = request.id;
    lastInspectionAsked_ = id;
    if (remote_) {  // nothing to look inside: said so, as a reply (the panels say it before asking)
        InspectionReply reply;
        reply.id = id;
        reply.position = request.position;
        reply.error = tr("A remote server does not expose what happens inside its model.").toStdString();
        QMetaObject::invokeMethod(this, [this, reply] {
            lastInspectionAnswered_ = std::max(lastInspectionAnswered_, reply.id);
            emit inspectionArrived(reply);
        }, Qt::QueuedConnection);
        return id;
    }
    if (worker_->postInspection(std::move(request))) emit requestInspectionService();
    return id;
}

void EngineController::stop() {
    if (!generating()) return;
    setState(State::Stopping);
    if (remote_) return session_.abort();  // the connection is closed; the answer so far ends as Cancelled
    cancelThrough_->store(currentJob_);
}

void EngineController::setKv(const KvCacheStats& kv) {
    const bool reservedChanged = kv.bytesReserved != kv_.bytesReserved;
    kv_ = kv;
    if (reservedChanged) emit kvBytesReservedChanged();
}

void EngineController::onPrefillFinished(quint64 jobId, const PrefillStats& stats) {
    if (jobId != currentJob_) return;
    if (!measuring_) {
        prefillTps_ = stats.tokensPerSecond();
        ttftMs_ = double(stats.us) / 1000.0;
    }
    if (state_ == State::Prefilling) setState(State::Decoding);
    emit statsChanged();
    emit prefillFinished(jobId, stats);
}

void EngineController::onStepsReady(quint64 jobId, const StepBatch& batch) {
    if (jobId != currentJob_) return;
    if (measuring_) {
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
    emit stepsArrived(jobId, batch);
}

void EngineController::onGenerationFinished(quint64 jobId, const GenerationSummary& summary) {
    if (jobId != currentJob_) return;
    if (!measuring_) {
        setKv(summary.kv);
        prefillTps_ = summary.prefill.tokensPerSecond();
        decodeTps_ = summary.decodeTokensPerSecond();
        ttftMs_ = double(summary.timeToFirstTokenUs) / 1000.0;
    }
    currentJob_ = 0;
    setState(pendingLoad_ ? State::Loading : State::Ready);
    emit statsChanged();
    emit generationFinished(jobId, summary);
}

void EngineController::onGenerationFailed(quint64 jobId, const QString& message) {
    if (jobId != currentJob_) return;
    currentJob_ = 0;
    setError(message);
    setState(pendingLoad_ ? State::Loading : State::Ready);
    emit generationFailed(jobId, message);
}

}  // namespace inferscope
