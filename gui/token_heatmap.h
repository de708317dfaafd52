#pragma once
// The token heat map: an answer's text as rich text with one span per generated token, tinted by
// the token's probability, by the step's entropy, or by whether a replay changed it — and where
// each token starts in the text, so a position under the mouse maps back to its step.

#include <QList>
#include <QString>
#include <vector>

#include "engine/generation.h"

namespace inferscope {

enum class HeatMode { Off, Probability, Entropy, Replay };
HeatMode heatModeFromName(const QString& name);  // "off", "probability", "entropy", "replay"

struct HeatText {
    QString html;            // the text, each token's characters in a tinted <span>
    QList<int> tokenStarts;  // [step] offset of the step's first character in the plain text
    QString plain;           // the plain text the offsets refer to
};

// steps: the answer's records; trimLeadingSpace: drop the first token's word-start space (chat);
// dark: colours for a dark background; changed: per step, whether a replay changed the pick
// (HeatMode::Replay only).
HeatText buildHeatText(const std::vector<StepRecord>& steps, HeatMode mode, bool trimLeadingSpace, bool dark,
                       const std::vector<uint8_t>& changed = {});

// Index of the step whose characters include `position` (the last start <= position), or -1.
int stepAtPosition(const QList<int>& tokenStarts, int position);

}  // namespace inferscope
