#include "token_heatmap.h"

#include <QColor>
#include <algorithm>
#include <cmath>

#include "tokenizer/utf8_stream.h"

namespace inferscope {

HeatMode heatModeFromName(const QString& name) {
    if (name == QLatin1String("probability")) return HeatMode::Probability;
    if (name == QLatin1String("entropy")) return HeatMode::Entropy;
    if (name == QLatin1String("replay")) return HeatMode::Replay;
    return HeatMode::Off;
}

namespace {

// Uncertainty in [0, 1] -> a background: transparent when sure, warm and strong when not.
QString tint(double uncertainty, bool dark) {
    uncertainty = std::clamp(uncertainty, 0.0, 1.0);
    if (uncertainty < 0.03) return {};
    // hue from green-yellow (slightly unsure) to red (very unsure)
    const double hue = (1.0 - uncertainty) * 60.0 / 360.0;
    QColor c = QColor::fromHslF(float(hue), 0.85f, dark ? 0.32f : 0.80f);
    c.setAlphaF(float(0.25 + 0.75 * uncertainty));
    return QStringLiteral("background-color:rgba(%1,%2,%3,%4);").arg(c.red()).arg(c.green()).arg(c.blue()).arg(c.alphaF(), 0, 'f', 2);
}

QString escape(const QString& s) {
    QString out;
    out.reserve(s.size());
    for (QChar ch : s) {
        switch (ch.unicode()) {
            case '<': out += QLatin1String("&lt;"); break;
            case '>': out += QLatin1String("&gt;"); break;
            case '&': out += QLatin1String("&amp;"); break;
            case '"': out += QLatin1String("&quot;"); break;
            // A line break inside the paragraph (U+2028), not a new paragraph: Qt's rich text
            // gives a paragraph that begins with a tinted span that span's background across its
            // whole width, so one tinted token after a '\n' tinted the whole next line.
            // The same for every other character Qt's rich text would start a paragraph at: a
            // vocabulary can hold tokens of '\r', U+2029 or U+0085 (Gemma's does).
            case '\n':
            case '\r':
            case 0x0B:
            case 0x0C:
            case 0x85:
            case 0x2028:
            case 0x2029: out += QLatin1String("<br/>"); break;
            default: out += ch;
        }
    }
    return out;
}

}  // namespace

HeatText buildHeatText(const std::vector<StepRecord>& steps, HeatMode mode, bool trimLeadingSpace, bool dark,
                       const std::vector<uint8_t>& changed) {
    HeatText out;
    out.tokenStarts.reserve(qsizetype(steps.size()));
    out.html = QStringLiteral("<div style=\"white-space:pre-wrap\">");
    Utf8Stream utf8;
    bool first = true;
    for (size_t k = 0; k < steps.size(); ++k) {
        const StepRecord& s = steps[k];
        std::string bytes = utf8.push(s.piece);
        if (first && trimLeadingSpace && !bytes.empty()) {
            if (bytes[0] == ' ') bytes.erase(0, 1);
            first = false;
        } else if (!bytes.empty()) {
            first = false;
        }
        const QString chunk = QString::fromUtf8(bytes);
        out.tokenStarts.append(int(out.plain.size()));
        out.plain += chunk;
        if (chunk.isEmpty()) continue;
        QString style;
        switch (mode) {
            case HeatMode::Probability: style = tint(1.0 - double(s.sample.pRaw), dark); break;
            case HeatMode::Entropy: style = tint(double(s.sample.entropyBits) / 4.0, dark); break;  // 4 bits: 16 equally likely choices
            case HeatMode::Replay: style = k < changed.size() && changed[k] ? tint(1.0, dark) : QString(); break;
            case HeatMode::Off: break;
        }
        if (style.isEmpty()) {
            out.html += escape(chunk);
            continue;
        }
        // Line breaks outside the spans: the break itself is not tinted.
        const QStringList lines = chunk.split(QLatin1Char('\n'));
        for (qsizetype l = 0; l < lines.size(); ++l) {
            if (l > 0) out.html += QLatin1String("<br/>");
            if (!lines[l].isEmpty()) out.html += QStringLiteral("<span style=\"%1\">%2</span>").arg(style, escape(lines[l]));
        }
    }
    const QString rest = QString::fromUtf8(utf8.flush());
    out.plain += rest;
    out.html += escape(rest);
    out.html += QStringLiteral("</div>");
    return out;
}

int stepAtPosition(const QList<int>& tokenStarts, int position) {
    if (tokenStarts.isEmpty() || position < 0) return -1;
    auto it = std::upper_bound(tokenStarts.begin(), tokenStarts.end(), position);
    if (it == tokenStarts.begin()) return -1;
    // Several steps may start at the same offset (tokens that completed no character): take the last.
    return int(it - tokenStarts.begin()) - 1;
}

}  // namespace inferscope
