#include "visualizer/attention_heat_map.h"

#include <QHoverEvent>
#include <QPainter>
#include <algorithm>
#include <cmath>

#include "app/units.h"

namespace inferscope {
namespace {

QColor mix(const QColor& a, const QColor& b, double t) {
    return QColor::fromRgbF(float(a.redF() + (b.redF() - a.redF()) * t), float(a.greenF() + (b.greenF() - a.greenF()) * t),
                            float(a.blueF() + (b.blueF() - a.blueF()) * t));
}

}  // namespace

AttentionHeatMap::AttentionHeatMap(QQuickItem* parent) : QQuickPaintedItem(parent) {
    setAcceptHoverEvents(true);
    setAcceptedMouseButtons(Qt::LeftButton);
    connect(this, &AttentionHeatMap::styleChanged, this, &AttentionHeatMap::rebuild);
    connect(this, &AttentionHeatMap::widthChanged, this, [this] { update(); });
}

void AttentionHeatMap::setInspector(PositionInspector* inspector) {
    if (inspector_ == inspector) return;
    if (inspector_) disconnect(inspector_, nullptr, this, nullptr);
    inspector_ = inspector;
    if (inspector_) connect(inspector_, &PositionInspector::changed, this, &AttentionHeatMap::rebuild);
    emit inspectorChanged();
    rebuild();
}

void AttentionHeatMap::setLayerIndex(int layer) {
    if (layer_ == layer) return;
    layer_ = layer;
    emit layerChanged();
    rebuild();
}

int AttentionHeatMap::rows() const {
    const PositionInspection* in = inspector_ ? inspector_->inspection() : nullptr;
    if (!in || in->attention.weights.empty()) return 0;
    return layer_ < 0 ? in->attention.nLayer : (layer_ < in->attention.nLayer ? in->attention.nHead : 0);
}

int AttentionHeatMap::columns() const {
    const PositionInspection* in = inspector_ ? inspector_->inspection() : nullptr;
    return in && !in->attention.weights.empty() ? in->attention.nKeys : 0;
}

double AttentionHeatMap::valueAt(int row, int position) const {
    const PositionInspection* in = inspector_ ? inspector_->inspection() : nullptr;
    if (!in || row < 0 || row >= rows() || position < 0 || position >= columns()) return 0;
    const AttentionMap& a = in->attention;
    if (layer_ >= 0) return a.row(layer_, row)[size_t(position)];
    double sum = 0;  // the overview: the layer's heads' mean
    for (int h = 0; h < a.nHead; ++h) sum += a.row(row, h)[size_t(position)];
    return sum / a.nHead;
}

void AttentionHeatMap::rebuild() {
    const int nRows = rows(), nCols = columns();
    cells_ = QImage();
    if (nRows > 0 && nCols > 0) {
        cells_ = QImage(nCols, nRows, QImage::Format_RGB32);
        for (int r = 0; r < nRows; ++r)
            for (int j = 0; j < nCols; ++j) cells_.setPixelColor(j, r, mix(low_, high_, std::sqrt(std::clamp(valueAt(r, j), 0.0, 1.0))));
    }
    setImplicitHeight(std::max(1, nRows) * kRowHeight + 18);
    emit contentChanged();
    update();
}

QPoint AttentionHeatMap::cellAt(qreal x, qreal y) const {
    const int nRows = rows(), nCols = columns();
    const qreal w = width() - kLeft;
    if (nRows == 0 || nCols == 0 || w <= 0 || x < kLeft || x >= width() || y < 0 || y >= nRows * kRowHeight) return {-1, -1};
    return {int((x - kLeft) / w * nCols), int(y / kRowHeight)};  // x: the position, y: the row
}

void AttentionHeatMap::paint(QPainter* p) {
    const int nRows = rows(), nCols = columns();
    if (nRows == 0 || nCols == 0 || !inspector_) return;
    const PositionInspection& in = *inspector_->inspection();
    const AttentionMap& a = in.attention;
    const qreal w = width() - kLeft, h = nRows * kRowHeight;
    if (w <= 0) return;
    const QRectF grid(kLeft, 0, w, h);
    p->drawImage(grid, cells_);  // one pixel per cell, scaled without smoothing: the cells stay sharp
    QFont font = p->font();
    font.setPixelSize(10);
    p->setFont(font);
    const qreal colW = w / nCols;
    // Sliding windows: keys before position - window + 1 are never read on that layer.
    for (int r = 0; r < nRows; ++r) {
        const int window = a.window[size_t(layer_ < 0 ? r : layer_)];
        const int firstRead = window > 0 ? std::max(0, in.position - window + 1) : 0;
        if (firstRead == 0) continue;
        const QRectF dropped(kLeft, r * kRowHeight, firstRead * colW, kRowHeight);
        p->fillRect(dropped, QBrush(line_, Qt::BDiagPattern));
        p->setPen(QPen(mark_, 1));
        p->drawLine(QPointF(kLeft + firstRead * colW, r * kRowHeight), QPointF(kLeft + firstRead * colW, (r + 1) * kRowHeight));
    }
    // Row labels; GQA groups: heads reading one KV head share a band and a separator line.
    const int group = layer_ >= 0 && a.nHeadKv > 0 ? a.nHead / a.nHeadKv : 1;
    for (int r = 0; r < nRows; ++r) {
        const QRectF label(0, r * kRowHeight, kLeft - 14, kRowHeight);
        p->setPen(text_);
        p->drawText(label, Qt::AlignRight | Qt::AlignVCenter, layer_ >= 0 ? QStringLiteral("head %1").arg(r) : QStringLiteral("layer %1").arg(r));
        if (layer_ >= 0 && group > 1) {
            const int kv = a.kvHeadOf(r);
            p->fillRect(QRectF(kLeft - 10, r * kRowHeight + 1, 6, kRowHeight - 2), kv % 2 ? line_ : mark_);
            if (r > 0 && a.kvHeadOf(r - 1) != kv) {
                p->setPen(QPen(text_, 1));
                p->drawLine(QPointF(kLeft - 12, r * kRowHeight), QPointF(width(), r * kRowHeight));
            }
        }
    }
    // The query's own position (the last column) and a scale of positions.
    p->setPen(QPen(line_, 1));
    p->drawRect(grid);
    p->setPen(text_);
    p->drawText(QRectF(kLeft, h + 2, w, 14), Qt::AlignLeft | Qt::AlignTop, QStringLiteral("0"));
    p->drawText(QRectF(kLeft, h + 2, w, 14), Qt::AlignRight | Qt::AlignTop, QString::number(nCols - 1));
}

void AttentionHeatMap::setHover(const QString& text) {
    if (text == hoverText_) return;
    hoverText_ = text;
    emit hoverChanged();
}

void AttentionHeatMap::hoverMoveEvent(QHoverEvent* event) {
    const QPoint cell = cellAt(event->position().x(), event->position().y());
    if (cell.x() < 0) return setHover(QString());
    const int position = cell.x(), row = cell.y();
    const double weight = valueAt(row, position);
    const QString who = layer_ >= 0 ? tr("head %1 (reads KV head %2), layer %3").arg(row).arg(inspector_->kvHeadOf(row)).arg(layer_)
                                    : tr("layer %1, mean of its heads").arg(row);
    QString text = tr("position %1 “%2”: weight %3 — %4").arg(position).arg(isolated(inspector_->tokenAt(position)))
                       .arg(weight < 0.001 && weight > 0 ? QString::number(weight, 'e', 2) : QString::number(weight, 'f', 4)).arg(who);
    const int window = inspector_->windowOf(layer_ < 0 ? row : layer_);
    if (window > 0 && inspector_->position() - position >= window)
        text += QLatin1Char('\n') + tr("Outside this layer's sliding window of %1 tokens: not read, weight 0.").arg(window);
    if (inspector_->generatedAt(position)) text += QLatin1Char('\n') + tr("Click to look inside this token.");
    setHover(text);
}

void AttentionHeatMap::hoverLeaveEvent(QHoverEvent*) { setHover(QString()); }

void AttentionHeatMap::mousePressEvent(QMouseEvent* event) {
    const QPoint cell = cellAt(event->position().x(), event->position().y());
    if (cell.x() < 0 || !inspector_ || !inspector_->selectPosition(cell.x())) {
        event->ignore();
        return;
    }
    event->accept();
}

}  // namespace inferscope
