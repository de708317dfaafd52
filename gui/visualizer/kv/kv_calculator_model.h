#pragma once
// KvCalculatorModel: the KV-cache calculator. Shape (layers, query heads, KV heads, head dim,
// element type), context length and concurrent users in; bytes per token, per user and in total
// out, with the same model as MHA and MQA — all from core's computeKvFigures, so the figures are
// exact integers and an invalid input shows the engine's own message. Presets fill the inputs;
// following an EngineController adds the loaded model as a preset. GUI thread only.

#include <QObject>
#include <QPointer>
#include <QQmlEngine>
#include <QStringList>
#include <algorithm>

#include "engine/engine_controller.h"
#include "kv_cache/kv_calculator.h"
#include "visualizer/kv/kv_preset_model.h"

namespace inferscope {

// What the calculator works out from its inputs, 0 when they are invalid. One value because
// every figure is recomputed together (KvCalculatorModel::recompute); the inputs stay plain
// properties of the model, since the panel writes them.
struct KvCalculatorResults {
    Q_GADGET
    QML_ANONYMOUS
    Q_PROPERTY(bool valid MEMBER valid)
    Q_PROPERTY(QString error MEMBER error)                      // the engine's message, or ""
    Q_PROPERTY(double bytesPerElement MEMBER bytesPerElement)  // 0 for the block types
    Q_PROPERTY(double bytesPerToken MEMBER bytesPerToken)
    Q_PROPERTY(double bytesPerUser MEMBER bytesPerUser)  // × tokens
    Q_PROPERTY(double totalBytes MEMBER totalBytes)      // × tokens × users
    Q_PROPERTY(double mhaBytesPerToken MEMBER mhaBytesPerToken)
    Q_PROPERTY(double mhaTotalBytes MEMBER mhaTotalBytes)
    Q_PROPERTY(double mqaBytesPerToken MEMBER mqaBytesPerToken)
    Q_PROPERTY(double mqaTotalBytes MEMBER mqaTotalBytes)
    Q_PROPERTY(QString attention MEMBER attention)  // "MHA", "GQA", "MQA"
    // × tokens, the sliding layers keeping only their window (= bytesPerUser without them)
    Q_PROPERTY(double windowedBytesPerUser MEMBER windowedBytesPerUser)
public:
    bool valid = true;
    QString error, attention;
    double bytesPerElement = 0, bytesPerToken = 0, bytesPerUser = 0, totalBytes = 0, mhaBytesPerToken = 0,
           mhaTotalBytes = 0, mqaBytesPerToken = 0, mqaTotalBytes = 0, windowedBytesPerUser = 0;
    bool operator==(const KvCalculatorResults&) const = default;
};

class KvCalculatorModel : public QObject {
    Q_OBJECT
    QML_ELEMENT
    Q_PROPERTY(inferscope::EngineController* engine READ engine WRITE setEngine NOTIFY engineChanged)
    Q_PROPERTY(inferscope::KvPresetModel* presets READ presets CONSTANT)
    Q_PROPERTY(int presetIndex READ presetIndex NOTIFY inputsChanged)  // -1 once an input was edited
    Q_PROPERTY(QStringList dtypes READ dtypes CONSTANT)                 // "f32", "f16", "bf16", "int8", "q8_0", "q4_0"
    Q_PROPERTY(QStringList dtypeLabels READ dtypeLabels CONSTANT)       // "FP32", "FP16", "BF16", "INT8", "Q8_0", "Q4_0"
    // inputs
    Q_PROPERTY(int layers READ layers WRITE setLayers NOTIFY inputsChanged)
    Q_PROPERTY(int heads READ heads WRITE setHeads NOTIFY inputsChanged)
    Q_PROPERTY(int kvHeads READ kvHeads WRITE setKvHeads NOTIFY inputsChanged)
    Q_PROPERTY(int headDim READ headDim WRITE setHeadDim NOTIFY inputsChanged)
    Q_PROPERTY(QString dtype READ dtype WRITE setDtype NOTIFY inputsChanged)
    Q_PROPERTY(int dtypeIndex READ dtypeIndex WRITE setDtypeIndex NOTIFY inputsChanged)  // in dtypes, -1 if none
    Q_PROPERTY(int tokens READ tokens WRITE setTokens NOTIFY inputsChanged)
    Q_PROPERTY(int users READ users WRITE setUsers NOTIFY inputsChanged)
    Q_PROPERTY(int slidingLayers READ slidingLayers WRITE setSlidingLayers NOTIFY inputsChanged)  // of layers; 0: none
    Q_PROPERTY(int window READ window WRITE setWindow NOTIFY inputsChanged)                       // their window, positions
    // The results, one value recomputed with each input (kv_calculator_model.h's KvCalculatorResults).
    Q_PROPERTY(inferscope::KvCalculatorResults results READ results NOTIFY resultsChanged)

public:
    explicit KvCalculatorModel(QObject* parent = nullptr);

