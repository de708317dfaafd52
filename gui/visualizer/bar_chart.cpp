#include "visualizer/bar_chart.h"

#include <QFontMetrics>
#include <QPainter>
#include <QPainterPath>
#include <algorithm>
#include <cmath>

namespace inferscope {
namespace {
constexpr qreal kLeft = 44, kBottom = 16, kTop = 8;

// 1, 2, 5 × 10^n at or above v.
qreal niceCeil(qreal v) {
    if (v <= 0) return 1;
    const qreal e = std::pow(10.0, std::floor(std::log10(v)));
    for (qreal m : {1.0, 2.0, 5.0, 10.0})
        if (m * e >= v) return m * e;
    return 10 * e;
}
}  // namespace

BarChart::BarChart(QQuickItem* parent) : QQuickPaintedItem(parent) {
    setAntialiasing(true);
    connect(this, &BarChart::changed, this, [this] { update(); });
}

void BarChart::setValues(const QList<qreal>& v) {
    values_ = v;
    emit changed();
}

void BarChart::setOverlay(const QList<qreal>& v) {
    overlay_ = v;
    emit changed();
}

qreal BarChart::maxValue() const {
    qreal m = reference_;
    for (qreal v : values_) m = std::max(m, v);
    for (qreal v : overlay_) m = std::max(m, v);
    return niceCeil(m * 1.05);
}

QString BarChart::plainNumber(qreal v) {
    const double a = std::abs(double(v));
    if (a == 0 || !std::isfinite(a)) return QStringLiteral("0");
    const int decimals = a >= 100 ? 0 : std::clamp(2 - int(std::floor(std::log10(a))), 0, 9);
    QString s = QString::number(double(v), 'f', decimals);
    if (s.contains(QLatin1Char('.'))) {
        while (s.endsWith(QLatin1Char('0'))) s.chop(1);
        if (s.endsWith(QLatin1Char('.'))) s.chop(1);
    }
    return s;
}

QStringList BarChart::axisLabels() const {
    const qreal top = maxValue();
    // Thousands of a time unit read better in the next one.
    qreal scale = 1;
    QString unit = unit_;
    if (top >= 1000 && unit_ == QLatin1String("ms")) {
        scale = 1000;
        unit = QStringLiteral("s");
    } else if (top >= 1000 && unit_ == QStringLiteral("µs/token")) {
        scale = 1000;
        unit = QStringLiteral("ms/token");
    }
    QStringList out;
    for (int i = 0; i <= 2; ++i)
        out << plainNumber(top * i / 2 / scale) + (i == 2 && !unit.isEmpty() ? QStringLiteral(" ") + unit : QString());
    return out;
}

int BarChart::indexAt(qreal x) const {
    const int n = int(std::max(values_.size(), overlay_.size()));
    const qreal w = width() - kLeft - 4;
    if (n == 0 || x < kLeft || x > kLeft + w) return -1;
    return std::clamp(int((x - kLeft) / w * n), 0, n - 1);
}

void BarChart::paint(QPainter* p) {
    const qreal w = width() - kLeft - 4, h = height() - kBottom - kTop;
    if (w <= 0 || h <= 0) return;
    const qreal top = maxValue();
    const int n = int(std::max(values_.size(), overlay_.size()));
    auto y = [&](qreal v) { return kTop + h - std::clamp(v / top, 0.0, 1.0) * h; };

    // axes and scale
    p->setPen(QPen(axisColor_, 1));
    p->drawLine(QPointF(kLeft, kTop), QPointF(kLeft, kTop + h));
    p->drawLine(QPointF(kLeft, kTop + h), QPointF(kLeft + w, kTop + h));
    QFont f = p->font();
    f.setPixelSize(10);
    p->setFont(f);
    const QStringList labels = axisLabels();
    for (int i = 0; i <= 2; ++i) {
        const qreal v = top * i / 2;
        const QString& label = labels[i];
        // A label wider than the margin (the top one with its unit) puts the unit on a second line.
        const qsizetype space = label.indexOf(QLatin1Char(' '));
        if (space > 0 && p->fontMetrics().horizontalAdvance(label) > kLeft - 4) {
            p->drawText(QRectF(0, y(v) - 7, kLeft - 4, 14), Qt::AlignRight | Qt::AlignVCenter, label.left(space));
            p->drawText(QRectF(0, y(v) + 5, kLeft - 4, 14), Qt::AlignRight | Qt::AlignVCenter, label.mid(space + 1));
        } else {
            p->drawText(QRectF(0, y(v) - 7, kLeft - 4, 14), Qt::AlignRight | Qt::AlignVCenter, label);
        }
    }
    if (n == 0) return;

    // bars
    const qreal bw = w / n;
    p->setPen(Qt::NoPen);
    for (int i = 0; i < values_.size(); ++i) {
        QColor c = color_;
        if (i == highlight_) c = c.darker(150);
        p->setBrush(c);
        const qreal x = kLeft + i * bw;
        const qreal yy = y(values_[i]);
        p->drawRect(QRectF(x + (bw > 3 ? 0.5 : 0), yy, std::max<qreal>(bw - (bw > 3 ? 1 : 0), 0.6), kTop + h - yy));
    }
    // overlay line
    if (!overlay_.isEmpty()) {
        QPainterPath path;
        for (int i = 0; i < overlay_.size(); ++i) {
            const QPointF pt(kLeft + (i + 0.5) * bw, y(overlay_[i]));
            i == 0 ? path.moveTo(pt) : path.lineTo(pt);
        }
        p->setPen(QPen(overlayColor_, 2));
        p->setBrush(Qt::NoBrush);
        p->drawPath(path);
    }
    // reference
    if (reference_ > 0) {
        QPen dash(axisColor_, 1, Qt::DashLine);
        p->setPen(dash);
        p->drawLine(QPointF(kLeft, y(reference_)), QPointF(kLeft + w, y(reference_)));
        if (!referenceLabel_.isEmpty())
            p->drawText(QRectF(kLeft + 4, y(reference_) - 14, w - 8, 12), Qt::AlignRight | Qt::AlignVCenter, referenceLabel_);
    }
    // x labels: one per bar when given, else the extent
    p->setPen(axisColor_);
    if (!labels_.isEmpty()) {
        for (int i = 0; i < labels_.size() && i < n; ++i)
            p->drawText(QRectF(kLeft + i * bw, kTop + h + 2, bw, kBottom - 2), Qt::AlignHCenter | Qt::AlignVCenter, labels_[i]);
    } else {
        p->drawText(QRectF(kLeft, kTop + h + 2, w, kBottom - 2), Qt::AlignLeft | Qt::AlignVCenter, QStringLiteral("1"));
        p->drawText(QRectF(kLeft, kTop + h + 2, w, kBottom - 2), Qt::AlignRight | Qt::AlignVCenter, QString::number(n));
    }
}

}  // namespace inferscope
