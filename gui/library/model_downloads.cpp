#include "library/model_downloads.h"

#include <QFileInfo>
#include <QPointer>
#include <algorithm>

#include "common/memory_budget.h"

#include "library/model_library.h"
#include "library/worker_thread.h"

namespace inferscope {
namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

}  // namespace

ModelDownloads::ModelDownloads(ModelLibrary* library, QObject* parent, std::unique_ptr<SecretStore> secrets)
    : QObject(parent), library_(library), secrets_(secrets ? std::move(secrets) : memoryKeyring()) {
    auto options = catalog::HubOptions::fromEnvironment();
    if (options) options_ = *options;
    else optionsError_ = qs(options.error().message);  // a malformed HF_ENDPOINT: said at the first request
    if (options_.token) tokenSource_ = QStringLiteral("environment");
    else readRememberedToken();
}

void ModelDownloads::setHubOptions(const catalog::HubOptions& options) {
    options_ = options;
    optionsError_.clear();  // what the environment's HF_ENDPOINT got wrong no longer applies
    typedToken_.reset();
    setTokenState(options_.token ? QStringLiteral("environment") : QString(), QString());
    if (!options_.token) readRememberedToken();
}

QString ModelDownloads::keyringAccount() const { return QStringLiteral("Hugging Face token for %1").arg(qs(options_.endpoint)); }

void ModelDownloads::readRememberedToken() {
    const QString account = keyringAccount();
    secrets_->read(account, [this, account, alive = QPointer<ModelDownloads>(this)](std::optional<QString> found, QString error) {
        if (!alive || account != keyringAccount() || options_.token || typedToken_) return;  // replaced meanwhile
        if (found && !found->isEmpty()) {
            typedToken_ = found->toStdString();
            setTokenState(QStringLiteral("keyring"), QString());
        } else if (!error.isEmpty()) {
            setTokenState(QString(), error);
        }
    });
}

void ModelDownloads::setTokenState(const QString& source, const QString& problem) {
    const QString p = problem.isEmpty() ? QString()
                                        : tr("The system keyring could not be used (%1): the token is kept for this run only.").arg(problem.left(200));
    if (source == tokenSource_ && p == tokenProblem_) return;
    tokenSource_ = source;
    tokenProblem_ = p;
    emit tokenChanged();
}

void ModelDownloads::setToken(const QString& token, bool remember) {
    if (options_.token) return;  // HF_TOKEN comes first, as the hub's own tools have it
    const QString t = token.trimmed();
    if (std::any_of(t.begin(), t.end(), [](QChar c) { return c.unicode() <= 0x20 || c.unicode() >= 0x7f; })) {
        setTokenState(tokenSource_, QString());
        return;  // a token is printable ASCII: the field says so before it gets here
    }
    typedToken_ = t.isEmpty() ? std::nullopt : std::optional<std::string>(t.toStdString());
    setTokenState(t.isEmpty() ? QString() : remember ? QStringLiteral("keyring") : QStringLiteral("session"), QString());
    auto done = [this, alive = QPointer<ModelDownloads>(this)](QString error) {
        if (alive && !error.isEmpty()) setTokenState(typedToken_ ? QStringLiteral("session") : QString(), error);
    };
    if (remember && !t.isEmpty()) secrets_->write(keyringAccount(), t, done);
    else secrets_->remove(keyringAccount(), done);
}

catalog::HubOptions ModelDownloads::requestOptions() const {
    catalog::HubOptions o = options_;
    if (!o.token && typedToken_) {
        o.token = typedToken_;
        o.tokenName = "the token you entered";
    }
    o.tokenAdvice = "set the Hugging Face token below";
    return o;
}

void ModelDownloads::setDenied(const Error& error, const QString& repo) {
    const QString page = error.kind == ErrorKind::Denied ? qs(options_.endpoint) + QLatin1Char('/') + repo : QString();
    if (page == deniedPage_) return;
    deniedPage_ = page;
    emit deniedChanged();
}

