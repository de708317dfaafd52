#include "visualizer/kv/kv_variant_model.h"

#include <cmath>
#include <utility>

#include "app/units.h"
#include "kv_cache/kv_calculator.h"

namespace inferscope {
namespace {

struct Candidate {
    QString name, detail;
    uint64_t kvHeads;
    KvElementSize size;  // bytes per `elements` elements
};

// A grouped layout for a model that is not GQA itself: groups of 4 query heads (Llama 3's and
// Mistral's 32 → 8), else of 2, when the heads divide.
uint64_t groupedKvHeads(uint64_t heads) {
    for (uint64_t group : {4, 2})
        if (heads % group == 0 && heads / group > 1) return heads / group;
    return 0;
}

QString ratioText(double ratio) {
    auto number = [](double v) { return std::abs(v - std::round(v)) < 1e-9 ? QString::number(std::llround(v)) : QString::number(v, 'f', 2); };
    if (ratio <= 0) return QString();
    return ratio >= 1 ? QStringLiteral("×") + number(ratio) : QStringLiteral("×1/") + number(1 / ratio);
}

QString headsText(uint64_t kvHeads) {
    return kvHeads == 1 ? KvVariantModel::tr("1 KV head") : KvVariantModel::tr("%1 KV heads").arg(kvHeads);
}

}  // namespace

KvVariantModel::KvVariantModel(Axis axis, QObject* parent) : QAbstractListModel(parent), axis_(axis) {}

std::vector<KvVariantModel::Row> KvVariantModel::computeRows(const KvCacheStats& s, int queryHeads) const {
    const uint64_t heads = uint64_t(queryHeads), kvHeads = uint64_t(s.layout.nHeadKv);
    const KvType loadedType = s.layout.type;
    const KvElementSize loadedSize = kvElementSize(kvTypeName(loadedType)).value_or(KvElementSize{});
    std::vector<Candidate> candidates;
    if (axis_ == Axis::Attention) {
        candidates.push_back({QStringLiteral("MHA"), tr("%1: one per query head").arg(headsText(heads)), heads, loadedSize});
        const bool loadedIsGqa = kvHeads > 1 && kvHeads < heads;
        if (const uint64_t g = loadedIsGqa ? kvHeads : groupedKvHeads(heads); g != 0)
            candidates.push_back({QStringLiteral("GQA"), tr("%1: groups of %2 query heads").arg(headsText(g)).arg(heads / g), g, loadedSize});
        candidates.push_back({QStringLiteral("MQA"), tr("1 KV head shared by all %1 query heads").arg(heads), 1, loadedSize});
    } else {
        // The types the engine's cache can be (kv_type.h); a block type the head dim refuses is left out.
        for (KvType type : allKvTypes()) {
            const KvElementSize size = kvElementSize(kvTypeName(type)).value_or(KvElementSize{});
            const QString detail = size.elements == 1 ? tr("%1 bytes per value").arg(size.bytes)
                                                      : tr("%1 bytes per block of %2 values").arg(size.bytes).arg(size.elements);
            candidates.push_back({dtypeLabel(QString::fromLatin1(kvTypeName(type))), detail, kvHeads, size});
        }
    }

    std::vector<Row> rows;
    for (const Candidate& c : candidates) {
        const KvShape shape{uint64_t(s.layout.nLayer), heads, c.kvHeads, uint64_t(s.layout.headDim), c.size.bytes, 0, 0, c.size.elements};
        auto atCapacity = computeKvFigures(shape, uint64_t(s.layout.nCtx), 1);
        if (!atCapacity) continue;  // a shape the calculator refuses (e.g. heads not divisible)
        Row r;
        r.name = c.name;
        r.detail = c.detail;
        r.kvHeads = c.kvHeads;
        r.bytesPerElement = c.size.elements == 1 ? c.size.bytes : 0;
        r.bytesPerToken = atCapacity->bytesPerToken;
        r.bytesAtCapacity = atCapacity->totalBytes;
        if (s.nUsed > 0)
            if (auto atUsed = computeKvFigures(shape, uint64_t(s.nUsed), 1)) r.bytesAtUsed = atUsed->totalBytes;
        r.ratio = s.bytesPerToken > 0 ? double(r.bytesPerToken) / double(s.bytesPerToken) : 0.0;
        r.loaded = c.kvHeads == kvHeads && c.size.bytes == loadedSize.bytes && c.size.elements == loadedSize.elements;
        rows.push_back(r);
    }
    return rows;
}

void KvVariantModel::update(const KvCacheStats& stats, int queryHeads) {
    std::vector<Row> rows = queryHeads > 0 && stats.layout.nLayer > 0 ? computeRows(stats, queryHeads) : std::vector<Row>{};
    if (rows.size() == rows_.size() && !rows.empty()) {  // the usual case per batch: same rows, new figures
        rows_ = std::move(rows);
        emit dataChanged(index(0), index(int(rows_.size()) - 1));
        return;
    }
    beginResetModel();
    rows_ = std::move(rows);
    endResetModel();
}

void KvVariantModel::clear() {
    if (rows_.empty()) return;
    beginResetModel();
    rows_.clear();
    endResetModel();
}

int KvVariantModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(rows_.size()); }

QVariant KvVariantModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
    const Row& r = rows_[size_t(index.row())];
    switch (role) {
    case Qt::DisplayRole:
    case NameRole: return r.name;
    case DetailRole: return r.detail;
    case KvHeadsRole: return double(r.kvHeads);
    case BytesPerElementRole: return double(r.bytesPerElement);
    case BytesPerTokenRole: return double(r.bytesPerToken);
    case BytesAtUsedRole: return double(r.bytesAtUsed);
    case BytesAtCapacityRole: return double(r.bytesAtCapacity);
    case RatioRole: return r.ratio;
    case RatioTextRole: return r.loaded ? QString() : ratioText(r.ratio);
    case LoadedRole: return r.loaded;
    default: return {};
    }
}

QHash<int, QByteArray> KvVariantModel::roleNames() const {
    return {{NameRole, "name"},
            {DetailRole, "detail"},
            {KvHeadsRole, "kvHeads"},
            {BytesPerElementRole, "bytesPerElement"},
            {BytesPerTokenRole, "bytesPerToken"},
            {BytesAtUsedRole, "bytesAtUsed"},
            {BytesAtCapacityRole, "bytesAtCapacity"},
            {RatioRole, "ratio"},
            {RatioTextRole, "ratioText"},
            {LoadedRole, "loaded"}};
}

}  // namespace inferscope
