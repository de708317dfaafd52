#pragma once
// KvVariantModel: the loaded model's KV cache as it would be with another attention layout
// (MHA / GQA / MQA, at the loaded element type) or another element type (FP32 / FP16 / Q8_0 / Q4_0, at
// the loaded KV heads). Every figure comes from core's computeKvFigures; the row that matches
// the real cache is marked `loaded` (its capacity figure equals the engine's allocation).
// GUI thread only; refilled by KvCacheView once per batch.

#include <QAbstractListModel>
#include <QQmlEngine>
#include <vector>

#include "kv_cache/kv_cache.h"

namespace inferscope {

class KvVariantModel : public QAbstractListModel {
    Q_OBJECT
    QML_ELEMENT
    QML_UNCREATABLE("KvVariantModel is owned by KvCacheView")
public:
    enum class Axis { Attention, ElementType };
    enum Role {
        NameRole = Qt::UserRole + 1,  // "MHA", "GQA", "MQA" | "FP32", "FP16", "Q8_0", "Q4_0"
        DetailRole,                   // "8 KV heads", "groups of 2 query heads" | "4 B per element"
        KvHeadsRole,
        BytesPerElementRole,          // 0 for the block types (see the detail)
        BytesPerTokenRole,            // 2 × layers × KV heads × head dim × bytes per element
        BytesAtUsedRole,              // × the cells in use now (0 when the cache is empty)
        BytesAtCapacityRole,          // × the whole context
        RatioRole,                    // bytes per token / the loaded cache's bytes per token
        RatioTextRole,                // "×2", "×1/4", "×1.5"; "" for the loaded row
        LoadedRole,                   // this row is the cache as allocated
    };
    Q_ENUM(Role)

    struct Row {
        QString name, detail;
        uint64_t kvHeads = 0, bytesPerElement = 0;
        uint64_t bytesPerToken = 0, bytesAtUsed = 0, bytesAtCapacity = 0;
        double ratio = 0;
        bool loaded = false;
    };

    explicit KvVariantModel(Axis axis, QObject* parent = nullptr);

    // The real cache's shape and fill, and the model's query heads (which KvCacheStats lacks).
    void update(const KvCacheStats& stats, int queryHeads);
    void clear();

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QHash<int, QByteArray> roleNames() const override;
    const std::vector<Row>& rows() const { return rows_; }

private:
    std::vector<Row> computeRows(const KvCacheStats& stats, int queryHeads) const;
    Axis axis_;
    std::vector<Row> rows_;
};

}  // namespace inferscope
