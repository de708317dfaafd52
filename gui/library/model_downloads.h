#pragma once
// ModelDownloads: the models a person wants, from the Hugging Face hub, as the library dialog's
// "Get from Hugging Face" tab shows them — repositories with GGUF files (search), a repository's
// files with their size and, read from each file's first megabytes (HTTP range requests), its
// shape and whether it fits here, and one download at a time into our models folder with its
// progress, speed and time left; cancelled, cut or interrupted by a restart, it resumes where it
// stopped; the file is used only once its sha256 is the hub's (catalog/hub_client.h does the
// transfers, HF_ENDPOINT and HF_TOKEN as the hub's own tools read them).
//
// Every transfer blocks on a thread of its own (one for browsing, one for the download) and posts
// its result back; the GUI thread never waits on the network. A newer search or listing replaces
// the one under way; closing the app stops both and waits for them.

#include <QObject>
#include <QQmlEngine>
#include <QThread>
#include <QVariantList>
#include <atomic>
#include <functional>
#include <memory>

#include "app/qml_singleton.h"
#include "catalog/hub_client.h"

namespace inferscope {

class ModelLibrary;

class ModelDownloads : public QObject, public QmlSingleton<ModelDownloads> {
    Q_OBJECT
    QML_ELEMENT
    QML_SINGLETON
    // Browsing: a search or listing under way, and what it found. repos: {id, downloads, likes};
    // files: {path, bytes, fit, fitText} (fit "" until the file's header was read).
    Q_PROPERTY(bool browsing READ browsing NOTIFY browsingChanged)
    Q_PROPERTY(QString browseError READ browseError NOTIFY browsingChanged)
    Q_PROPERTY(QVariantList repos READ repos NOTIFY reposChanged)
    Q_PROPERTY(QString repo READ repo NOTIFY filesChanged)
    Q_PROPERTY(QVariantList files READ files NOTIFY filesChanged)
    // The download: its file, bytes, speed and time left (-1 unknown), why it stopped.
    Q_PROPERTY(bool downloading READ downloading NOTIFY downloadChanged)
    Q_PROPERTY(QString downloadName READ downloadName NOTIFY downloadChanged)
    Q_PROPERTY(double bytesDone READ bytesDone NOTIFY progressChanged)
    Q_PROPERTY(double bytesTotal READ bytesTotal NOTIFY progressChanged)
    Q_PROPERTY(double bytesPerSecond READ bytesPerSecond NOTIFY progressChanged)
    Q_PROPERTY(double secondsLeft READ secondsLeft NOTIFY progressChanged)
    Q_PROPERTY(QString downloadMessage READ downloadMessage NOTIFY downloadChanged)

public:
    // No default constructor (QML_SINGLETON would make its own). The library says where our
    // folder is, what the fit is measured against, and lists a finished download.
    ModelDownloads(ModelLibrary* library, QObject* parent);
    ~ModelDownloads() override;  // stops both threads and waits for them

    bool browsing() const { return browse_ != nullptr; }
    QString browseError() const { return browseError_; }
    QVariantList repos() const { return repos_; }
    QString repo() const { return repo_; }
    QVariantList files() const { return files_; }
    bool downloading() const { return download_ != nullptr; }
    QString downloadName() const { return downloadName_; }
    double bytesDone() const { return double(progress_.bytesDone); }
    double bytesTotal() const { return double(progress_.bytesTotal); }
    double bytesPerSecond() const { return progress_.bytesPerSecond; }
    double secondsLeft() const { return progress_.secondsLeft; }
    QString downloadMessage() const { return downloadMessage_; }

    Q_INVOKABLE void search(const QString& text);
    // The repository's GGUF files, then each one's header, one after the other.
    Q_INVOKABLE void listFiles(const QString& repo);
    // Starts (or resumes) one download; false while another runs or for a file not listed.
    Q_INVOKABLE bool download(const QString& file);
    // Stops the download; its partial file stays and the next download of it resumes.
    Q_INVOKABLE void cancelDownload();

    // The hub's address and token (HubOptions::fromEnvironment by default; tests: a fixture).
    void setHubOptions(const catalog::HubOptions& options) {
        options_ = options;
        optionsError_.clear();  // what the environment's HF_ENDPOINT got wrong no longer applies
    }

signals:
    void browsingChanged();
    void reposChanged();
    void filesChanged();
    void downloadChanged();
    void progressChanged();
    void downloaded(const QString& path);

private:
    // Runs on the browse thread with its cancel flag (set when a newer one replaces it).
    using Work = std::function<void(const std::shared_ptr<std::atomic<bool>>& cancel)>;
    void browse(Work work);  // on the browse thread, replacing the one under way
    void stopBrowse();
    void stopDownload();
    // Runs `post` on the GUI thread unless `cancel` was set meanwhile.
    void post(const std::shared_ptr<std::atomic<bool>>& cancel, std::function<void()> post);

    ModelLibrary* library_;
    catalog::HubOptions options_;
    QString optionsError_;
    QThread* browse_ = nullptr;
    QThread* download_ = nullptr;
    std::shared_ptr<std::atomic<bool>> browseCancel_, downloadCancel_;
    QString browseError_, repo_, downloadName_, downloadMessage_;
    QVariantList repos_, files_;
    std::vector<catalog::HubFile> hubFiles_;
    catalog::DownloadProgress progress_;
};

}  // namespace inferscope
