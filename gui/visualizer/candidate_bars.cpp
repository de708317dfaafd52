#include "visualizer/candidate_bars.h"

#include <QFontMetricsF>
#include <QPainter>
#include <algorithm>

namespace inferscope {

CandidateBars::CandidateBars(QQuickItem* parent) : CandidatesItem(parent) {}

double CandidateBars::maxP() const {
    double m = 0;
    for (const Row& r : rows()) m = std::max(m, r.pRaw);
    return m;
}

QString CandidateBars::tokenText(int row) const { return row >= 0 && row < rows().size() ? rows()[row].token : QString(); }

QString CandidateBars::percentText(int row) const {
    if (row < 0 || row >= rows().size()) return {};
    const double p = rows()[row].pRaw;
    return QString::number(p * 100, 'f', p < 0.01 ? 2 : 1) + QLatin1Char('%');
}

qreal CandidateBars::barFraction(int row) const {
    if (row < 0 || row >= rows().size()) return 0;
    return std::clamp(rows()[row].pRaw / std::max(maxP(), 0.0001), 0.0, 1.0);
}

QColor CandidateBars::tokenColor(int row) const { return row >= 0 && row < rows().size() && rows()[row].chosen ? accentColor_ : textColor_; }

void CandidateBars::paint(QPainter* painter) {
    QFont bold = tokenFont_;
    bold.setBold(true);
    const QFontMetricsF tokenMetrics(tokenFont_), boldMetrics(bold);
    const qreal trackX = tokenWidth_ + spacing_;
    const qreal trackW = std::max<qreal>(0, width() - trackX - spacing_ - percentWidth_);
    for (int r = 0; r < rows().size(); ++r) {
        const Row& row = rows()[r];
        const qreal y = r * rowHeight_;
        const QRectF tokenBox(0, y, tokenWidth_, rowHeight_);
        painter->setFont(row.chosen ? bold : tokenFont_);
        painter->setPen(tokenColor(r));
        painter->drawText(tokenBox, Qt::AlignLeft | Qt::AlignVCenter,
                          (row.chosen ? boldMetrics : tokenMetrics).elidedText(row.token, Qt::ElideRight, tokenWidth_));
        const QRectF track(trackX, y + (rowHeight_ - barHeight_) / 2, trackW, barHeight_);
        painter->setPen(Qt::NoPen);
        painter->setBrush(trackColor_);
        painter->drawRoundedRect(track, 3, 3);
        // A candidate a stage removed is drawn faint: it was not in the distribution sampled.
        QColor fill = row.chosen ? accentColor_ : barColor_;
        if (!(row.pFinal > 0)) fill.setAlphaF(fill.alphaF() * 0.35f);
        painter->setBrush(fill);
        painter->drawRoundedRect(QRectF(track.x(), track.y(), track.width() * barFraction(r), track.height()), 3, 3);
        painter->setFont(percentFont_);
        painter->setPen(textColor_);
        painter->drawText(QRectF(width() - percentWidth_, y, percentWidth_, rowHeight_), Qt::AlignRight | Qt::AlignVCenter, percentText(r));
    }
}

}  // namespace inferscope
