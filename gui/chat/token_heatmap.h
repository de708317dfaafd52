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

// A character whose UTF-8 bytes came from several tokens (byte-level BPE splits emoji and CJK
// characters; SentencePiece's byte fallback spells them byte by byte). The text shows the whole
// character once, in the span of the token that completed it; the tokens before it show nothing.
struct JoinedCharacter {
    int offset = 0;     // in the plain text (UTF-16 units)
    int length = 0;     // 1, or 2 for a surrogate pair
    int firstStep = 0;  // the token that brought its first byte
    int lastStep = 0;   // the token that brought its last byte
};

struct HeatText {
    QString html;            // the text, each token's characters in a tinted <span>
    QList<int> tokenStarts;  // [step] offset of the step's first character in the plain text
    QString plain;           // the plain text the offsets refer to
    QList<JoinedCharacter> joined;  // in text order
};

// steps: the answer's records; trimLeadingSpace: drop the first token's word-start space (chat);
// dark: colours for a dark background; changed: per step, whether a replay changed the pick
// (HeatMode::Replay only); hiddenChars: the text's first characters are not shown (a reasoning
// model's folded <think> block): plain, html and the offsets start after them, and the steps
// that wrote only hidden characters start at 0.
HeatText buildHeatText(const std::vector<StepRecord>& steps, HeatMode mode, bool trimLeadingSpace, bool dark,
                       const std::vector<uint8_t>& changed = {}, qsizetype hiddenChars = 0);

// Index of the step whose characters include `position` (the last start <= position), or -1.
int stepAtPosition(const QList<int>& tokenStarts, int position);

// The joined character at `position`, or nullptr when the character there came from one token.
const JoinedCharacter* joinedCharacterAt(const HeatText& heat, int position);

}  // namespace inferscope
