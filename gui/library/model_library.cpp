#include "library/model_library.h"

#include <QDir>
#include <QFileInfo>
#include <QSettings>
#include <QUrl>
#include <map>

#include "app/units.h"
#include "catalog/model_summary.h"
#include "library/worker_thread.h"

namespace inferscope {
namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

// The tool as the person knows it.
QString sourceLabel(catalog::Source source) {
    switch (source) {
        case catalog::Source::Ollama: return QStringLiteral("Ollama");
        case catalog::Source::LmStudio: return QStringLiteral("LM Studio");
        case catalog::Source::Gpt4All: return QStringLiteral("GPT4All");
        case catalog::Source::Jan: return QStringLiteral("Jan");
        case catalog::Source::HuggingFace: return ModelLibrary::tr("Hugging Face cache");
        case catalog::Source::LlamaCpp: return ModelLibrary::tr("llama.cpp cache");
        case catalog::Source::Inferscope: return ModelLibrary::tr("Inferscope downloads");
        case catalog::Source::Folder: return ModelLibrary::tr("your folder");
    }
    return {};
}

constexpr int kProgressSteps = 50;  // progress events per scan at most

}  // namespace

ModelLibrary::ModelLibrary(QObject* parent) : QAbstractListModel(parent) {}

ModelLibrary::~ModelLibrary() { stopScan(); }

int ModelLibrary::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(models_.size()); }

QHash<int, QByteArray> ModelLibrary::roleNames() const {
    return {{NameRole, "name"},         {SourceRole, "source"},   {ArchitectureRole, "architecture"},
            {ParametersRole, "parameters"}, {QuantizationRole, "quantization"}, {BytesRole, "bytes"},
            {ContextRole, "context"},   {PathRole, "path"},       {FolderRole, "folder"},
            {RunnableRole, "runnable"}, {FitRole, "fit"},         {FitTextRole, "fitText"}};
}

QVariant ModelLibrary::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= int(models_.size())) return {};
    const catalog::LocalModel& m = models_[size_t(index.row())];
    const catalog::ModelSummary* s = m.summary ? &*m.summary : nullptr;
    switch (role) {
        case Qt::DisplayRole:
        case NameRole: return qs(m.name);
        case SourceRole: return sourceLabel(m.source);
        case ArchitectureRole: return s ? qs(s->architecture) : QString();
        case ParametersRole: return s ? double(s->parameters) : 0.0;
        case QuantizationRole: return s ? qs(s->quantization) : QString();
        case BytesRole: return double(m.bytes);
        case ContextRole: return s ? s->trainedContext : 0;
        case PathRole: return QString::fromStdString(m.path.string());
        case FolderRole: return QDir::toNativeSeparators(QString::fromStdString(m.path.parent_path().string()));
        case RunnableRole: return s && s->runnable;
        case FitRole: return fits_.at(size_t(index.row())).verdict;
        case FitTextRole: return fits_.at(size_t(index.row())).text;
        default: return {};
    }
}

QString ModelLibrary::memoryNow() const {
    return available_ ? tr("%1 available now").arg(binaryBytes(*available_)) : tr("available memory unknown");
}

void ModelLibrary::setPersistent(bool persistent) {
    persistent_ = persistent;
    if (!persistent) return;
    folders_ = QSettings().value(QStringLiteral("library/folders")).toStringList();
    emit foldersChanged();
}

void ModelLibrary::saveFolders() const {
    if (persistent_) QSettings().setValue(QStringLiteral("library/folders"), folders_);
}

bool ModelLibrary::addFolder(const QString& pathOrUrl) {
    const QUrl url(pathOrUrl);
    QString path = url.isLocalFile() ? url.toLocalFile() : pathOrUrl.trimmed();
    if (path == QLatin1String("~") || path.startsWith(QLatin1String("~/"))) path = QDir::homePath() + path.mid(1);
    path = QDir::cleanPath(path);
    if (path.isEmpty() || !QFileInfo(path).isDir() || folders_.contains(path)) return false;
    folders_ << path;
    saveFolders();
    emit foldersChanged();
    rescan();
    return true;
}

void ModelLibrary::removeFolder(const QString& path) {
    if (!folders_.removeOne(path)) return;
    saveFolders();
    emit foldersChanged();
    rescan();
}

void ModelLibrary::stopScan() {
    if (stopWorker(scan_, cancel_)) emit scanningChanged();  // it stops between two files
}

void ModelLibrary::rescan() {
    stopScan();
    catalog::ScanOptions options;
    options.env = env_;
    for (const QString& f : std::as_const(folders_)) options.folders.emplace_back(f.toStdString());
    options.cacheFile = catalog::headerCacheFile(env_);
    auto cancel = std::make_shared<std::atomic<bool>>(false);
    cancel_ = cancel;
    options.cancel = cancel.get();
    // This object outlives the thread (stopScan waits for it); what it posts is dropped once the
    // scan was stopped.
    options.progress = [this, cancel](size_t done, size_t total) {
        if (total > kProgressSteps && done % (total / kProgressSteps) != 0 && done != total) return;
        QMetaObject::invokeMethod(this, [this, cancel, done, total] {
            if (cancel->load()) return;
            done_ = int(done);
            total_ = int(total);
            emit progressChanged();
        }, Qt::QueuedConnection);
    };
    scan_ = QThread::create([this, cancel, options = std::move(options)] {
        auto report = std::make_shared<catalog::ScanReport>(catalog::scanLocalModels(options));
        QMetaObject::invokeMethod(this, [this, cancel, report] {
            if (!cancel->load()) onScanned(*report);
        }, Qt::QueuedConnection);
    });
    scan_->setObjectName(QStringLiteral("inferscope-library"));
    done_ = total_ = 0;
    emit progressChanged();
    scan_->start();
    emit scanningChanged();
}

