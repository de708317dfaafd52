#include "chat/token_heatmap.h"

#include <QColor>
#include <algorithm>
#include <cmath>
#include <limits>

#include "chat/draft_summary.h"
#include "tokenizer/utf8_stream.h"

namespace inferscope {

double surprisalBits(double p) {
    if (!(p > 0)) return std::numeric_limits<double>::infinity();
    return -std::log2(p);
}

namespace {

// Uncertainty in [0, 1] -> a background: none when sure, warm and strong when not.
QColor tint(double uncertainty, bool dark) {
    uncertainty = std::clamp(uncertainty, 0.0, 1.0);
    if (uncertainty < 0.03) return {};
    // hue from green-yellow (slightly unsure) to red (very unsure)
    const double hue = (1.0 - uncertainty) * 60.0 / 360.0;
    QColor c = QColor::fromHslF(float(hue), 0.85f, dark ? 0.32f : 0.80f);
    c.setAlphaF(float(0.25 + 0.75 * uncertainty));
    return c;
}

// How unsure the tokens [first, last] were, together, in the mode's terms (-1: no tint).
// Several tokens of one character: the character's probability is the product of theirs.
double uncertainty(const std::vector<StepRecord>& steps, size_t first, size_t last, HeatMode mode,
                   const std::vector<uint8_t>& changed, const std::vector<float>& kvKl, double compareFullTint) {
    double p = 1.0, entropy = 0.0, kl = -1.0, wanted = 1.0;
    bool anyChanged = false, constrained = true;
    for (size_t k = first; k <= last; ++k) {
        p *= double(steps[k].sample.pRaw);
        wanted *= double(steps[k].sample.pBeforeGrammar);
        constrained = constrained && steps[k].sample.constrained;
        entropy = std::max(entropy, double(steps[k].sample.entropyBits));
        anyChanged = anyChanged || (k < changed.size() && changed[k]);
        if (k < kvKl.size()) kl = std::max(kl, double(kvKl[k]));
    }
    // A token a server sent without logprobs: its probability is unknown, and left untinted.
    if (std::isnan(p) && (mode == HeatMode::Probability || mode == HeatMode::Surprisal)) return -1.0;
    switch (mode) {
        case HeatMode::Probability: return 1.0 - p;
        // A character of several tokens: its surprisal is the sum of theirs (-log2 of the product).
        case HeatMode::Surprisal: return surprisalBits(p) / kSurprisalTintBits;
        case HeatMode::Entropy: return entropy / kEntropyTintBits;
        case HeatMode::Replay: return anyChanged ? 1.0 : -1.0;
        case HeatMode::KvCost: return kl < 0 ? -1.0 : kl / kKvCostTintNats;
        // The fight meter: the model's own probability of the token, before the grammar's mask
        // (a character of several tokens: the product). Clear when it wanted it anyway.
        case HeatMode::Fight: return constrained ? 1.0 - wanted : -1.0;
        case HeatMode::Compare: return kl < 0 ? -1.0 : kl / compareFullTint;
        case HeatMode::Draft: break;  // tinted by fate (draftTint), not by a scale
        case HeatMode::Off: break;
    }
    return -1.0;
}

// Appends text with a tint; its line breaks as untinted spans of their own.
void appendTinted(QList<HeatSpan>& spans, const QString& text, const QColor& tint) {
    if (text.isEmpty()) return;
    if (!tint.isValid()) {
        spans.append({text, {}});
        return;
    }
    qsizetype from = 0;
    for (qsizetype k = 0; k <= text.size(); ++k) {
        if (k < text.size() && !isLineBreak(text[k])) continue;
        if (k > from) spans.append({text.mid(from, k - from), tint});
        if (k < text.size()) spans.append({QString(text[k]), {}});
        from = k + 1;
    }
}

}  // namespace

QColor flipTint(bool dark) {
    QColor c = QColor::fromHslF(275.0f / 360.0f, 0.7f, dark ? 0.42f : 0.72f);
    c.setAlphaF(0.9f);
    return c;
}

HeatText buildHeatText(const std::vector<StepRecord>& steps, HeatMode mode, bool trimLeadingSpace, bool dark,
                       const std::vector<uint8_t>& changed, qsizetype hiddenChars, const std::vector<float>& kvKl,
                       const std::vector<uint8_t>& flips, double compareFullTint) {
    HeatText out;
    out.tokenStarts.reserve(qsizetype(steps.size()));
    auto tintOf = [&](size_t first, size_t last) {
        if (mode == HeatMode::Compare)
            for (size_t k = first; k <= last; ++k)
                if (k < flips.size() && flips[k]) return flipTint(dark);
        if (mode == HeatMode::Draft) return steps[last].draft ? draftTint(steps[last].draft->fate, dark) : QColor();
        const double u = uncertainty(steps, first, last, mode, changed, kvKl, compareFullTint);
        return u < 0 ? QColor() : tint(u, dark);
    };
    QString full;  // the whole text; out.plain is what follows its first hiddenChars characters
    Utf8Stream utf8;
    size_t pendingSince = 0;  // the step whose bytes start the character utf8 is waiting to complete
    bool first = true;
    for (size_t k = 0; k < steps.size(); ++k) {
        const bool continuesCharacter = utf8.pendingBytes() > 0;
        const size_t from = pendingSince;
        std::string bytes = utf8.push(steps[k].piece);
        if (utf8.pendingBytes() > 0 && (!continuesCharacter || !bytes.empty())) pendingSince = k;
        if (first && trimLeadingSpace && !bytes.empty()) {
            if (bytes[0] == ' ') bytes.erase(0, 1);
            first = false;
        } else if (!bytes.empty()) {
            first = false;
        }
        const QString chunk = QString::fromUtf8(bytes);
        const qsizetype at = full.size();
        full += chunk;
        out.tokenStarts.append(int(std::max(at, hiddenChars) - hiddenChars));
        const qsizetype hidden = std::clamp<qsizetype>(hiddenChars - at, 0, chunk.size());  // of this chunk
        // The chunk's first character began in an earlier token: shown whole here, tinted by all of
        // its tokens, and listed so hovering it can show the split. (A U+FFFD for bytes that never
        // became a character belongs to the earlier token alone.)
        qsizetype joinedLength = 0;
        if (continuesCharacter && !chunk.isEmpty() && chunk[0] != QChar(0xFFFD)) {
            joinedLength = chunk[0].isHighSurrogate() && chunk.size() > 1 ? 2 : 1;
            if (hidden == 0) {
                out.joined.append({int(at - hiddenChars), int(joinedLength), int(from), int(k)});
                appendTinted(out.spans, chunk.left(joinedLength), tintOf(from, k));
            }
        }
        const qsizetype shownFrom = std::max(joinedLength, hidden);
        if (chunk.size() > shownFrom) appendTinted(out.spans, chunk.mid(shownFrom), tintOf(k, k));
    }
    const QString rest = QString::fromUtf8(utf8.flush());
    appendTinted(out.spans, rest.mid(std::clamp<qsizetype>(hiddenChars - full.size(), 0, rest.size())), {});
    full += rest;
    out.plain = full.mid(std::min(hiddenChars, full.size()));
    return out;
}

bool isLineBreak(QChar ch) {
    switch (ch.unicode()) {
        case '\n':
        case '\r':
        case 0x0B:
        case 0x0C:
        case 0x85:
        case 0x2028:
        case 0x2029: return true;
        default: return false;
    }
}

int stepAtPosition(const QList<int>& tokenStarts, int position) {
    if (tokenStarts.isEmpty() || position < 0) return -1;
    auto it = std::upper_bound(tokenStarts.begin(), tokenStarts.end(), position);
    if (it == tokenStarts.begin()) return -1;
    // Several steps may start at the same offset (tokens that completed no character): take the last.
    return int(it - tokenStarts.begin()) - 1;
}

const JoinedCharacter* joinedCharacterAt(const HeatText& heat, int position) {
    for (const JoinedCharacter& j : heat.joined)
        if (position >= j.offset && position < j.offset + j.length) return &j;
    return nullptr;
}

}  // namespace inferscope
