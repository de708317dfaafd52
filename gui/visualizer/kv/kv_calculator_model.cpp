#include "visualizer/kv/kv_calculator_model.h"

#include "app/units.h"

namespace inferscope {
namespace {

uint64_t nonNegative(int v) { return v > 0 ? uint64_t(v) : 0; }

}  // namespace

KvCalculatorModel::KvCalculatorModel(QObject* parent) : QObject(parent) { applyPreset(0); }

void KvCalculatorModel::setEngine(EngineController* engine) {
    if (engine_ == engine) return;
    disconnect(modelConnection_);
    engine_ = engine;
    disconnect(kvTypeConnection_);
    if (engine_) {
        modelConnection_ = connect(engine_, &EngineController::modelChanged, this, &KvCalculatorModel::onModelChanged);
        kvTypeConnection_ = connect(engine_, &EngineController::kvTypeApplied, this, &KvCalculatorModel::onModelChanged);
    }
    onModelChanged();
    emit engineChanged();
}

void KvCalculatorModel::onModelChanged() {
    if (!engine_ || !engine_->abilities().showsCache) {  // a server's shape is not known
        const bool showingLoaded = presetIndex_ >= 0 && presets_.preset(presetIndex_).loaded;
        presets_.setLoadedModel(std::nullopt);
        if (showingLoaded) {  // the inputs stay, as a custom shape
            presetIndex_ = -1;
            emit inputsChanged();
        }
        return;
    }
    const auto& model = *engine_->model();
    const auto& hp = model.info.hparams;
    KvPreset p;
    p.name = QString::fromStdString(model.info.name);
    p.layers = hp.nLayer;
    p.heads = hp.nHead;
    p.kvHeads = hp.nHeadKv;
    p.headDim = hp.headDim;
    p.dtype = QString::fromLatin1(kvTypeName(model.kv.layout.type));  // as the engine allocated it
    p.tokens = model.contextLength;
    p.trainedContext = hp.nCtxTrain;
    for (int32_t il = 0; il < hp.nLayer; ++il) p.slidingLayers += hp.isSlidingLayer(il) ? 1 : 0;
    p.window = p.slidingLayers > 0 ? hp.slidingWindow : 0;
    presets_.setLoadedModel(p);
    if (presetIndex_ == presets_.count() - 1) applyPreset(presetIndex_);  // showing the loaded model: follow it
}

void KvCalculatorModel::applyPreset(int row) {
    if (row < 0 || row >= presets_.count()) return;
    const KvPreset& p = presets_.preset(row);
    layers_ = p.layers;
    heads_ = p.heads;
    kvHeads_ = p.kvHeads;
    headDim_ = p.headDim;
    dtype_ = p.dtype;
    tokens_ = p.tokens;
    users_ = 1;
    slidingLayers_ = p.slidingLayers;
    window_ = p.window;
    presetIndex_ = row;
    emit inputsChanged();
    recompute();
}

QStringList KvCalculatorModel::dtypeLabels() const {
    QStringList out;
    for (const QString& d : dtypes()) out << dtypeLabel(d);
    return out;
}

void KvCalculatorModel::setInput(int& field, int value) {
    if (field == value) return;
    field = value;
    presetIndex_ = -1;
    emit inputsChanged();
    recompute();
}

void KvCalculatorModel::setDtype(const QString& v) {
    if (dtype_ == v) return;
    dtype_ = v;
    presetIndex_ = -1;
    emit inputsChanged();
    recompute();
}

void KvCalculatorModel::recompute() {
    error_.clear();
    figures_ = {};
    bytesPerElement_ = perUser_ = windowedPerUser_ = 0;
    auto size = kvElementSize(dtype_.toStdString());
    if (!size) {
        error_ = QString::fromStdString(size.error().message);
    } else {
        const KvShape shape{nonNegative(layers_), nonNegative(heads_),        nonNegative(kvHeads_), nonNegative(headDim_),
                            size->bytes,          nonNegative(slidingLayers_), nonNegative(window_),  size->elements};
        auto total = computeKvFigures(shape, nonNegative(tokens_), nonNegative(users_));
        auto perUser = total ? computeKvFigures(shape, nonNegative(tokens_), 1) : total;
        if (!total || !perUser) {
            error_ = QString::fromStdString((total ? perUser : total).error().message);
        } else {
            bytesPerElement_ = size->elements == 1 ? size->bytes : 0;
            figures_ = *total;
            perUser_ = perUser->totalBytes;
            windowedPerUser_ = perUser->windowedTotalBytes;
        }
    }
    // Built here rather than at each read (QML reads a dozen figures after every input), and
    // notified only when a figure or the message changed.
    const KvCalculatorResults results{.valid = valid(),
                                      .error = error_,
                                      .attention = attention(),
                                      .bytesPerElement = bytesPerElement(),
                                      .bytesPerToken = bytesPerToken(),
                                      .bytesPerUser = bytesPerUser(),
                                      .totalBytes = totalBytes(),
                                      .mhaBytesPerToken = mhaBytesPerToken(),
                                      .mhaTotalBytes = mhaTotalBytes(),
                                      .mqaBytesPerToken = mqaBytesPerToken(),
                                      .mqaTotalBytes = mqaTotalBytes(),
                                      .windowedBytesPerUser = windowedBytesPerUser()};
    if (results == results_) return;
    results_ = results;
    emit resultsChanged();
}

QString KvCalculatorModel::attention() const {
    if (!valid()) return QString();
    if (kvHeads_ == heads_) return QStringLiteral("MHA");
    return kvHeads_ == 1 ? QStringLiteral("MQA") : QStringLiteral("GQA");
}

}  // namespace inferscope