void ModelLibrary::onScanned(const catalog::ScanReport& report) {
    scan_->wait();  // it posted this as its last act
    delete std::exchange(scan_, nullptr);
    beginResetModel();
    models_ = report.models;
    computeFits();
    endResetModel();
    notes_.clear();
    for (const std::string& n : report.notes) notes_ << qs(n);
    std::map<catalog::Source, int> bySource;
    for (const catalog::LocalModel& m : models_) ++bySource[m.source];
    QStringList parts;
    for (const auto& [source, n] : bySource) parts << tr("%1 from %2").arg(n).arg(sourceLabel(source));
    const QString count = models_.size() == 1 ? tr("1 model") : tr("%1 models").arg(models_.size());
    summary_ = models_.empty() ? tr("No GGUF models found on this computer.") : tr("%1: %2").arg(count, parts.join(QStringLiteral(", ")));
    emit scanningChanged();
    emit listed();
}

void ModelLibrary::setKvType(KvType type) {
    if (type == kvType_) return;
    kvType_ = type;
    refit();
}

void ModelLibrary::computeFits() {
    const MemoryFigures have = memoryProbe_();
    available_ = have.available;
    fits_.clear();
    for (const catalog::LocalModel& m : models_) fits_.push_back(fitOf(m, have));
}

void ModelLibrary::refit() {
    computeFits();
    if (!models_.empty()) emit dataChanged(index(0), index(int(models_.size()) - 1), {FitRole, FitTextRole});
    emit listed();
}

QVariantMap ModelLibrary::fitAt(int row, int context) const {
    if (row < 0 || row >= int(models_.size())) return {};
    const Fit f = fitOf(models_[size_t(row)], memoryProbe_(), std::max(0, context));
    return {{QStringLiteral("fit"), f.verdict}, {QStringLiteral("text"), f.text}};
}

QList<int> ModelLibrary::contextChoices(int row) const {
    if (row < 0 || row >= int(models_.size()) || !models_[size_t(row)].summary) return {};
    const int trained = models_[size_t(row)].summary->trainedContext;
    QList<int> choices;
    for (int c = 512; c < trained; c *= 2) choices << c;
    if (trained > 0) choices << trained;
    return choices;
}

int ModelLibrary::rememberedContext(const QString& path) const {
    if (persistent_) return QSettings().value(QStringLiteral("library/context/") + QString::fromLatin1(path.toUtf8().toBase64())).toInt();
    return contexts_.value(path);
}

void ModelLibrary::rememberContext(const QString& path, int context) {
    if (persistent_) QSettings().setValue(QStringLiteral("library/context/") + QString::fromLatin1(path.toUtf8().toBase64()), context);
    else contexts_.insert(path, context);
}

std::pair<QString, QString> ModelLibrary::describeFit(const catalog::ModelSummary& summary, int32_t context) const {
    const Fit f = fitOf(summary, memoryProbe_(), context);
    return {f.verdict, f.text};
}

ModelLibrary::Fit ModelLibrary::fitOf(const catalog::LocalModel& m, const MemoryFigures& have, int32_t context) const {
    if (!m.summary) return {QString(), tr("cannot be read: %1").arg(qs(m.error))};
    return fitOf(*m.summary, have, context);
}

ModelLibrary::Fit ModelLibrary::fitOf(const catalog::ModelSummary& s, const MemoryFigures& have, int32_t context) const {
    if (!s.runnable) return {QString(), tr("not supported: %1").arg(qs(s.refusal))};
    const auto fit = catalog::fitOf(s, {context, kvType_, ComputePrecision::Auto, 0}, have);
    if (!fit) return {QString(), tr("fit unknown")};
    const QString need = binaryBytes(fit->need.residentBytes());
    const int32_t asked = context > 0 ? std::min(context, s.trainedContext) : s.trainedContext;
    switch (fit->verdict) {
        case FitVerdict::Fits:
            return {QStringLiteral("fits"), tr("fits: %1 with %2 tokens of context").arg(need, groupedCount(uint64_t(fit->context)))};
        case FitVerdict::FitsSmallerContext:
            return {QStringLiteral("smaller"), tr(asked == s.trainedContext ? "fits with %1 tokens of context (%2), not the trained %3"
                                                                                     : "fits with %1 tokens of context (%2), not %3")
                                                   .arg(groupedCount(uint64_t(fit->context)), need, groupedCount(uint64_t(asked)))};
        case FitVerdict::DoesNotFit:
            break;
    }
    const QString needed = fit->shortfall ? binaryBytes(fit->shortfall->needed) : need;
    const QString allowed = fit->shortfall ? binaryBytes(fit->shortfall->allowed) : QString();
    return {QStringLiteral("no"), fit->shortfall ? tr("does not fit: needs %1, %2 allows %3").arg(needed, qs(fit->shortfall->limit), allowed)
                                                 : tr("does not fit: needs %1").arg(needed)};
}

}  // namespace inferscope
