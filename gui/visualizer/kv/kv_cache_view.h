#pragma once
// KvCacheView: the KV cache as the panel shows it. It follows an EngineController and takes the
// engine's KvCacheStats after each batch of steps, at the end of a generation and on a model
// change (while an answer streams at most once per kStreamingIntervalMs, 250 ms, on top of the
// worker's batches of about 100 ms), and exposes them as properties —
// bytes straight from the stats, the cells' origins as runs — plus the MHA / GQA / MQA and
// FP32 / FP16 / Q8_0 / Q4_0 counterfactuals. GUI thread only.

#include <QObject>
#include <QPointer>
#include <QQmlEngine>
#include <QVariantList>

#include "app/pacer.h"
#include "engine/engine_controller.h"
#include "kv_cache/kv_cache.h"
#include "visualizer/kv/kv_variant_model.h"

namespace inferscope {

class KvCacheView : public QObject {
    Q_OBJECT
    QML_ELEMENT
    Q_PROPERTY(inferscope::EngineController* engine READ engine WRITE setEngine NOTIFY engineChanged)
    // While false (the panel is hidden) the engine's batches are ignored; on becoming true the
    // view catches up with the engine's current stats.
    Q_PROPERTY(bool active READ active WRITE setActive NOTIFY activeChanged)
    Q_PROPERTY(bool hasCache READ hasCache NOTIFY changed)
    // shape
    Q_PROPERTY(int layers READ layers NOTIFY changed)
    Q_PROPERTY(int queryHeads READ queryHeads NOTIFY changed)
    Q_PROPERTY(int kvHeads READ kvHeads NOTIFY changed)
    Q_PROPERTY(int headDim READ headDim NOTIFY changed)
    Q_PROPERTY(int capacity READ capacity NOTIFY changed)            // positions reserved (the context)
    Q_PROPERTY(int bytesPerElement READ bytesPerElement NOTIFY changed)
    Q_PROPERTY(QString elementType READ elementType NOTIFY changed)  // the real type: "FP32", "FP16", "Q8_0", "Q4_0"
    Q_PROPERTY(QString elementSize READ elementSize NOTIFY changed)  // "4 B", "2 B", "34/32 B", "18/32 B"
    Q_PROPERTY(QString attention READ attention NOTIFY changed)      // "MHA", "GQA", "MQA"
    Q_PROPERTY(int groupSize READ groupSize NOTIFY changed)          // query heads per KV head
    // fill
    Q_PROPERTY(int usedCells READ usedCells NOTIFY changed)
    Q_PROPERTY(int promptCells READ promptCells NOTIFY changed)
    Q_PROPERTY(int generatedCells READ generatedCells NOTIFY changed)
    Q_PROPERTY(QVariantList originRuns READ originRuns NOTIFY changed)  // [{origin: "prompt"|"generated", count}]
    // bytes, from KvCacheStats
    Q_PROPERTY(double bytesPerToken READ bytesPerToken NOTIFY changed)
    Q_PROPERTY(double bytesUsed READ bytesUsed NOTIFY changed)
    Q_PROPERTY(double bytesReserved READ bytesReserved NOTIFY changed)
    Q_PROPERTY(double bytesUsedPerLayer READ bytesUsedPerLayer NOTIFY changed)
    Q_PROPERTY(double bytesReservedPerLayer READ bytesReservedPerLayer NOTIFY changed)
    Q_PROPERTY(double bytesUsedPerHead READ bytesUsedPerHead NOTIFY changed)
    Q_PROPERTY(double bytesReservedPerHead READ bytesReservedPerHead NOTIFY changed)
    // Sliding-window layers (Gemma 2/3, Phi-3): how many, their window, and per layer type what the
    // cells hold and what a cache keeping only the window would need (KvCacheStats).
    Q_PROPERTY(int slidingLayers READ slidingLayers NOTIFY changed)
    Q_PROPERTY(int slidingWindow READ slidingWindow NOTIFY changed)
    Q_PROPERTY(double bytesUsedGlobalLayers READ bytesUsedGlobalLayers NOTIFY changed)
    Q_PROPERTY(double bytesUsedSlidingLayers READ bytesUsedSlidingLayers NOTIFY changed)
    Q_PROPERTY(double bytesNeededSlidingLayers READ bytesNeededSlidingLayers NOTIFY changed)
    Q_PROPERTY(QString layerTypeSummary READ layerTypeSummary NOTIFY changed)  // "" without sliding layers
    // On a sliding layer the next token reads keys from this position on (its own included);
    // the cells before it stay allocated and written but are not read. 0 without sliding layers.
    Q_PROPERTY(int firstWindowPosition READ firstWindowPosition NOTIFY changed)
    Q_PROPERTY(int cellsOutsideWindow READ cellsOutsideWindow NOTIFY changed)  // per sliding layer
    Q_PROPERTY(QString slidingLayerList READ slidingLayerList NOTIFY changed)  // "0, 2, 4" or ""
    // Bytes of one layer of each type: every layer allocates the same, a sliding one reads its window.
    Q_PROPERTY(double bytesPerLayerPerToken READ bytesPerLayerPerToken NOTIFY changed)
    Q_PROPERTY(int updates READ updates NOTIFY changed)  // how many times new stats arrived
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
    void changed();

private:
    void followEngine();  // at once: the answer's end, another model or cache type, the panel shown
    // While an answer streams, at most one update per kStreamingIntervalMs; the last batch's stats
    // are shown when that interval ends, and the final stats at once when the answer ends.
    void followStreaming();
    void takeEngineStats();  // the engine's stats now

    QPointer<EngineController> engine_;
    QList<QMetaObject::Connection> connections_;
    KvCacheStats stats_;
    int queryHeads_ = 0;
    int updates_ = 0;
    bool active_ = true;
    Pacer pace_{kStreamingIntervalMs, [this] { takeEngineStats(); }};
    KvVariantModel attentionVariants_{KvVariantModel::Axis::Attention};
    KvVariantModel elementVariants_{KvVariantModel::Axis::ElementType};
};

QString cellOriginName(CellOrigin origin);  // "empty", "prompt", "generated"

}  // namespace inferscope
