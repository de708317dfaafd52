#pragma once
// What KvCacheView shows QML, as typed values, each read as one property:
// - KvCacheShape (`KvCacheView.shape`, shapeChanged): the cache's shape and element type — it
//   changes with the model or the cache type, not with each batch, so it notifies only then.
// - KvCacheFill (`.fill`, changed): how many cells hold what, and their origins as runs.
// - KvCacheByteFigures (`.bytes`, changed): the bytes from KvCacheStats, in total, per layer, per head.
// - KvSlidingFigures (`.sliding`, changed): the sliding-window layers and what they hold and read.
// All are built once per new stats (KvCacheView::setStats), not at each read.

#include <QMetaType>
#include <QString>
#include <QVariantList>
#include <QtQml/qqmlregistration.h>

namespace inferscope {

struct KvCacheShape {
    Q_GADGET
    QML_ANONYMOUS
    Q_PROPERTY(bool hasCache MEMBER hasCache)
    Q_PROPERTY(int layers MEMBER layers)
    Q_PROPERTY(int queryHeads MEMBER queryHeads)
    Q_PROPERTY(int kvHeads MEMBER kvHeads)
    Q_PROPERTY(int headDim MEMBER headDim)
    Q_PROPERTY(int capacity MEMBER capacity)                // positions reserved (the context)
    Q_PROPERTY(int bytesPerElement MEMBER bytesPerElement)
    Q_PROPERTY(QString elementType MEMBER elementType)      // the real type: "FP32", "FP16", "Q8_0", "Q4_0"
    Q_PROPERTY(QString elementSize MEMBER elementSize)      // "4 B", "2 B", "34/32 B", "18/32 B"
    Q_PROPERTY(QString attention MEMBER attention)          // "MHA", "GQA", "MQA"
    Q_PROPERTY(int groupSize MEMBER groupSize)              // query heads per KV head
public:
    bool hasCache = false;
    int layers = 0, queryHeads = 0, kvHeads = 0, headDim = 0, capacity = 0, bytesPerElement = 0, groupSize = 0;
    QString elementType, elementSize, attention;
    bool operator==(const KvCacheShape&) const = default;
};

struct KvCacheFill {
    Q_GADGET
    QML_ANONYMOUS
    Q_PROPERTY(int usedCells MEMBER usedCells)
    Q_PROPERTY(int promptCells MEMBER promptCells)
    Q_PROPERTY(int generatedCells MEMBER generatedCells)
    Q_PROPERTY(QVariantList originRuns MEMBER originRuns)  // [{origin: "prompt"|"generated", count}]
public:
    int usedCells = 0, promptCells = 0, generatedCells = 0;
    QVariantList originRuns;
    bool operator==(const KvCacheFill&) const = default;
};

struct KvCacheByteFigures {
    Q_GADGET
    QML_ANONYMOUS
    Q_PROPERTY(double perToken MEMBER perToken)
    Q_PROPERTY(double used MEMBER used)
    Q_PROPERTY(double reserved MEMBER reserved)
    Q_PROPERTY(double usedPerLayer MEMBER usedPerLayer)
    Q_PROPERTY(double reservedPerLayer MEMBER reservedPerLayer)
    Q_PROPERTY(double usedPerHead MEMBER usedPerHead)
    Q_PROPERTY(double reservedPerHead MEMBER reservedPerHead)
    // One layer's bytes per token: every layer allocates the same, a sliding one reads its window.
    Q_PROPERTY(double perLayerPerToken MEMBER perLayerPerToken)
public:
    double perToken = 0, used = 0, reserved = 0, usedPerLayer = 0, reservedPerLayer = 0, usedPerHead = 0,
           reservedPerHead = 0, perLayerPerToken = 0;
    bool operator==(const KvCacheByteFigures&) const = default;
};

// Sliding-window layers (Gemma 2/3, Phi-3): how many, their window, and per layer type what the
// cells hold and what a cache keeping only the window would need (KvCacheStats).
struct KvSlidingFigures {
    Q_GADGET
    QML_ANONYMOUS
    Q_PROPERTY(int layers MEMBER layers)  // 0 without sliding layers
    Q_PROPERTY(int window MEMBER window)
    Q_PROPERTY(double bytesUsedGlobalLayers MEMBER bytesUsedGlobalLayers)
    Q_PROPERTY(double bytesUsedSlidingLayers MEMBER bytesUsedSlidingLayers)
    Q_PROPERTY(double bytesNeededSlidingLayers MEMBER bytesNeededSlidingLayers)
    Q_PROPERTY(QString layerTypeSummary MEMBER layerTypeSummary)  // "" without sliding layers
    // On a sliding layer the next token reads keys from this position on (its own included);
    // the cells before it stay allocated and written but are not read. 0 without sliding layers.
    Q_PROPERTY(int firstWindowPosition MEMBER firstWindowPosition)
    Q_PROPERTY(int cellsOutsideWindow MEMBER cellsOutsideWindow)  // per sliding layer
    Q_PROPERTY(QString layerList MEMBER layerList)                // "0, 2, 4" or ""
public:
    int layers = 0, window = 0, firstWindowPosition = 0, cellsOutsideWindow = 0;
    double bytesUsedGlobalLayers = 0, bytesUsedSlidingLayers = 0, bytesNeededSlidingLayers = 0;
    QString layerTypeSummary, layerList;
    bool operator==(const KvSlidingFigures&) const = default;
};

}  // namespace inferscope

Q_DECLARE_METATYPE(inferscope::KvCacheShape)
Q_DECLARE_METATYPE(inferscope::KvCacheFill)
Q_DECLARE_METATYPE(inferscope::KvCacheByteFigures)
Q_DECLARE_METATYPE(inferscope::KvSlidingFigures)
