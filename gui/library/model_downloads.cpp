#include "library/model_downloads.h"

#include <QFileInfo>

#include "library/model_library.h"
#include "library/worker_thread.h"

namespace inferscope {
namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

}  // namespace

ModelDownloads::ModelDownloads(ModelLibrary* library, QObject* parent) : QObject(parent), library_(library) {
    auto options = catalog::HubOptions::fromEnvironment();
    if (options) options_ = *options;
    else optionsError_ = qs(options.error().message);  // a malformed HF_ENDPOINT: said at the first request
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
    const catalog::HubOptions options = options_;
    browse([this, options, query](const std::shared_ptr<std::atomic<bool>>& cancel) {
        auto found = catalog::searchGgufRepos(options, query);
        post(cancel, [this, found = std::move(found)] {
            repos_.clear();
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
    const catalog::HubOptions options = options_;
    browse([this, options, id](const std::shared_ptr<std::atomic<bool>>& flag) {
        const std::atomic<bool>& cancel = *flag;
        auto listed = catalog::listGgufFiles(options, id);
        if (!listed) return post(flag, [this, message = qs(listed.error().message)] { browseError_ = message; emit browsingChanged(); });
        post(flag, [this, files = *listed] {
            hubFiles_ = files;
            for (const catalog::HubFile& f : files)
                files_ << QVariantMap{{"path", qs(f.path)}, {"bytes", double(f.size)}, {"fit", QString()}, {"fitText", tr("reading its header…")}};
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
    request.progress = [this, cancel](const catalog::DownloadProgress& p) {
        post(cancel, [this, p] {
            progress_ = p;
            emit progressChanged();
        });
    };
    const catalog::HubOptions options = options_;
    downloadName_ = repo_ + QLatin1Char('/') + file;
    downloadMessage_.clear();
    progress_ = {};
    progress_.bytesTotal = it->size;
    download_ = QThread::create([this, cancel, options, request] {
        auto done = catalog::downloadModel(options, request);
        // Posted even when cancelled: the message says the partial file was kept.
        QMetaObject::invokeMethod(this, [this, done = std::move(done)] {
            download_->wait();
            delete std::exchange(download_, nullptr);
            if (done) {
                downloadMessage_ = tr("Downloaded and verified: %1").arg(qs(done->string()));
                emit downloaded(qs(done->string()));
                library_->rescan();
            } else if (done.error().kind == ErrorKind::Cancelled) {
                downloadMessage_ = tr("Stopped; the part downloaded is kept and the next download of this file resumes from it.");
            } else {
                downloadMessage_ = tr("Not downloaded: %1").arg(qs(done.error().message));
            }
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
