#include "visualizer/kv/kv_cache_view.h"

#include "app/units.h"

namespace inferscope {

QString cellOriginName(CellOrigin origin) {
    switch (origin) {
    case CellOrigin::Prompt: return QStringLiteral("prompt");
    case CellOrigin::Generated: return QStringLiteral("generated");
    case CellOrigin::Empty: break;
    }
    return QStringLiteral("empty");
}

KvCacheView::KvCacheView(QObject* parent) : QObject(parent) {}

void KvCacheView::setEngine(EngineController* engine) {
    if (engine_ == engine) return;
    for (const auto& c : connections_) disconnect(c);
    connections_.clear();
    engine_ = engine;
    if (engine_) {
        // kvStats() is current when each of these arrives: the controller stores the batch's
        // stats before relaying it.
        connections_ << connect(engine_, &EngineController::stepsArrived, this, [this](quint64, const StepBatch& batch) {
            if (batch.kv) followStreaming();
        });
        connections_ << connect(engine_, &EngineController::generationFinished, this, &KvCacheView::followEngine);
        connections_ << connect(engine_, &EngineController::modelChanged, this, &KvCacheView::followEngine);
        connections_ << connect(engine_, &EngineController::kvTypeApplied, this, &KvCacheView::followEngine);
        followEngine();
    }
    emit engineChanged();
}

void KvCacheView::setActive(bool active) {
    if (active_ == active) return;
    active_ = active;
    if (active_) followEngine();
    emit activeChanged();
}

// The grid and a dozen figures repainted with every step batch cost the engine 10% of its decode
// speed on 2 cores (bench/gui_vs_cli.sh); four updates a second still show the cache growing.
void KvCacheView::followStreaming() {
    if (active_) pace_.request();
}

void KvCacheView::followEngine() {
    pace_.ran();
    takeEngineStats();
}

void KvCacheView::takeEngineStats() {
    if (!active_) return;
    if (!engine_ || !engine_->abilities().showsCache) return clear();  // a server exposes no cache
    setStats(engine_->kvStats(), engine_->model()->info.hparams.nHead);
}

void KvCacheView::setStats(const KvCacheStats& stats, int queryHeads) {
    stats_ = stats;
    queryHeads_ = queryHeads;
    ++updates_;
    attentionVariants_.update(stats_, queryHeads_);
    elementVariants_.update(stats_, queryHeads_);
    rebuildValues();
    emit changed();
}

void KvCacheView::clear() {
    stats_ = {};
    queryHeads_ = 0;
    attentionVariants_.clear();
    elementVariants_.clear();
    rebuildValues();
    emit changed();
}

QString KvCacheView::simulate(int layers, int queryHeads, int kvHeads, int headDim, int capacity, const QVariantList& runs) {
    const KvCacheLayout layout{layers, kvHeads, headDim, capacity};
    if (queryHeads <= 0 || kvHeads <= 0 || queryHeads % kvHeads != 0)
        return tr("query heads (%1) must be a positive multiple of KV heads (%2)").arg(queryHeads).arg(kvHeads);
    const double bytes = 2.0 * layers * kvHeads * headDim * double(capacity) * sizeof(float);
    if (bytes > 256.0 * 1024 * 1024) return tr("a simulated cache is limited to 256 MiB");
    auto cache = KvCache::create(layout);
    if (!cache) return QString::fromStdString(cache.error().message);
    int32_t position = 0;
    for (const QVariant& run : runs) {
        const QVariantMap r = run.toMap();
        const int32_t count = r.value(QStringLiteral("count")).toInt();
        const QString origin = r.value(QStringLiteral("origin")).toString();
        if (count <= 0 || position + count > capacity) return tr("the runs must be positive and fit in %1 positions").arg(capacity);
        cache->commit(position, count, origin == QStringLiteral("generated") ? CellOrigin::Generated : CellOrigin::Prompt);
        position += count;
    }
    setStats(cache->stats(), queryHeads);
    return {};
}

void KvCacheView::rebuildValues() {
    const KvCacheShape shape{.hasCache = hasCache(),
                             .layers = layers(),
                             .queryHeads = queryHeads(),
                             .kvHeads = kvHeads(),
                             .headDim = headDim(),
                             .capacity = capacity(),
                             .bytesPerElement = bytesPerElement(),
                             .groupSize = groupSize(),
                             .elementType = elementType(),
                             .elementSize = elementSize(),
                             .attention = attention()};
    fill_ = {.usedCells = usedCells(), .promptCells = promptCells(), .generatedCells = generatedCells(), .originRuns = originRuns()};
    bytes_ = {.perToken = bytesPerToken(),
              .used = bytesUsed(),
              .reserved = bytesReserved(),
              .usedPerLayer = bytesUsedPerLayer(),
              .reservedPerLayer = bytesReservedPerLayer(),
              .usedPerHead = bytesUsedPerHead(),
              .reservedPerHead = bytesReservedPerHead(),
              .perLayerPerToken = bytesPerLayerPerToken()};
    sliding_ = {.layers = slidingLayers(),
                .window = slidingWindow(),
                .firstWindowPosition = firstWindowPosition(),
                .cellsOutsideWindow = cellsOutsideWindow(),
                .bytesUsedGlobalLayers = bytesUsedGlobalLayers(),
                .bytesUsedSlidingLayers = bytesUsedSlidingLayers(),
                .bytesNeededSlidingLayers = bytesNeededSlidingLayers(),
                .layerTypeSummary = layerTypeSummary(),
                .layerList = slidingLayerList()};
    // The shape changes with the model or the cache type, not with a batch: its bindings are
    // left alone while an answer streams.
    if (shape == shape_) return;
    shape_ = shape;
    emit shapeChanged();
}

QString KvCacheView::elementType() const { return hasCache() ? dtypeLabel(QString::fromLatin1(kvTypeName(stats_.layout.type))) : QString(); }

QString KvCacheView::elementSize() const {
    if (!hasCache()) return {};
    const KvType t = stats_.layout.type;
    if (!isBlockKvType(t)) return QStringLiteral("%1 B").arg(stats_.bytesPerElement);
    return QStringLiteral("%1/%2 B").arg(kvRowBytes(t, kKvBlockElements)).arg(kKvBlockElements);
}

QString KvCacheView::attention() const {
    if (!hasCache() || queryHeads_ <= 0) return QString();
    if (kvHeads() == queryHeads_) return QStringLiteral("MHA");
    return kvHeads() == 1 ? QStringLiteral("MQA") : QStringLiteral("GQA");
}

QVariantList KvCacheView::originRuns() const {
    QVariantList out;
    for (const auto& [count, origin] : stats_.originRuns)
        out.append(QVariantMap{{QStringLiteral("origin"), cellOriginName(origin)}, {QStringLiteral("count"), count}});
    return out;
}

QString KvCacheView::slidingLayerList() const {
    QStringList out;
    for (int l = 0; l < layers(); ++l)
        if (isSlidingLayer(l)) out << QString::number(l);
    return out.join(QStringLiteral(", "));
}

QString KvCacheView::layerTypeSummary() const {
    if (slidingLayers() == 0) return {};
    const int global = layers() - slidingLayers();
    const QString globalBytes = binaryBytes(stats_.bytesUsedGlobalLayers);
    const QString rest = global == 0   ? QString()
                         : global == 1 ? tr("The global layer holds %1.").arg(globalBytes)
                                       : tr("The %1 global layers hold %2.").arg(global).arg(globalBytes);
    return tr("Every layer allocates the same %1 (%2 per token): the engine keeps every position on every layer. "
              "%3 of %4 layers%5 attend to the last %6 positions only: their cells hold %7, a cache keeping only the window "
              "would need %8. %9")
        .arg(binaryBytes(stats_.bytesReservedPerLayer))
        .arg(exactBytes(stats_.bytesPerToken / uint64_t(layers())))
        .arg(slidingLayers())
        .arg(layers())
        .arg(slidingLayerList().isEmpty() ? QString() : QStringLiteral(" (%1)").arg(slidingLayerList()))
        .arg(groupedCount(uint64_t(slidingWindow())))
        .arg(binaryBytes(stats_.bytesUsedSlidingLayers))
        .arg(binaryBytes(stats_.bytesNeededSlidingLayers))
        .arg(rest)
        .trimmed();
}

}  // namespace inferscope
