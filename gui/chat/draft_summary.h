#pragma once
// A speculative answer's drafts as the app shows them, read from the answer's own step records
// (StepRecord::draft, kept by the store): each token's fate in words (the Probabilities panel), its
// tint (heat mode "draft") and the answer's totals (the footer). Nothing here needs a model.

#include <QColor>
#include <QString>
#include <QVariantMap>
#include <cstdint>
#include <functional>
#include <vector>

#include "record/step_record.h"

namespace inferscope {

struct DraftTotals {
    int drafted = 0;    // tokens drafted, over every round (a rejected draft's dropped tail included)
    int accepted = 0;   // of which accepted
    int corrected = 0;  // rounds that ended on a rejection (the token drawn from max(0, p − q) instead)
    int bonus = 0;      // rounds whose every drafted token was accepted (one more from p)
    int rounds = 0;     // verification passes' rounds (each a small prefill of the pending token and the draft)
    int64_t draftUs = 0, verifyUs = 0;
    bool any() const { return rounds > 0; }
    double acceptance() const { return drafted > 0 ? double(accepted) / drafted : 0.0; }
};
DraftTotals draftTotals(const std::vector<StepRecord>& steps);

// A token's draft in words, `draftedText` the drafted token's visible text:
// "drafted ␣the, q 1.00, p 0.42: accepted with probability 0.42 (draft token 1 of 3)".
QString describeDraft(const DraftRecord& draft, const QString& draftedText);

// What the Probabilities panel reads of a token's draft: fate (draftFateName, record/draft_record.h), drafted (its text; ""
// for a bonus or undrafted token), q, p, acceptProbability, draftIndex, draftLength, the round's
// costs on its first token (verifyRows, verifyMs, draftMs; 0 on the others), text (describeDraft),
// rule ("min(1, p/q) = min(1, 0.42 / 1.00) = 0.42" for a drafted token, else ""); from records
// that keep them (ISR5): candidates [{token, p, q, drafted, chosen}], residual [{token, r, chosen}]
// (a correction's) and residualMass. Empty for a token without a draft record. `textOf` gives a
// token's visible text; `chosen` is the token the step emitted.
QVariantMap draftMap(const DraftRecord* draft, const std::function<QString(int32_t)>& textOf, int32_t chosen);

// The footer's line: "speculative: 40 drafted, 31 accepted (78%), 22 rounds"; "" without drafts.
QString draftTotalsText(const DraftTotals& totals);

// The heat map's tint for a fate (heat mode "draft"): accepted green, corrected red, bonus blue;
// an undrafted token none.
QColor draftTint(DraftRecord::Fate fate, bool dark);

}  // namespace inferscope
