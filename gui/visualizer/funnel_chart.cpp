#include "visualizer/funnel_chart.h"

#include <QFontMetricsF>
#include <QPainter>
#include <algorithm>

namespace inferscope {

FunnelChart::FunnelChart(QQuickItem* parent) : CandidatesItem(parent) {
    connect(this, &QQuickItem::widthChanged, this, &FunnelChart::cellWidthChanged);
    connect(this, &CandidatesItem::layoutChanged, this, &FunnelChart::cellWidthChanged);
}

double FunnelChart::pAt(int row, int column) const {
    if (row < 0 || row >= shownRows() || column < 1 || column > stageCount_) return 0;
    const QList<double>& p = rows()[row].p;
    return column - 1 < p.size() ? p[column - 1] : 0;
}

qreal FunnelChart::cellWidth() const {
    return stageCount_ > 0 ? std::max<qreal>(0, (width() - tokenWidth_ - stageCount_ * spacing_) / stageCount_) : 0;
}

QString FunnelChart::cellText(int row, int column) const {
    if (row < 0 || row >= shownRows() || column < 0 || column > stageCount_) return {};
    if (column == 0) return rows()[row].token;
    const double p = pAt(row, column);
    return p > 0 ? QString::number(p * 100, 'f', p < 0.1 ? 1 : 0) : QStringLiteral("×");
}

QColor FunnelChart::cellTextColor(int row, int column) const {
    if (column == 0) return row >= 0 && row < shownRows() && rows()[row].chosen ? accentColor_ : textColor_;
    const double p = pAt(row, column);
    if (p <= 0) return mutedColor_;
    if (p < 0.5) return textColor_;
    return column == stageCount_ ? textOnLastBarColor_ : textOnBarColor_;
}

QColor FunnelChart::cellBackground(int row, int column) const {
    if (column == 0) return Qt::transparent;
    const double p = pAt(row, column);
    if (p < 0.5) return cellColor_;
    return column == stageCount_ ? lastBarColor_ : barColor_;
}

QRectF FunnelChart::cellRect(int row, int column) const {
    const qreal y = row * (rowHeight_ + spacing_);
    if (column == 0) return {0, y, tokenWidth_, rowHeight_};
    const qreal w = cellWidth();
    return {tokenWidth_ + spacing_ + (column - 1) * (w + spacing_), y, w, rowHeight_};
}

void FunnelChart::paint(QPainter* painter) {
    const int shown = shownRows();
    for (int r = 0; r < shown; ++r) {
        // The token, cut short with an ellipsis when long.
        const QRectF tokenBox = cellRect(r, 0);
        QFont tf = tokenFont_;
        tf.setBold(rows()[r].chosen);
        painter->setFont(tf);
        painter->setPen(cellTextColor(r, 0));
        painter->drawText(tokenBox, Qt::AlignLeft | Qt::AlignVCenter, QFontMetricsF(tf).elidedText(rows()[r].token, Qt::ElideRight, tokenBox.width()));
        // Each stage: the empty cell, the bar from the left, the percentage centred over both.
        painter->setFont(valueFont_);
        for (int c = 1; c <= stageCount_; ++c) {
            const QRectF box = cellRect(r, c);
            const double p = pAt(r, c);
            // Square cells, whole pixels: antialiased rounded ones took a third of the paint.
            const QRect cell = box.toRect();
            painter->fillRect(cell, cellColor_);
            // Whole pixels: a bar shorter than half of one is not drawn (a 1-px line said 0.1% and 0.001% alike).
            const int barWidth = qRound(cell.width() * std::min(1.0, p));
            if (p > 0 && barWidth > 0) painter->fillRect(QRect(cell.x(), cell.y(), barWidth, cell.height()), c == stageCount_ ? lastBarColor_ : barColor_);
            painter->setPen(cellTextColor(r, c));
            painter->drawText(box, Qt::AlignCenter, cellText(r, c));
        }
    }
}

}  // namespace inferscope
