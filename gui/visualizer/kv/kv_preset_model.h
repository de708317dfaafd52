#pragma once
// KvPresetModel: model shapes for the KV-cache calculator — published Llama-family models and,
// when one is loaded, the loaded model as the last row. GUI thread only.

#include <QAbstractListModel>
#include <QQmlEngine>
#include <optional>
#include <vector>

namespace inferscope {

struct KvPreset {
    QString name;
    int layers = 0;
    int heads = 0;          // query heads
    int kvHeads = 0;
    int headDim = 0;
    QString dtype;          // "f32", "f16", "bf16", "int8" (kvBytesPerElement's names)
    int tokens = 0;         // the context length the calculator starts from
    int trainedContext = 0;
    bool loaded = false;    // the loaded model's row
    int slidingLayers = 0;  // layers that attend only to the last `window` positions (Gemma, Phi-3)
    int window = 0;
};

class KvPresetModel : public QAbstractListModel {
    Q_OBJECT
    QML_ELEMENT
    QML_UNCREATABLE("KvPresetModel is owned by KvCalculator")
    Q_PROPERTY(int count READ count NOTIFY countChanged)
public:
    enum Role {
        NameRole = Qt::UserRole + 1,
        LayersRole,
        HeadsRole,
        KvHeadsRole,
        HeadDimRole,
        DtypeRole,
        TokensRole,
        TrainedContextRole,
        LoadedRole,
        SummaryRole,  // "32 layers · 32 heads · 8 KV heads · head dim 128 · FP16"
    };
    Q_ENUM(Role)

    explicit KvPresetModel(QObject* parent = nullptr);

    // Llama 3.1-8B, Llama 2 7B, Mistral 7B, TinyLlama 1.1B (shapes from their config.json).
    static std::vector<KvPreset> publishedModels();
    // Adds, replaces or (nullopt) removes the loaded model's row.
    void setLoadedModel(const std::optional<KvPreset>& preset);

    int count() const { return int(presets_.size()); }
    const KvPreset& preset(int row) const { return presets_[size_t(row)]; }
    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QHash<int, QByteArray> roleNames() const override;

signals:
    void countChanged();

private:
    std::vector<KvPreset> presets_;
};

}  // namespace inferscope
