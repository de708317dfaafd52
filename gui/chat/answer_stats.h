#pragma once
// AnswerStats: the figures of one answer — its prefill, its decoding, the KV cache's work, what
// ran it and the sampler settings it was drawn with — as one typed value. ChatModel gives it to
// the message footer (a QML value type: `stats.generatedTokens`), the Timeline and the replay read
// its sampler, the store keeps it as JSON with the keys it always had (toJson/fromJson).
//
// While an answer streams only its prefill is known (complete = false); a stored answer from an
// earlier version may lack the sampler (sampler = nullopt: nothing to replay it with).

#include <QJsonObject>
#include <QMetaType>
#include <QString>
#include <QtQml/qqmlregistration.h>
#include <optional>

#include "record/answer_origin.h"
#include "record/step_record.h"
#include "record/sampler_params.h"

namespace inferscope {

struct AnswerStats {
    Q_GADGET
    QML_ANONYMOUS
    Q_PROPERTY(bool complete MEMBER complete)
    Q_PROPERTY(int promptTokens MEMBER promptTokens)
    Q_PROPERTY(int reusedTokens MEMBER reusedTokens)
    Q_PROPERTY(int prefilledTokens MEMBER prefilledTokens)
    Q_PROPERTY(double prefillMs MEMBER prefillMs)
    Q_PROPERTY(double prefillTokensPerSecond MEMBER prefillTokensPerSecond)
    Q_PROPERTY(int generatedTokens MEMBER generatedTokens)
    Q_PROPERTY(int keptTokens MEMBER keptTokens)
    Q_PROPERTY(int branchedAt MEMBER branchedAt)
    Q_PROPERTY(double decodeMs MEMBER decodeMs)
    Q_PROPERTY(double decodeTokensPerSecond MEMBER decodeTokensPerSecond)
    Q_PROPERTY(double timeToFirstTokenMs MEMBER timeToFirstTokenMs)
    Q_PROPERTY(QString model MEMBER model)
    Q_PROPERTY(QString device MEMBER device)

public:
    bool complete = false;                // the answer ended: the figures after the prefill's are known
    // prefill
    int promptTokens = 0;
    int reusedTokens = 0;                 // found in the KV cache
    int prefilledTokens = 0;              // run through the model
    double prefillMs = 0;
    double prefillTokensPerSecond = 0;
    // decoding (complete answers)
    int generatedTokens = 0;              // the answer's tokens: a branch's kept ones included
    int keptTokens = 0;                   // a branch: the steps kept from the other version (0: not a branch)
    int branchedAt = -1;                  // a branch: the step whose token was replaced (-1: not a branch)
    double decodeMs = 0;
    double decodeTokensPerSecond = 0;
    double timeToFirstTokenMs = 0;
    double kvBytesUsed = 0;               // the KV cache at the end
    double kvComputed = 0;                // positions whose K and V were computed (KvCacheStats)
    double attentionScores = 0;           // (query, key) pairs scored
    QString model;                        // the model's name and the device that ran it
    QString device;
    std::optional<SamplerParams> sampler; // the settings the answer was drawn with (topN not kept)

    // An answer whose prefill is done.
    static AnswerStats fromPrefill(const PrefillStats& prefill);
    // A finished answer. keptSteps: a branch's steps kept from the other version (0: none).
    static AnswerStats fromSummary(const GenerationSummary& summary, int keptSteps, const SamplerParams& sampler,
                                   const QString& model, const QString& device);

    // As stored ("promptTokens", "decodeTokensPerSecond", "temperature", "seed" as a string, ...):
    // the prefill's keys always, the rest when known. fromJson reads any subset (missing: defaults).
    QJsonObject toJson() const;
    static AnswerStats fromJson(const QJsonObject& json);

    bool operator==(const AnswerStats&) const;
};

// An answer stored before origins were kept: what its stats name. "device": "server <url>" was a
// server's answer (its model the stats' "model"); any other device a local one whose file and
// vocabulary are not known. No stats: Unknown. Tokens: the picks' bytes only (the steps' pieces).
AnswerOrigin originOfLegacy(const AnswerStats& stats);

}  // namespace inferscope

Q_DECLARE_METATYPE(inferscope::AnswerStats)