    EngineController* engine() const { return engine_; }
    void setEngine(EngineController* engine);
    KvPresetModel* presets() { return &presets_; }
    int presetIndex() const { return presetIndex_; }
    QStringList dtypes() const { return {"f32", "f16", "bf16", "int8", "q8_0", "q4_0"}; }
    QStringList dtypeLabels() const;
    Q_INVOKABLE void applyPreset(int row);

    int layers() const { return layers_; }
    int heads() const { return heads_; }
    int kvHeads() const { return kvHeads_; }
    int headDim() const { return headDim_; }
    QString dtype() const { return dtype_; }
    int tokens() const { return tokens_; }
    int users() const { return users_; }
    // Fewer layers than slide: all of them slide (the panel has no field for the count).
    void setLayers(int v) {
        slidingLayers_ = std::clamp(slidingLayers_, 0, std::max(v, 0));
        setInput(layers_, v);
    }
    void setHeads(int v) { setInput(heads_, v); }
    void setKvHeads(int v) { setInput(kvHeads_, v); }
    void setHeadDim(int v) { setInput(headDim_, v); }
    void setDtype(const QString& v);
    int dtypeIndex() const { return int(dtypes().indexOf(dtype_)); }
    void setDtypeIndex(int i) { setDtype(dtypes().value(i)); }
    void setTokens(int v) { setInput(tokens_, v); }
    void setUsers(int v) { setInput(users_, v); }
    int slidingLayers() const { return slidingLayers_; }
    int window() const { return window_; }
    void setSlidingLayers(int v) { setInput(slidingLayers_, v); }
    void setWindow(int v) { setInput(window_, v); }
    double windowedBytesPerUser() const { return double(windowedPerUser_); }

    bool valid() const { return error_.isEmpty(); }
    QString error() const { return error_; }
    double bytesPerElement() const { return double(bytesPerElement_); }
    double bytesPerToken() const { return double(figures_.bytesPerToken); }
    double bytesPerUser() const { return double(perUser_); }
    double totalBytes() const { return double(figures_.totalBytes); }
    double mhaBytesPerToken() const { return double(figures_.mhaBytesPerToken); }
    double mhaTotalBytes() const { return double(figures_.mhaTotalBytes); }
    double mqaBytesPerToken() const { return double(figures_.mqaBytesPerToken); }
    double mqaTotalBytes() const { return double(figures_.mqaTotalBytes); }
    QString attention() const;
    const KvFigures& figures() const { return figures_; }
    const KvCalculatorResults& results() const { return results_; }

signals:
    void engineChanged();
    void inputsChanged();
    void resultsChanged();

private:
    void setInput(int& field, int value);
    void recompute();
    void onModelChanged();

    QPointer<EngineController> engine_;
    QMetaObject::Connection modelConnection_, kvTypeConnection_;
    KvPresetModel presets_;
    int presetIndex_ = 0;
    int layers_ = 0, heads_ = 0, kvHeads_ = 0, headDim_ = 0, tokens_ = 0, users_ = 1, slidingLayers_ = 0, window_ = 0;
    QString dtype_;
    QString error_;
    uint64_t bytesPerElement_ = 0, perUser_ = 0, windowedPerUser_ = 0;
    KvFigures figures_;
    KvCalculatorResults results_;
};

}  // namespace inferscope

Q_DECLARE_METATYPE(inferscope::KvCalculatorResults)
