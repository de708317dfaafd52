#pragma once
// ModelDownloads: the models a person wants, from the Hugging Face hub, as the library dialog's
// "Get from Hugging Face" tab shows them — repositories with GGUF files (search), a repository's
// files with their size and, read from each file's first megabytes (HTTP range requests), its
// shape and whether it fits here, and one download at a time into our models folder with its
// progress, speed and time left; cancelled, cut or interrupted by a restart, it resumes where it
// stopped; the file is used only once its sha256 is the hub's (catalog/hub_client.h does the
// transfers, HF_ENDPOINT and HF_TOKEN as the hub's own tools read them).
//
// A file already here says so (downloaded, or the part a download would resume from, after a
// restart too), and one without room on the disk says how much it needs. A gated or private
// repository says what to do: the token comes from HF_TOKEN, or from the field the tab shows
// (kept for this run, or in the system keyring when the person asks).
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
#include "settings/secret_store.h"

namespace inferscope {

class ModelLibrary;

class ModelDownloads : public QObject, public QmlSingleton<ModelDownloads> {
    Q_OBJECT
    QML_ELEMENT
    QML_SINGLETON
    // Browsing: a search or listing under way, and what it found. repos: {id, downloads, likes};
    // files: {path, bytes, fit, fitText, downloaded, kept, room} (fit "" until the file's header
    // was read; downloaded: it is in our folder; kept: bytes a download resumes from; room: "" or
    // why the disk cannot take it).
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
    // The hub page of a repository that refused us (401/403: gated, private, a bad token), "" else.
    Q_PROPERTY(QString deniedPage READ deniedPage NOTIFY deniedChanged)
    // Where the token sent to the hub comes from: "environment" (HF_TOKEN), "keyring", "session"
    // (typed in this run), "" (none); and why the keyring failed, "" when it did not.
    Q_PROPERTY(QString tokenSource READ tokenSource NOTIFY tokenChanged)
    Q_PROPERTY(QString tokenProblem READ tokenProblem NOTIFY tokenChanged)

public:
    // No default constructor (QML_SINGLETON would make its own). The library says where our
    // folder is, what the fit is measured against, and lists a finished download; `secrets` keeps
    // a token the person asks to remember (the system keyring in the app).
    ModelDownloads(ModelLibrary* library, QObject* parent, std::unique_ptr<SecretStore> secrets = nullptr);
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
    QString deniedPage() const { return deniedPage_; }
    QString tokenSource() const { return tokenSource_; }
    QString tokenProblem() const { return tokenProblem_; }

    Q_INVOKABLE void search(const QString& text);
    // The repository's GGUF files, then each one's header, one after the other.
    Q_INVOKABLE void listFiles(const QString& repo);
    // Starts (or resumes) one download; false while another runs or for a file not listed.
    Q_INVOKABLE bool download(const QString& file);
    // Stops the download; its partial file stays and the next download of it resumes.
    Q_INVOKABLE void cancelDownload();
    // The token for the hub from now on ("" forgets it); kept in the keyring when `remember`,
    // else for this run (and any remembered one is removed). HF_TOKEN, when set, comes first.
    Q_INVOKABLE void setToken(const QString& token, bool remember);

    // The hub's address and token (HubOptions::fromEnvironment by default; tests: a fixture).
    void setHubOptions(const catalog::HubOptions& options);
    // Where a download checks its room (catalog::freeDiskSpace by default; tests: a full disk).
    void setFreeSpaceProbe(std::function<std::optional<uint64_t>(const std::filesystem::path&)> probe) { freeSpace_ = std::move(probe); }

signals:
    void browsingChanged();
    void reposChanged();
    void filesChanged();
    void downloadChanged();
    void progressChanged();
    void downloaded(const QString& path);
    void deniedChanged();
    void tokenChanged();

private:
    // Runs on the browse thread with its cancel flag (set when a newer one replaces it).
    using Work = std::function<void(const std::shared_ptr<std::atomic<bool>>& cancel)>;
    void browse(Work work);  // on the browse thread, replacing the one under way
    void stopBrowse();
    void stopDownload();
    // Runs `post` on the GUI thread unless `cancel` was set meanwhile.
    void post(const std::shared_ptr<std::atomic<bool>>& cancel, std::function<void()> post);
    // The options a request goes with: ours, with the token and the app's words for it.
    catalog::HubOptions requestOptions() const;
    // A row's local facts: downloaded, kept, room (on whichever thread lists the files).
    static void describeLocalCopy(QVariantMap& row, const catalog::LocalCopy& copy, const catalog::HubFile& file,
                                  std::optional<uint64_t> freeBytes);
    void refreshLocalCopies();
    // A failure's words, and the page of a repository that refused us.
    void setDenied(const Error& error, const QString& repo);
    void setTokenState(const QString& source, const QString& problem);
    void readRememberedToken();
    QString keyringAccount() const;

    ModelLibrary* library_;
    catalog::HubOptions options_;
    QString optionsError_;
    std::unique_ptr<SecretStore> secrets_;
    std::optional<std::string> typedToken_;  // from the field (or the keyring) when HF_TOKEN is not set
    QString tokenSource_, tokenProblem_, deniedPage_;
    std::function<std::optional<uint64_t>(const std::filesystem::path&)> freeSpace_;
    QThread* browse_ = nullptr;
    QThread* download_ = nullptr;
    std::shared_ptr<std::atomic<bool>> browseCancel_, downloadCancel_;
    QString browseError_, repo_, downloadName_, downloadMessage_;
    QVariantList repos_, files_;
    std::vector<catalog::HubFile> hubFiles_;
    catalog::DownloadProgress progress_;
};

}  // namespace inferscope
