#pragma once
// ModelDetails: what the Model panel shows about the loaded model — its shapes from the GGUF
// header, its tensor types and file, and what a token costs it in bytes and multiply-adds — as
// one typed value. EngineController builds it once per load (ModelDetails::of) from the worker's
// LoadedModel; QML reads it as a value type (`EngineController.modelDetails.kvHeads`), the
// Timeline and the tests read the same fields in C++.
//
// Byte counts and parameter counts are doubles as QML reads them (exact up to 2^53).

#include <QMetaType>
#include <QString>
#include <QVariantMap>
#include <QtQml/qqmlregistration.h>
#include <map>

namespace inferscope {

struct LoadedModel;

struct ModelDetails {
    Q_GADGET
    QML_ANONYMOUS
    Q_PROPERTY(bool valid MEMBER valid)
    Q_PROPERTY(QString name MEMBER name)
    Q_PROPERTY(QString architecture MEMBER architecture)
    Q_PROPERTY(double parameters MEMBER parameters)
    Q_PROPERTY(int layers MEMBER layers)
    Q_PROPERTY(int embedding MEMBER embedding)
    Q_PROPERTY(int heads MEMBER heads)
    Q_PROPERTY(int kvHeads MEMBER kvHeads)
    Q_PROPERTY(int headDim MEMBER headDim)
    Q_PROPERTY(int feedForward MEMBER feedForward)
    Q_PROPERTY(int vocabSize MEMBER vocabSize)
    Q_PROPERTY(int trainedContext MEMBER trainedContext)
    Q_PROPERTY(double ropeFreqBase MEMBER ropeFreqBase)
    Q_PROPERTY(QVariantMap tensorTypes READ tensorTypeCounts)
    Q_PROPERTY(double bitsPerWeight MEMBER bitsPerWeight)
    Q_PROPERTY(QString formatNote MEMBER formatNote)
    Q_PROPERTY(double fileBytes MEMBER fileBytes)
    Q_PROPERTY(double weightBytesPerToken MEMBER weightBytesPerToken)
    Q_PROPERTY(double matmulMacsPerToken MEMBER matmulMacsPerToken)
    Q_PROPERTY(double kvBytesPerToken MEMBER kvBytesPerToken)
    Q_PROPERTY(int kvBytesPerElement MEMBER kvBytesPerElement)
    Q_PROPERTY(double loadMs MEMBER loadMs)
    Q_PROPERTY(QString tokenizer MEMBER tokenizer)
    Q_PROPERTY(QString preTokenizer MEMBER preTokenizer)

public:
    bool valid = false;               // a model is loaded (the rest are zeros and "" otherwise)
    QString name;
    QString architecture;             // "llama", "qwen2", ...
    double parameters = 0;            // elements of all tensors
    int layers = 0;
    int embedding = 0;
    int heads = 0;                    // query heads
    int kvHeads = 0;                  // key/value heads (fewer: GQA, one: MQA)
    int headDim = 0;
    int feedForward = 0;
    int vocabSize = 0;
    int trainedContext = 0;
    double ropeFreqBase = 0;
    std::map<QString, int> tensorTypes;  // "F32" → number of tensors
    double bitsPerWeight = 0;         // bytes of all weights as stored × 8 ÷ number of weights
    QString formatNote;               // what a block of the main quantized type holds ("" for float files)
    double fileBytes = 0;
    double weightBytesPerToken = 0;   // read by one forward pass
    double matmulMacsPerToken = 0;
    double kvBytesPerToken = 0;       // 2 (K and V) × layers × KV heads × head dim × bytes per element
    int kvBytesPerElement = 0;        // 4 (f32), 2 (f16), 0 for the block types
    double loadMs = 0;
    QString tokenizer;                // "sentencepiece" or "bpe"
    QString preTokenizer;             // BPE's pre-tokenizer as the file names it ("llama-bpe", "qwen2"), else ""

    static ModelDetails of(const LoadedModel& model);
    QVariantMap tensorTypeCounts() const;  // for QML: {"F32": 9, ...}

    bool operator==(const ModelDetails&) const = default;
};

}  // namespace inferscope

Q_DECLARE_METATYPE(inferscope::ModelDetails)
