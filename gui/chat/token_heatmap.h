#pragma once
// The token heat map: an answer's text as runs of characters, one per generated token, tinted by
// the token's probability, its surprisal, the step's entropy, or whether a replay changed it — and where
// each token starts in the text, so a position under the mouse maps back to its step.

#include <QColor>
#include <QList>
#include <QString>
#include <vector>

#include "record/step_record.h"
#include "settings/heat_mode.h"  // HeatMode

namespace inferscope {

// Surprisal of a token the model gave probability p: -log2 p bits (1 bit: a coin flip's worth of
// surprise; p 0.25 -> 2 bits). p <= 0 (a pick the raw distribution ruled out) -> +infinity.
double surprisalBits(double p);
// The heat map's full tint in surprisal mode: 8 bits, a 1-in-256 pick.
inline constexpr double kSurprisalTintBits = 8.0;
// ... and in entropy mode: 4 bits, as unsure as 16 equally likely choices.
inline constexpr double kEntropyTintBits = 4.0;
// ... and in KV-cost mode: a KL divergence of 0.05 nats between the two caches' distributions
// (q8_0 against f16 is typically below 0.001; a 0.05 shift can reorder close candidates).
inline constexpr double kKvCostTintNats = 0.05;
// ... and in compare mode (a second model on the answer): 0.5 nats; another quantization of the
// same model averages about 0.01 (Q8_0) to 0.1 (Q4_0), so the full tint marks where it parts.
inline constexpr double kCompareTintNats = 0.5;
// ... and in compare mode on the text (vocabularies that differ): a word one model finds 8 bits
// (256 times) less likely than the other, the same scale as surprisal mode.
inline constexpr double kCompareTextTintBits = 8.0;
// A token where the two models rank different tokens first (a flip), in compare mode: its own hue.
QColor flipTint(bool dark);

// A character whose UTF-8 bytes came from several tokens (byte-level BPE splits emoji and CJK
// characters; SentencePiece's byte fallback spells them byte by byte). The text shows the whole
// character once, in the span of the token that completed it; the tokens before it show nothing.
struct JoinedCharacter {
    int offset = 0;     // in the plain text (UTF-16 units)
    int length = 0;     // 1, or 2 for a surrogate pair
    int firstStep = 0;  // the token that brought its first byte
    int lastStep = 0;   // the token that brought its last byte
};

// A run of the heat text's characters with one tint: a token's characters, or a line break
// (never tinted: a tinted break showed as a tinted box at the end of the line).
struct HeatSpan {
    QString text;
    QColor tint;  // the background; invalid: none
    bool operator==(const HeatSpan& other) const = default;
};

struct HeatText {
    QList<HeatSpan> spans;   // the text in order: a span per token (its line breaks apart)
    QList<int> tokenStarts;  // [step] offset of the step's first character in the plain text
    QString plain;           // the plain text the offsets refer to
    QList<JoinedCharacter> joined;  // in text order
};

// steps: the answer's records; trimLeadingSpace: drop the first token's word-start space (chat);
// dark: colours for a dark background; changed: per step, whether a replay changed the pick
// (HeatMode::Replay only); hiddenChars: the text's first characters are not shown (a reasoning
// model's folded <think> block): plain, html and the offsets start after them, and the steps
// that wrote only hidden characters start at 0; kl: per step, in nats, KL(P_cache in use ‖
// P_other cache) from "What q8_0 costs" (HeatMode::KvCost) or KL(P_A ‖ P_B) from a comparison
// with a second model (HeatMode::Compare; flips: per step, whether the two ranked another token
// first, tinted flipTint); steps past its end untinted. compareFullTint: the value of kl that
// tints fully in compare mode (kCompareTintNats; kCompareTextTintBits when kl holds word gaps).
HeatText buildHeatText(const std::vector<StepRecord>& steps, HeatMode mode, bool trimLeadingSpace, bool dark,
                       const std::vector<uint8_t>& changed = {}, qsizetype hiddenChars = 0, const std::vector<float>& kl = {},
                       const std::vector<uint8_t>& flips = {}, double compareFullTint = kCompareTintNats);

// A character that ends a line: '\n', and every other one Qt's text layout starts a paragraph or
// a line at ('\r', VT, FF, NEL, U+2028, U+2029; a vocabulary can hold any of them, Gemma's does).
bool isLineBreak(QChar ch);

// Index of the step whose characters include `position` (the last start <= position), or -1.
int stepAtPosition(const QList<int>& tokenStarts, int position);

// The joined character at `position`, or nullptr when the character there came from one token.
const JoinedCharacter* joinedCharacterAt(const HeatText& heat, int position);

}  // namespace inferscope
