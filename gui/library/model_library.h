#pragma once
// ModelLibrary: the GGUF models this computer already has, as the window lists them — found in
// Ollama's, LM Studio's, GPT4All's and Jan's folders, the Hugging Face and llama.cpp caches, our
// own folder and the folders the person adds (catalog/local_models.h says where each is looked
// for; nothing is ever written there). One row per model: its name as its tool names it, family,
// parameters, quantization, size, trained context, where it lives, and whether it fits in memory
// now at its trained context with the app's KV cache type (catalog::fitOf, the loader's own check).
//
// The scan reads headers only, on its own thread (catalog::scanLocalModels, with the header cache
// keyed on path, size and modification time), and hands the rows over in one go: listing fifty
// models never stalls the window. The fit is computed again on the GUI thread (arithmetic, no file
// read) when the KV type changes or on refit().

#include <QAbstractListModel>
#include <QHash>
#include <QVariantMap>
#include <QQmlEngine>
#include <QStringList>
#include <QThread>
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "app/qml_singleton.h"
#include "catalog/local_models.h"
#include "engine/load_memory.h"

namespace inferscope {

class ModelLibrary : public QAbstractListModel, public QmlSingleton<ModelLibrary> {
    Q_OBJECT
    QML_ELEMENT
    QML_SINGLETON
    Q_PROPERTY(int count READ count NOTIFY listed)
    Q_PROPERTY(bool scanning READ scanning NOTIFY scanningChanged)
    Q_PROPERTY(int headersDone READ headersDone NOTIFY progressChanged)
    Q_PROPERTY(int headersTotal READ headersTotal NOTIFY progressChanged)
    // After a scan: "5 models: 3 from Ollama, 2 from LM Studio" and what was skipped and why.
    Q_PROPERTY(QString summary READ summary NOTIFY listed)
    Q_PROPERTY(QStringList notes READ notes NOTIFY listed)
    // The folders the person added (looked through as "Your folder"); kept in the settings.
    Q_PROPERTY(QStringList folders READ folders NOTIFY foldersChanged)
    // "18.2 GiB available now": what the fit column is measured against.
    Q_PROPERTY(QString memoryNow READ memoryNow NOTIFY listed)

public:
    enum Role {
        NameRole = Qt::UserRole + 1,
        SourceRole,        // "Ollama", "LM Studio", … as the person knows the tool
        ArchitectureRole,  // "llama", "qwen2", …
        ParametersRole,    // double, 0 when unknown
        QuantizationRole,  // "Q4_K_M", "F16", …
        BytesRole,         // the file's size (double)
        ContextRole,       // the trained context (0 when the header has none)
        PathRole,          // the file, as its tool keeps it (what Open loads)
        FolderRole,        // where it lives, for the row's second line
        RunnableRole,      // the engine would load it
        FitRole,           // "fits" | "smaller" | "no" | "" (unknown: unreadable or not runnable)
        FitTextRole,       // "fits (1.2 GiB)", "fits with a smaller context (2,048)", "does not fit (needs …)",
                           // or why it cannot be opened
    };
    Q_ENUM(Role)

    // No default constructor: with one, Qt 6.4's QML_SINGLETON would build its own instance
    // instead of calling create().
    explicit ModelLibrary(QObject* parent);
    ~ModelLibrary() override;  // stops a scan under way (between two files) and waits for it

    int rowCount(const QModelIndex& parent = QModelIndex()) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QHash<int, QByteArray> roleNames() const override;

    int count() const { return int(models_.size()); }
    bool scanning() const { return scan_ != nullptr; }
    int headersDone() const { return done_; }
    int headersTotal() const { return total_; }
    QString summary() const { return summary_; }
    QStringList notes() const { return notes_; }
    QStringList folders() const { return folders_; }
    QString memoryNow() const;

    // Looks through every source again (a scan under way is stopped first). The first call of a run
    // reads the header cache; later ones find only what changed.
    Q_INVOKABLE void rescan();
    // Adds or removes a folder of the person's own (a path, "~/…", or a file:// URL) and rescans;
    // false when it is no folder or listed already.
    Q_INVOKABLE bool addFolder(const QString& pathOrUrl);
    Q_INVOKABLE void removeFolder(const QString& path);
    // The fit again, with the memory available now.
    Q_INVOKABLE void refit();
    // Row `row` at a context of `context` tokens: {"fit": "fits" | "smaller" | "no" | "", "text": …,
    // "context": the context a load would get}, as the rows say it.
    Q_INVOKABLE QVariantMap fitAt(int row, int context) const;
    // The contexts the dialog offers for row `row`: powers of two from 512 up to the trained
    // length, and the trained length itself.
    Q_INVOKABLE QList<int> contextChoices(int row) const;
    // The context a model was last opened with from the library (0: none remembered, the loader's
    // default); kept per file in the settings.
    Q_INVOKABLE int rememberedContext(const QString& path) const;
    Q_INVOKABLE void rememberContext(const QString& path, int context);

    // The KV cache type loads use (AppSettings.kvType): the fit is for it.
    void setKvType(KvType type);
    // Where to look (tests: a fake home) and where the header cache is kept; the process's
    // environment by default. Takes effect at the next rescan.
    void setEnvironment(const catalog::Environment& env) { env_ = env; }
    // What the fit is measured against (readMemoryFigures: MemAvailable and the process's limits);
    // tests give a machine of their own. Takes effect at the next refit.
    void setMemoryProbe(std::function<MemoryFigures()> probe) { memoryProbe_ = std::move(probe); }
    // The folders are read from and written to the settings (the app; not tests or --screenshot).
    void setPersistent(bool persistent);
    const std::vector<catalog::LocalModel>& models() const { return models_; }
    const catalog::Environment& environment() const { return env_; }
    // What a row says of a model with this header at `context` tokens (0: its trained length), with
    // the app's KV type and the memory available now: (FitRole, FitTextRole). The hub's files too.
    std::pair<QString, QString> describeFit(const catalog::ModelSummary& summary, int32_t context = 0) const;

signals:
    void scanningChanged();
    void progressChanged();
    void listed();
    void foldersChanged();

private:
    struct Fit {
        QString verdict;  // FitRole
        QString text;     // FitTextRole
    };
    Fit fitOf(const catalog::LocalModel& model, const MemoryFigures& have, int32_t context = 0) const;
    Fit fitOf(const catalog::ModelSummary& summary, const MemoryFigures& have, int32_t context) const;
    void computeFits();  // fits_ for models_, with the memory available now
    void onScanned(const catalog::ScanReport& report);
    void stopScan();
    void saveFolders() const;

    catalog::Environment env_ = catalog::Environment::fromProcess();
    std::vector<catalog::LocalModel> models_;
    std::vector<Fit> fits_;
    QStringList folders_, notes_;
    QHash<QString, int> contexts_;  // path → context (tests and --screenshot: not in the settings)
    QString summary_;
    std::optional<uint64_t> available_;
    std::function<MemoryFigures()> memoryProbe_ = readMemoryFigures;
    KvType kvType_ = KvType::F16;  // AppSettings' default
    bool persistent_ = false;
    int done_ = 0, total_ = 0;
    QThread* scan_ = nullptr;
    std::shared_ptr<std::atomic<bool>> cancel_;
};

}  // namespace inferscope
