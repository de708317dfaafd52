#include "visualizer/kv/kv_preset_model.h"

#include "app/units.h"

namespace inferscope {

KvPresetModel::KvPresetModel(QObject* parent) : QAbstractListModel(parent), presets_(publishedModels()) {}

std::vector<KvPreset> KvPresetModel::publishedModels() {
    // The product's figures use Llama 3.1-8B at 4,096 tokens; the others start there too (TinyLlama
    // at its trained 2,048) so that their rows compare.
    return {
        {QStringLiteral("Llama 3.1-8B"), 32, 32, 8, 128, QStringLiteral("f16"), 4096, 131072, false},
        {QStringLiteral("Llama 2 7B"), 32, 32, 32, 128, QStringLiteral("f16"), 4096, 4096, false},
        {QStringLiteral("Mistral 7B"), 32, 32, 8, 128, QStringLiteral("f16"), 4096, 32768, false},
        {QStringLiteral("TinyLlama 1.1B"), 22, 32, 4, 64, QStringLiteral("f16"), 2048, 2048, false},
        // Shapes from each model's config.json (head_dim given where it is not hidden / heads).
        {QStringLiteral("Llama 3.2 1B"), 16, 32, 8, 64, QStringLiteral("f16"), 4096, 131072, false},
        {QStringLiteral("Llama 3.2 3B"), 28, 24, 8, 128, QStringLiteral("f16"), 4096, 131072, false},
        {QStringLiteral("Qwen 2.5 0.5B"), 24, 14, 2, 64, QStringLiteral("f16"), 4096, 32768, false},
        {QStringLiteral("Qwen 2.5 7B"), 28, 28, 4, 128, QStringLiteral("f16"), 4096, 32768, false},
        // Gemma 3: head_dim 256 ≠ hidden / heads; 5 of every 6 layers (all but il % 6 == 5) attend
        // to a 512 (1B) or 1024 (4B) window. The main figures, like Inferscope's cache, keep every
        // position per layer; the windowed figure keeps only the window on those layers.
        {QStringLiteral("Gemma 3 1B"), 26, 4, 1, 256, QStringLiteral("f16"), 4096, 32768, false, 22, 512},
        {QStringLiteral("Gemma 3 4B"), 34, 8, 4, 256, QStringLiteral("f16"), 4096, 131072, false, 29, 1024},
        // Phi-3 mini 4k: sliding_window 2047 on every layer.
        {QStringLiteral("Phi-3 mini 4k"), 32, 32, 32, 96, QStringLiteral("f16"), 4096, 4096, false, 32, 2047},
    };
}

void KvPresetModel::setLoadedModel(const std::optional<KvPreset>& preset) {
    const bool has = !presets_.empty() && presets_.back().loaded;
    const int last = int(presets_.size()) - 1;
    if (has && preset) {
        presets_.back() = *preset;
        presets_.back().loaded = true;
        emit dataChanged(index(last), index(last));
    } else if (has) {
        beginRemoveRows({}, last, last);
        presets_.pop_back();
        endRemoveRows();
        emit countChanged();
    } else if (preset) {
        beginInsertRows({}, last + 1, last + 1);
        presets_.push_back(*preset);
        presets_.back().loaded = true;
        endInsertRows();
        emit countChanged();
    }
}

int KvPresetModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(presets_.size()); }

QVariant KvPresetModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
    const KvPreset& p = presets_[size_t(index.row())];
    switch (role) {
    case Qt::DisplayRole:
    case NameRole: return p.loaded ? tr("%1 (loaded)").arg(p.name) : p.name;
    case LayersRole: return p.layers;
    case HeadsRole: return p.heads;
    case KvHeadsRole: return p.kvHeads;
    case HeadDimRole: return p.headDim;
    case DtypeRole: return p.dtype;
    case TokensRole: return p.tokens;
    case TrainedContextRole: return p.trainedContext;
    case LoadedRole: return p.loaded;
    case SummaryRole:
        return tr("%1 layers · %2 heads · %3 KV heads · head dim %4 · %5")
            .arg(p.layers).arg(p.heads).arg(p.kvHeads).arg(p.headDim).arg(dtypeLabel(p.dtype));
    default: return {};
    }
}

QHash<int, QByteArray> KvPresetModel::roleNames() const {
    return {{NameRole, "name"},       {LayersRole, "layers"},   {HeadsRole, "heads"},
            {KvHeadsRole, "kvHeads"}, {HeadDimRole, "headDim"}, {DtypeRole, "dtype"},
            {TokensRole, "tokens"},   {TrainedContextRole, "trainedContext"},
            {LoadedRole, "loaded"},   {SummaryRole, "summary"}};
}

}  // namespace inferscope
