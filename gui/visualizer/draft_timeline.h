#pragma once
// A speculative answer on the Timeline, read from its own step records (StepRecord::draft): each
// round's drafting and its verify batch (the pending token and the k drafts through the model in
// one pass: a small prefill of k + 1 tokens) with their measured times, what the verify batches
// cost by their size, and how often each draft position was accepted. Nothing here needs a model.

#include <QVariantList>
#include <QVariantMap>
#include <vector>

#include "record/step_record.h"

namespace inferscope {

struct DraftRound {
    int firstStep = 0;      // the answer's step of the round's first token
    int drafted = 0;        // tokens drafted (0: nothing found, a plain decode step)
    int accepted = 0;       // of which accepted
    bool corrected = false; // ended on a rejection (else: every draft accepted, one bonus token)
    int tokens = 0;         // tokens the round added to the answer
    int verifyRows = 0;     // rows of its verify batch: the pending token and the drafts
    double draftMs = 0, verifyMs = 0;
};

struct DraftPosition {
    int drafted = 0;   // rounds that drafted a token at this position (1-based: index + 1)
    int accepted = 0;  // of which the token was accepted
};

struct DraftTimeline {
    std::vector<DraftRound> rounds;
    std::vector<DraftPosition> byPosition;  // [0]: draft position 1
    bool any() const { return !rounds.empty(); }
};
DraftTimeline draftTimeline(const std::vector<StepRecord>& steps);

// What the Timeline panel reads: rounds [{step, drafted, accepted, outcome ("corrected", "bonus",
// "plain"), tokens, rows, draftMs, verifyMs}], byPosition [{position, drafted, accepted, rate}],
// batches [{rows, count, medianMs, msPerRow}] (verify batches by size, smallest first), draftMs,
// verifyMs (totals), tokens (the rounds' tokens), roundsText and positionsText (in words). Empty
// without rounds.
QVariantMap draftTimelineMap(const DraftTimeline& timeline);

}  // namespace inferscope
