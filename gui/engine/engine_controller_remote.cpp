// EngineController connected to an OpenAI-compatible server (RemoteBackend) instead of a loaded
// file: the same states and signals, the steps from the server's logprobs (remote_vocabulary.h);
// what the backend in use says of its tokens and of an answer's origin; the model menu's labels.
#include <QDir>
#include <QFileInfo>
#include <QHash>
#include <QUrl>

#include "catalog/ollama_names.h"
#include "engine/engine_controller.h"
#include "engine/remote_backend.h"

namespace inferscope {

void EngineController::connectRemote() {
    connect(&remote_->session(), &RemoteSession::modelsListed, this, &EngineController::onServerModels);
    connect(&remote_->session(), &RemoteSession::modelsFailed, this, &EngineController::onServerModelsFailed);
}

QStringList EngineController::reportedStages() const {
    QStringList all;
    for (int s = 0; s < kSamplerStageCount; ++s) all << QString::fromLatin1(samplerStageName(SamplerStage(s)).data());
    if (!backend_ || backend_->reportsStages()) return all;
    return {all.first()};
}

std::optional<RemoteServer> EngineController::connectedServer() const {
    if (!model_ || backend_ != remote_) return std::nullopt;
    return remote_->session().server();
}

std::optional<std::string> EngineController::tokenBytes(int32_t id) const {
    auto t = tokenText(id);
    return t ? std::optional<std::string>(std::move(t->bytes)) : std::nullopt;
}

std::optional<TokenText> EngineController::tokenText(int32_t id) const {
    return model_ && backend_ ? backend_->tokenText(id) : std::nullopt;
}

AnswerOrigin EngineController::answerOrigin() const {
    AnswerOrigin o;
    if (!model_ || !backend_) return o;
    o.modelName = model_->info.name;
    o.device = model_->device;
    backend_->describe(o, *model_, kv_);
    return o;
}

namespace {

bool isServerEntry(const QString& entry) {
    return entry.startsWith(QLatin1String("http://")) || entry.startsWith(QLatin1String("https://"));
}

QString hostAndPort(const QUrl& url) {
    return url.port() > 0 ? QStringLiteral("%1:%2").arg(url.host()).arg(url.port()) : url.host();
}

// A name of at most kMaxName characters: its start and its end (a quantization, an extension) kept.
QString middleElided(const QString& name) {
    constexpr int kMaxName = 44, kTail = 16;
    if (name.size() <= kMaxName) return name;
    return name.left(kMaxName - kTail - 1) + QChar(0x2026) + name.right(kTail);
}

// A file's name, or for a blob of Ollama's store ("sha256-<hex>") the model its manifests name:
// "llama3.2:1b (Ollama)". The manifests are read once per path (the menu asks on every change).
QString fileLabel(const QString& entry) {
    const QFileInfo file(entry);
    if (!file.fileName().startsWith(QLatin1String("sha256-"))) return file.fileName();
    static QHash<QString, QString> known;  // the GUI thread's only
    auto it = known.find(entry);
    if (it == known.end()) {
        const auto name = catalog::ollamaNameOfBlob(entry.toStdString());
        it = known.insert(entry, name ? EngineController::tr("%1 (Ollama)").arg(QString::fromStdString(*name)) : file.fileName());
    }
    return *it;
}

// An entry's label at a level of detail: 0 the name (cut in its middle when long) and a server's
// host; 1 the whole name; 2 with a file's folder or a server's whole address (scheme, path); 3
// with the folder's whole path.
QString labelAt(const QString& entry, int level) {
    const bool server = isServerEntry(entry);
    const QUrl url(entry);
    const QString full = server ? url.fragment(QUrl::FullyDecoded) : fileLabel(entry);
    const QString name = level == 0 ? middleElided(full) : full;
    if (server)
        return EngineController::tr("%1 @ %2").arg(name, level < 2 ? hostAndPort(url) : url.toString(QUrl::RemoveFragment | QUrl::RemoveUserInfo));
    if (level < 2) return name;
    const QFileInfo file(entry);
    return EngineController::tr("%1 — %2").arg(name, level == 2 ? file.dir().dirName() : QDir::toNativeSeparators(file.absolutePath()));
}

}  // namespace

QString EngineController::entryLabel(const QString& entry) {
    return labelAt(entry, 1);
}

QStringList EngineController::entryLabels(const QStringList& entries) {
    QStringList labels;
    for (const QString& entry : entries) labels << labelAt(entry, 0);
    // Each entry that shares its label gets the next level of detail, until none does.
    for (int level = 1; level <= 3; ++level) {
        QStringList next = labels;
        for (int i = 0; i < labels.size(); ++i)
            if (labels.count(labels[i]) > 1) next[i] = labelAt(entries[i], level);
        labels = next;
    }
    return labels;
}

void EngineController::listServerModels(const QString& url, const QString& apiKey) {
    connecting_ = false;
    listingModels_ = true;
    serverError_.clear();
    serverModels_.clear();
    emit serverModelsChanged();
    remote_->session().listModels({RemoteSession::normalizeBase(url), apiKey, QString(), RemoteSession::userInfoOf(url)});
}

void EngineController::connectToServer(const QString& url, const QString& apiKey, const QString& model) {
    if (generating()) stop();
    const QUrl base = RemoteSession::normalizeBase(url);
    pendingServer_ = {base, apiKey, model, RemoteSession::userInfoOf(url)};
    if (!base.isValid() || model.isEmpty()) {
        const QString message = !base.isValid() ? tr("Not a server address: give one like http://127.0.0.1:8080")
                                                : tr("Choose one of the server's models.");
        setError(message);
        emit loadFailed(message);
        return;
    }
    connecting_ = true;
    listingModels_ = true;
    emit serverModelsChanged();
    loadingPath_ = entryLabel(base.toString() + QLatin1Char('#') + model);
    loadProgress_ = 0;
    loadStage_ = tr("asking the server for its models");
    emit loadProgressChanged();
    setState(State::Loading);
    remote_->session().listModels({base, apiKey, QString(), pendingServer_.userInfo});
}

void EngineController::onServerModels(const QStringList& ids) {
    listingModels_ = false;
    serverModels_ = ids;
    serverError_.clear();
    emit serverModelsChanged();
    if (!std::exchange(connecting_, false)) return;
    const RemoteServer server = pendingServer_;
    if (!ids.contains(server.model)) {
        connecting_ = true;  // still this connection's failure
        onServerModelsFailed(tr("%1 does not serve “%2” (it lists %3)").arg(server.base.toString(), server.model, ids.join(QLatin1String(", "))));
        return;
    }
    if (pendingLoad_) pendingLoad_ = 0;  // this connection replaces a file still loading
    remote_->session().setServer(server);
    credentials_.insert(server.base.toString(), {server.apiKey, server.userInfo});
    LoadedModel m;
    QUrl entry = server.base;
    entry.setFragment(server.model);
    m.path = entry.toString().toStdString();
    m.info.name = server.model.toStdString();
    m.device = tr("server %1").arg(server.base.toString()).toStdString();
    m.precision = tr("remote").toStdString();
    model_ = std::move(m);  // no tokenizer: BackendAbilities::tokenizes is false
    modelDetails_ = ModelDetails::of(*model_);
    remote_->resetStages();
    use(remote_);
    kv_ = KvCacheStats();
    prefillTps_ = decodeTps_ = ttftMs_ = 0;
    loadingPath_.clear();
    clearError();
    setState(State::Ready);
    refreshLoaded();
    emit modelChanged();
    emit deviceChanged();
    emit statsChanged();
}

void EngineController::onServerModelsFailed(const QString& message) {
    listingModels_ = false;
    serverModels_.clear();
    serverError_ = message;
    emit serverModelsChanged();
    if (!std::exchange(connecting_, false)) return;
    loadingPath_.clear();
    setError(message);
    setState(model_ ? State::Ready : State::NoModel);
    emit loadFailed(message);
}

}  // namespace inferscope
