#pragma once
// What CompareModel (compare_model.h) shows QML of a finished comparison, as one typed value
// (`CompareModel.summary`): which answer and which second model it describes, and the statistics
// of core's meters (engine/perplexity.h), each as `inferscope-cli compare` prints it, with the
// errors the meters give. Built once when the comparison ends, never computed in QML.

#include <QMetaType>
#include <QString>
#include <QVariantList>
#include <QtQml/qqmlregistration.h>

#include "engine/compare_jobs.h"

namespace inferscope {

struct CompareSummary {
    Q_GADGET
    QML_ANONYMOUS
    Q_PROPERTY(bool valid MEMBER valid)
    // Provenance: the answer's row and version (1-based, as ‹ n / m › shows it), its model (A) and B.
    Q_PROPERTY(int row MEMBER row)
    Q_PROPERTY(int version MEMBER version)
    Q_PROPERTY(QString modelA MEMBER modelA)           // the answer's model, by its name
    Q_PROPERTY(QString modelB MEMBER modelB)           // the second GGUF's file name
    Q_PROPERTY(QString modelBPath MEMBER modelBPath)
    Q_PROPERTY(int tokens MEMBER tokens)               // answer tokens compared
    Q_PROPERTY(int promptTokens MEMBER promptTokens)
    // KL(P_A ‖ P_B) per token, nats: mean ± its standard error, median, p99, max.
    Q_PROPERTY(double meanKl MEMBER meanKl)
    Q_PROPERTY(double meanKlError MEMBER meanKlError)
    Q_PROPERTY(double medianKl MEMBER medianKl)
    Q_PROPERTY(double p99Kl MEMBER p99Kl)
    Q_PROPERTY(double maxKl MEMBER maxKl)
    // Same top token: count, share (0..1) ± error; the rest are flips, the first at step firstFlip
    // (-1: none) where B would have picked firstFlipTokenB.
    Q_PROPERTY(int sameTop1 MEMBER sameTop1)
    Q_PROPERTY(double top1Agreement MEMBER top1Agreement)
    Q_PROPERTY(double top1AgreementError MEMBER top1AgreementError)
    Q_PROPERTY(int firstFlip MEMBER firstFlip)
    Q_PROPERTY(int firstFlipTokenB MEMBER firstFlipTokenB)
    // Δp = p_B − p_A of each answer token (probability, not percent): mean ± error, RMS ± error, percentiles.
    Q_PROPERTY(double meanDp MEMBER meanDp)
    Q_PROPERTY(double meanDpError MEMBER meanDpError)
    Q_PROPERTY(double rmsDp MEMBER rmsDp)
    Q_PROPERTY(double rmsDpError MEMBER rmsDpError)
    Q_PROPERTY(double dpP1 MEMBER dpP1)
    Q_PROPERTY(double dpP5 MEMBER dpP5)
    Q_PROPERTY(double dpMedian MEMBER dpMedian)
    Q_PROPERTY(double dpP95 MEMBER dpP95)
    Q_PROPERTY(double dpP99 MEMBER dpP99)
    // Each model's perplexity of the answer ± error.
    Q_PROPERTY(double perplexityA MEMBER perplexityA)
    Q_PROPERTY(double perplexityAError MEMBER perplexityAError)
    Q_PROPERTY(double perplexityB MEMBER perplexityB)
    Q_PROPERTY(double perplexityBError MEMBER perplexityBError)
    Q_PROPERTY(double loadMs MEMBER loadMs)             // B's load (0: kept from the previous comparison)
    Q_PROPERTY(double compareMs MEMBER compareMs)       // the pass through both models
    // Vocabularies that differ (onText): the answer compared on its text, word by word
    // (engine/compare_text.h), none of the token figures above. `why` says how the vocabularies
    // differ; bytes and words of the answer's text, each tokenizer's tokens for it, each model's
    // bits of surprisal per byte; `gaps`: the words where the two differ most, most first, each
    // {text, bitsA, bitsB} (up to kShownGaps).
    Q_PROPERTY(bool onText MEMBER onText)
    Q_PROPERTY(QString why MEMBER why)
    Q_PROPERTY(int bytes MEMBER bytes)
    Q_PROPERTY(int words MEMBER words)
    Q_PROPERTY(int tokensA MEMBER tokensA)
    Q_PROPERTY(int tokensB MEMBER tokensB)
    Q_PROPERTY(double bitsPerByteA MEMBER bitsPerByteA)
    Q_PROPERTY(double bitsPerByteB MEMBER bitsPerByteB)
    Q_PROPERTY(QVariantList gaps MEMBER gaps)
public:
    static constexpr int kShownGaps = 6;
    bool valid = false;
    int row = -1, version = 0, tokens = 0, promptTokens = 0, sameTop1 = 0, firstFlip = -1, firstFlipTokenB = -1;
    QString modelA, modelB, modelBPath;
    double meanKl = 0, meanKlError = 0, medianKl = 0, p99Kl = 0, maxKl = 0;
    double top1Agreement = 0, top1AgreementError = 0;
    double meanDp = 0, meanDpError = 0, rmsDp = 0, rmsDpError = 0, dpP1 = 0, dpP5 = 0, dpMedian = 0, dpP95 = 0, dpP99 = 0;
    double perplexityA = 0, perplexityAError = 0, perplexityB = 0, perplexityBError = 0;
    double loadMs = 0, compareMs = 0;
    bool onText = false;
    QString why;
    int bytes = 0, words = 0, tokensA = 0, tokensB = 0;
    double bitsPerByteA = 0, bitsPerByteB = 0;
    QVariantList gaps;
};

// The figures of a comparison on the text (vocabularies that differ: result.text) into s: onText,
// why, bytes, words, tokens, bits per byte and the largest word gaps.
void summarizeText(const CompareResult& result, CompareSummary& s);
// The token-by-token figures into s: KL, same top token, Δp, both perplexities, with their errors.
void summarizeTokens(const CompareResult& result, CompareSummary& s);

}  // namespace inferscope

Q_DECLARE_METATYPE(inferscope::CompareSummary)
