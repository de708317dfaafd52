#pragma once
// What StepInspector shows QML, as typed values, each with the one signal that changes it:
// - StepSelection (`StepInspector.selection`, selectionChanged): which answer and step.
// - StepDetails (`.details`, detailsChanged): the step the Probabilities panel shows — its record
//   as a map (token, p, rank, entropy, timings, the grammar stage), its top candidates with their
//   p after each stage, the survivors per stage and the stages' names. Built when the details are
//   refreshed (at most every kDetailsMs while an answer streams), not at each read.
// - AnswerShown (`.answer`, selectionChanged): the selected answer's origin — whether a server
//   made it, the stages its steps carry, which model.
// - AnswerProfile (`.profile`, profileChanged): its surprisal and entropy per token (the strip).

#include <QList>
#include <QMetaType>
#include <QStringList>
#include <QVariantList>
#include <QVariantMap>
#include <QtQml/qqmlregistration.h>

#include "record/sample_record.h"

namespace inferscope {

// A candidate as the Probabilities panel's bars and funnel read it: {id, logit, p (per stage),
// pRaw, pFinal, chosen}; the caller adds its "token" text.
inline QVariantMap candidateValues(const CandidateRecord& c, int32_t chosen) {
    QVariantList p;
    for (float v : c.p) p.append(double(v));
    return {{"id", c.id}, {"logit", double(c.logit)}, {"p", p}, {"pRaw", double(c.p[0])},
            {"pFinal", double(c.p[kSamplerStageCount - 1])}, {"chosen", c.id == chosen}};
}

struct StepSelection {
    Q_GADGET
    QML_ANONYMOUS
    Q_PROPERTY(int row MEMBER row)          // the answer's row in ChatModel, -1: none
    Q_PROPERTY(int step MEMBER step)        // the step within it
    Q_PROPERTY(int stepCount MEMBER stepCount)
    Q_PROPERTY(bool hasStep MEMBER hasStep)
public:
    int row = -1, step = -1, stepCount = 0;
    bool hasStep = false;
    bool operator==(const StepSelection&) const = default;
};

struct StepDetails {
    Q_GADGET
    QML_ANONYMOUS
    // The step the details are of: the selected one, or while an answer streams one up to
    // kDetailsMs older (the panel names and marks this one, not the newest).
    Q_PROPERTY(int step MEMBER step)
    Q_PROPERTY(QVariantMap current MEMBER current)
    Q_PROPERTY(QVariantList candidates MEMBER candidates)
    Q_PROPERTY(QVariantList survivors MEMBER survivors)
    Q_PROPERTY(QStringList stages MEMBER stages)
public:
    int step = -1;
    QVariantMap current;
    QVariantList candidates, survivors;
    QStringList stages;
    bool operator==(const StepDetails&) const = default;
};

struct AnswerShown {
    Q_GADGET
    QML_ANONYMOUS
    // Whether a server made it (its times are this client's, network included; its candidates are
    // what the server reported), the sampler stages its steps carry, and which model made it
    // ("stories260K", "qwen @ http://…") — the answer's, not the model loaded now.
    Q_PROPERTY(bool remote MEMBER remote)
    Q_PROPERTY(QStringList stages MEMBER stages)
    Q_PROPERTY(QString model MEMBER model)
public:
    bool remote = false;
    QStringList stages;
    QString model;
    bool operator==(const AnswerShown&) const = default;
};

struct AnswerProfile {
    Q_GADGET
    QML_ANONYMOUS
    // Per token: surprisal (-log2 pRaw, capped at StepInspector::kStripMaxBits for drawing) and
    // entropy, in bits.
    Q_PROPERTY(QList<qreal> surprisal MEMBER surprisal)
    Q_PROPERTY(QList<qreal> entropy MEMBER entropy)
public:
    QList<qreal> surprisal, entropy;
    bool operator==(const AnswerProfile&) const = default;
};

}  // namespace inferscope

Q_DECLARE_METATYPE(inferscope::StepSelection)
Q_DECLARE_METATYPE(inferscope::StepDetails)
Q_DECLARE_METATYPE(inferscope::AnswerShown)
Q_DECLARE_METATYPE(inferscope::AnswerProfile)
