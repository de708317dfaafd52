#include "visualizer/candidate_bars.h"

#include <QFontMetricsF>
#include <QPainter>
#include <algorithm>

namespace inferscope {

CandidateBars::CandidateBars(QQuickItem* parent) : QQuickPaintedItem(parent) {
    setAntialiasing(true);
    auto relayout = [this] {
        setImplicitHeight(rows_.size() * rowHeight_);
        update();
    };
    connect(this, &CandidateBars::candidatesChanged, this, relayout);
    connect(this, &CandidateBars::layoutChanged, this, relayout);
    connect(this, &CandidateBars::styleChanged, this, [this] { update(); });
}

void CandidateBars::setCandidates(const QVariantList& candidates) {
    candidates_ = candidates;
    rows_.clear();
    rows_.reserve(candidates.size());
    maxP_ = 0;
    for (const QVariant& c : candidates) {
        const QVariantMap m = c.toMap();
        Row row{m.value(QStringLiteral("token")).toString(), m.value(QStringLiteral("chosen")).toBool(),
                m.value(QStringLiteral("pRaw")).toDouble(), m.value(QStringLiteral("pFinal")).toDouble()};
        maxP_ = std::max(maxP_, row.pRaw);
        rows_.append(std::move(row));
    }
    emit candidatesChanged();
}

QString CandidateBars::tokenText(int row) const { return row >= 0 && row < rows_.size() ? rows_[row].token : QString(); }

QString CandidateBars::percentText(int row) const {
    if (row < 0 || row >= rows_.size()) return {};
    const double p = rows_[row].pRaw;
    return QString::number(p * 100, 'f', p < 0.01 ? 2 : 1) + QLatin1Char('%');
}

qreal CandidateBars::barFraction(int row) const {
    if (row < 0 || row >= rows_.size()) return 0;
    return std::clamp(rows_[row].pRaw / std::max(maxP_, 0.0001), 0.0, 1.0);
}

QColor CandidateBars::tokenColor(int row) const { return row >= 0 && row < rows_.size() && rows_[row].chosen ? accentColor_ : textColor_; }

void CandidateBars::paint(QPainter* painter) {
    QFont bold = tokenFont_;
    bold.setBold(true);
    const QFontMetricsF tokenMetrics(tokenFont_), boldMetrics(bold);
    const qreal trackX = tokenWidth_ + spacing_;
    const qreal trackW = std::max<qreal>(0, width() - trackX - spacing_ - percentWidth_);
    for (int r = 0; r < rows_.size(); ++r) {
        const Row& row = rows_[r];
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
