#pragma once
// KvCacheView: the KV cache as the panel shows it. It follows an EngineController and takes the
// engine's KvCacheStats after each batch of steps, at the end of a generation and on a model
// change (while an answer streams at most once per kStreamingIntervalMs, 250 ms, on top of the
// worker's batches of about 100 ms), and exposes them as typed values (kv_cache_values.h) —
// bytes straight from the stats, the cells' origins as runs — plus the MHA / GQA / MQA and
// FP32 / FP16 / Q8_0 / Q4_0 counterfactuals. GUI thread only.

#include <QObject>
#include <QPointer>
#include <QQmlEngine>
#include <QVariantList>

#include "app/pacer.h"
#include "engine/engine_controller.h"
#include "kv_cache/kv_cache.h"
#include "visualizer/kv/kv_cache_values.h"
#include "visualizer/kv/kv_variant_model.h"

namespace inferscope {

class KvCacheView : public QObject {
    Q_OBJECT
    QML_ELEMENT
    Q_PROPERTY(inferscope::EngineController* engine READ engine WRITE setEngine NOTIFY engineChanged)
    // While false (the panel is hidden) the engine's batches are ignored; on becoming true the
    // view catches up with the engine's current stats.
    Q_PROPERTY(bool active READ active WRITE setActive NOTIFY activeChanged)
    // kv_cache_values.h: the shape (notified only when it changes), the fill, the bytes and the
    // sliding-window layers (notified with each new stats).
    Q_PROPERTY(inferscope::KvCacheShape shape READ shape NOTIFY shapeChanged)
    Q_PROPERTY(inferscope::KvCacheFill fill READ fill NOTIFY changed)
    Q_PROPERTY(inferscope::KvCacheByteFigures bytes READ bytes NOTIFY changed)
    Q_PROPERTY(inferscope::KvSlidingFigures sliding READ sliding NOTIFY changed)
    Q_PROPERTY(inferscope::KvVariantModel* attentionVariants READ attentionVariants CONSTANT)
    Q_PROPERTY(inferscope::KvVariantModel* elementVariants READ elementVariants CONSTANT)

public:
    explicit KvCacheView(QObject* parent = nullptr);

    EngineController* engine() const { return engine_; }
    void setEngine(EngineController* engine);
    bool active() const { return active_; }
    void setActive(bool active);

    // Shows these stats (the engine's, or a cache made by simulate()).
    void setStats(const KvCacheStats& stats, int queryHeads);
    // A real KvCache of this shape with no model behind it, filled with runs of cells
    // ([{origin: "prompt"|"generated", count}]): its bookkeeping and allocation are the core's.
    // For tests and demos; refuses caches over 256 MiB. Returns "" or the reason it refused.
    Q_INVOKABLE QString simulate(int layers, int queryHeads, int kvHeads, int headDim, int capacity, const QVariantList& runs);
    Q_INVOKABLE void clear();

