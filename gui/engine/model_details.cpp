#include "engine/model_details.h"

#include "engine/engine_types.h"
#include "model/weight_format_note.h"

namespace inferscope {

namespace {
QString qs(const std::string& s) { return QString::fromStdString(s); }
}  // namespace

ModelDetails ModelDetails::of(const LoadedModel& model) {
    const ModelInfo& i = model.info;
    const auto& hp = i.hparams;
    ModelDetails d;
    d.valid = true;
    d.name = qs(i.name);
    d.architecture = qs(hp.architecture);
    d.parameters = double(i.nParams);
    d.layers = hp.nLayer;
    d.embedding = hp.nEmbd;
    d.heads = hp.nHead;
    d.kvHeads = hp.nHeadKv;
    d.headDim = hp.headDim;
    d.feedForward = hp.nFf;
    d.vocabSize = hp.nVocab;
    d.trainedContext = hp.nCtxTrain;
    d.ropeFreqBase = hp.ropeFreqBase;
    for (const auto& [type, count] : i.tensorTypes) d.tensorTypes.emplace(qs(type), count);
    d.bitsPerWeight = i.bitsPerWeight;
    d.formatNote = qs(weightFormatNote(i));
    d.fileBytes = double(i.fileBytes);
    d.weightBytesPerToken = double(model.weightBytesPerToken);
    d.matmulMacsPerToken = double(model.matmulMacsPerToken);
    d.kvBytesPerToken = double(model.kv.bytesPerToken);
    d.kvBytesPerElement = model.kv.bytesPerElement;
    d.loadMs = double(model.loadUs) / 1000.0;
    d.tokenizer = qs(model.tokenizer ? std::string(model.tokenizer->familyName()) : i.tokenizerModel);
    d.preTokenizer = qs(model.tokenizer ? std::string(model.tokenizer->preTokenizerName()) : std::string());
    return d;
}

QVariantMap ModelDetails::tensorTypeCounts() const {
    QVariantMap out;
    for (const auto& [type, count] : tensorTypes) out.insert(type, count);
    return out;
}

}  // namespace inferscope