void ModelDownloads::describeLocalCopy(QVariantMap& row, const catalog::LocalCopy& copy, const catalog::HubFile& file,
                                       std::optional<uint64_t> freeBytes) {
    row["downloaded"] = copy.complete;
    row["localPath"] = copy.complete ? qs(copy.path.string()) : QString();
    row["kept"] = double(copy.kept);
    const uint64_t needed = catalog::diskNeeded(file, copy.kept);
    row["room"] = !copy.complete && freeBytes && *freeBytes < needed
                      ? tr("Not enough disk space: it needs %1, %2 free").arg(qs(formatBytes(needed)), qs(formatBytes(*freeBytes)))
                      : QString();
}

void ModelDownloads::refreshLocalCopies() {
    const auto folder = catalog::inferscopeModelsFolder(library_->environment());
    const auto dir = catalog::downloadDestination(folder, repo_.toStdString(), "x").parent_path();
    const auto freeBytes = freeSpace_ ? freeSpace_(dir) : catalog::freeDiskSpace(dir);
    for (size_t i = 0; i < hubFiles_.size() && i < size_t(files_.size()); ++i) {
        QVariantMap row = files_[qsizetype(i)].toMap();
        describeLocalCopy(row, catalog::localCopyOf(folder, repo_.toStdString(), hubFiles_[i]), hubFiles_[i], freeBytes);
        files_[qsizetype(i)] = row;
    }
    emit filesChanged();
}

ModelDownloads::~ModelDownloads() {
    stopBrowse();
    stopDownload();
}

void ModelDownloads::post(const std::shared_ptr<std::atomic<bool>>& cancel, std::function<void()> post) {
    // This object outlives the threads (their stop waits for them); what a stopped one posts is dropped.
    QMetaObject::invokeMethod(this, [cancel, post = std::move(post)] {
        if (!cancel->load()) post();
    }, Qt::QueuedConnection);
}

void ModelDownloads::stopBrowse() {
    if (stopWorker(browse_, browseCancel_)) emit browsingChanged();
}

void ModelDownloads::stopDownload() { stopWorker(download_, downloadCancel_); }

void ModelDownloads::browse(Work work) {
    stopBrowse();
    browseError_ = optionsError_;
    if (!optionsError_.isEmpty()) return emit browsingChanged();
    auto cancel = std::make_shared<std::atomic<bool>>(false);
    browseCancel_ = cancel;
    browse_ = QThread::create([this, cancel, work = std::move(work)] {
        work(cancel);
        // The last thing it does: the GUI thread then joins it.
        post(cancel, [this] {
            browse_->wait();
            delete std::exchange(browse_, nullptr);
            emit browsingChanged();
        });
    });
    browse_->setObjectName(QStringLiteral("inferscope-hub"));
    browse_->start();
    emit browsingChanged();
}

void ModelDownloads::search(const QString& text) {
    const std::string query = text.trimmed().toStdString();
    if (query.empty()) return;
    const catalog::HubOptions options = requestOptions();
    browse([this, options, query](const std::shared_ptr<std::atomic<bool>>& cancel) {
        auto found = catalog::searchGgufRepos(options, query);
        post(cancel, [this, found = std::move(found)] {
            repos_.clear();
            setDenied(found ? Error{} : found.error(), QString());
            if (!found) browseError_ = qs(found.error().message);
            else
                for (const catalog::HubRepo& r : *found)
                    repos_ << QVariantMap{{"id", qs(r.id)}, {"downloads", double(r.downloads)}, {"likes", double(r.likes)}};
            emit reposChanged();
        });
    });
}