    const KvCacheStats& stats() const { return stats_; }
    const KvCacheShape& shape() const { return shape_; }
    const KvCacheFill& fill() const { return fill_; }
    const KvCacheByteFigures& bytes() const { return bytes_; }
    const KvSlidingFigures& sliding() const { return sliding_; }
    // The accessors below compute from the stats; the values above are built from them.
    bool hasCache() const { return stats_.layout.nLayer > 0; }
    int layers() const { return stats_.layout.nLayer; }
    int queryHeads() const { return queryHeads_; }
    int kvHeads() const { return stats_.layout.nHeadKv; }
    int headDim() const { return stats_.layout.headDim; }
    int capacity() const { return stats_.layout.nCtx; }
    int bytesPerElement() const { return hasCache() ? stats_.bytesPerElement : 0; }
    QString elementType() const;
    QString elementSize() const;
    QString attention() const;
    int groupSize() const { return kvHeads() > 0 ? queryHeads_ / kvHeads() : 0; }
    int usedCells() const { return stats_.nUsed; }
    int promptCells() const { return stats_.nPromptCells; }
    int generatedCells() const { return stats_.nUsed - stats_.nPromptCells; }
    QVariantList originRuns() const;
    double bytesPerToken() const { return double(stats_.bytesPerToken); }
    double bytesUsed() const { return double(stats_.bytesUsed); }
    double bytesReserved() const { return double(stats_.bytesReserved); }
    double bytesUsedPerLayer() const { return double(stats_.bytesUsedPerLayer); }
    double bytesReservedPerLayer() const { return double(stats_.bytesReservedPerLayer); }
    double bytesUsedPerHead() const { return double(stats_.bytesUsedPerHead); }
    double bytesReservedPerHead() const { return double(stats_.bytesReservedPerHead); }
    int slidingLayers() const { return stats_.layout.slidingWindow > 0 ? stats_.layout.nSlidingLayers : 0; }
    int slidingWindow() const { return slidingLayers() > 0 ? stats_.layout.slidingWindow : 0; }
    double bytesUsedGlobalLayers() const { return double(stats_.bytesUsedGlobalLayers); }
    double bytesUsedSlidingLayers() const { return double(stats_.bytesUsedSlidingLayers); }
    double bytesNeededSlidingLayers() const { return double(stats_.bytesNeededSlidingLayers); }
    QString layerTypeSummary() const;
    Q_INVOKABLE bool isSlidingLayer(int layer) const { return slidingLayers() > 0 && stats_.layout.isSliding(layer); }
    int firstWindowPosition() const { return slidingLayers() > 0 ? std::max(0, usedCells() - slidingWindow() + 1) : 0; }
    int cellsOutsideWindow() const { return std::min(firstWindowPosition(), usedCells()); }
    QString slidingLayerList() const;
    double bytesPerLayerPerToken() const { return layers() > 0 ? double(stats_.bytesPerToken / uint64_t(layers())) : 0.0; }
    int updates() const { return updates_; }  // how many times the figures were taken (for tests)
    // While streaming: a batch that arrived within the interval waits for its end (for tests).
    bool updatePending() const { return pace_.pending(); }
    // While streaming: the next batch is shown at once, the interval since the last update is over.
    bool intervalOver() const { return pace_.due(); }
    static constexpr int kStreamingIntervalMs = 250;
    // The clock of that pace (the app's unless a test gives its own).
    void setPacerClock(PacerClock& clock) { pace_.setClock(clock); }
    KvVariantModel* attentionVariants() { return &attentionVariants_; }
    KvVariantModel* elementVariants() { return &elementVariants_; }

signals:
    void engineChanged();
    void activeChanged();
    void shapeChanged();
    void changed();

private:
    void followEngine();  // at once: the answer's end, another model or cache type, the panel shown
    // While an answer streams, at most one update per kStreamingIntervalMs; the last batch's stats
    // are shown when that interval ends, and the final stats at once when the answer ends.
    void followStreaming();
    void takeEngineStats();  // the engine's stats now
    // Rebuilds the values QML reads from the stats, once per new stats rather than at each read
    // (the summary and the runs are strings and lists); emits shapeChanged if the shape changed.
    void rebuildValues();

    QPointer<EngineController> engine_;
    QList<QMetaObject::Connection> connections_;
    KvCacheStats stats_;
    KvCacheShape shape_;
    KvCacheFill fill_;
    KvCacheByteFigures bytes_;
    KvSlidingFigures sliding_;
    int queryHeads_ = 0;
    int updates_ = 0;
    bool active_ = true;
    Pacer pace_{kStreamingIntervalMs, [this] { takeEngineStats(); }};
    KvVariantModel attentionVariants_{KvVariantModel::Axis::Attention};
    KvVariantModel elementVariants_{KvVariantModel::Axis::ElementType};
};

QString cellOriginName(CellOrigin origin);  // "empty", "prompt", "generated"

}  // namespace inferscope