void ModelDownloads::listFiles(const QString& repo) {
    const std::string id = repo.toStdString();
    if (!catalog::validRepoId(id)) return;
    repo_ = repo;
    files_.clear();
    hubFiles_.clear();
    emit filesChanged();
    const catalog::HubOptions options = requestOptions();
    const auto folder = catalog::inferscopeModelsFolder(library_->environment());
    auto freeSpace = freeSpace_;
    browse([this, options, id, folder, freeSpace](const std::shared_ptr<std::atomic<bool>>& flag) {
        const std::atomic<bool>& cancel = *flag;
        auto listed = catalog::listGgufFiles(options, id);
        if (!listed)
            return post(flag, [this, error = listed.error(), repo = qs(id)] {
                browseError_ = qs(error.message);
                setDenied(error, repo);
                emit browsingChanged();
            });
        // What of each file is here already, and whether the disk has room for the rest.
        const auto dir = catalog::downloadDestination(folder, id, "x").parent_path();
        const auto freeBytes = freeSpace ? freeSpace(dir) : catalog::freeDiskSpace(dir);
        QVariantList rows;
        for (const catalog::HubFile& f : *listed) {
            QVariantMap row{{"path", qs(f.path)}, {"bytes", double(f.size)}, {"fit", QString()}, {"fitText", tr("reading its header…")}};
            describeLocalCopy(row, catalog::localCopyOf(folder, id, f), f, freeBytes);
            rows << row;
        }
        post(flag, [this, files = *listed, rows] {
            hubFiles_ = files;
            files_ = rows;
            setDenied(Error{}, QString());
            emit filesChanged();
        });
        // Each file's header (a few MB by range request), for its shape and fit.
        for (size_t i = 0; i < listed->size() && !cancel.load(); ++i) {
            auto summary = catalog::readRemoteHeader(options, id, (*listed)[i], "main", nullptr, &cancel);
            post(flag, [this, i, summary = std::move(summary)] {
                if (i >= size_t(files_.size())) return;
                QVariantMap row = files_[qsizetype(i)].toMap();
                if (summary) {
                    const auto [fit, text] = library_->describeFit(*summary);
                    row["fit"] = fit;
                    row["fitText"] = QStringLiteral("%1 %2 · %3").arg(qs(summary->architecture), qs(summary->quantization), text);
                } else {
                    row["fitText"] = tr("header not read: %1").arg(qs(summary.error().message));
                }
                files_[qsizetype(i)] = row;
                emit filesChanged();
            });
        }
    });
}

bool ModelDownloads::download(const QString& file) {
    if (download_) return false;
    const auto it = std::find_if(hubFiles_.begin(), hubFiles_.end(), [&](const catalog::HubFile& f) { return qs(f.path) == file; });
    if (it == hubFiles_.end()) return false;
    auto cancel = std::make_shared<std::atomic<bool>>(false);
    downloadCancel_ = cancel;
    catalog::DownloadRequest request;
    request.repo = repo_.toStdString();
    request.file = it->path;
    request.modelsFolder = catalog::inferscopeModelsFolder(library_->environment());
    request.cancel = cancel.get();
    request.freeSpace = freeSpace_;
    request.progress = [this, cancel](const catalog::DownloadProgress& p) {
        post(cancel, [this, p] {
            progress_ = p;
            emit progressChanged();
        });
    };
    const catalog::HubOptions options = requestOptions();
    downloadName_ = repo_ + QLatin1Char('/') + file;
    downloadMessage_.clear();
    progress_ = {};
    progress_.bytesTotal = it->size;
    download_ = QThread::create([this, cancel, options, request] {
        auto done = catalog::downloadModel(options, request);
        // Posted even when cancelled: the message says the partial file was kept.
        QMetaObject::invokeMethod(this, [this, done = std::move(done), repo = qs(request.repo)] {
            download_->wait();
            delete std::exchange(download_, nullptr);
            setDenied(done ? Error{} : done.error(), repo);
            if (done) {
                downloadMessage_ = tr("Downloaded and verified: %1").arg(qs(done->string()));
                emit downloaded(qs(done->string()));
                library_->rescan();
            } else if (done.error().kind == ErrorKind::Cancelled) {
                downloadMessage_ = tr("Stopped; the part downloaded is kept and the next download of this file resumes from it.");
            } else {
                downloadMessage_ = tr("Not downloaded: %1").arg(qs(done.error().message));
            }
            if (repo == repo_) refreshLocalCopies();  // "Downloaded", or the part a next try resumes
            emit downloadChanged();
        }, Qt::QueuedConnection);
    });
    download_->setObjectName(QStringLiteral("inferscope-download"));
    download_->start();
    emit downloadChanged();
    emit progressChanged();
    return true;
}

void ModelDownloads::cancelDownload() {
    if (downloadCancel_) downloadCancel_->store(true);  // the thread ends within ~100 ms and says so
}

}  // namespace inferscope
