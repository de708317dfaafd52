#include "visualizer/kv/kv_cache_grid.h"

#include <QPainter>
#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

#include "app/units.h"

namespace inferscope {
namespace {

constexpr int kMinViewLength = 16;
constexpr qreal kMinTickSpacing = 56;   // pixels between position labels
constexpr qreal kMinLabelSpacing = 12;  // pixels between layer labels
constexpr qreal kCellLinesFrom = 4;     // pixels per position from which single cells are outlined

// A window that holds the fill with room to grow, in powers of two so that the scale changes
// rarely while decoding (at 32, 64, 128, … positions), within the context.
int followLength(int used, int capacity) {
    const int wanted = std::max(2 * kMinViewLength, used + used / 8 + 1);
    return std::min(capacity, int(std::bit_ceil(unsigned(wanted))));
}

// 1, 2, 5 × 10^k: the smallest step at least `minimum`.
int niceStep(double minimum) {
    for (int scale = 1;; scale *= 10)
        for (int m : {1, 2, 5})
            if (m * scale >= minimum) return m * scale;
}

}  // namespace

KvCacheGrid::KvCacheGrid(QQuickItem* parent) : QQuickPaintedItem(parent) {
    setAcceptedMouseButtons(Qt::LeftButton);
    setAntialiasing(false);
}

void KvCacheGrid::setSource(KvCacheView* source) {
    if (source_ == source) return;
    if (source_) disconnect(source_, nullptr, this, nullptr);
    source_ = source;
    if (source_) connect(source_, &KvCacheView::changed, this, &KvCacheGrid::onSourceChanged);
    emit sourceChanged();
    onSourceChanged();
}

void KvCacheGrid::setCollapseLayers(bool collapse) {
    if (collapse_ == collapse) return;
    collapse_ = collapse;
    emit appearanceChanged();
    emit viewChanged();
    update();
}

void KvCacheGrid::setViewMode(ViewMode mode) {
    if (mode_ == mode) return;
    mode_ = mode;
    onSourceChanged();
    emit viewChanged();
}

void KvCacheGrid::onSourceChanged() {
    const int cap = capacity();
    if (cap <= 0) setWindow(0, 1);
    else if (mode_ == ViewMode::FollowFill) setWindow(0, followLength(source_->usedCells(), cap));
    else if (mode_ == ViewMode::WholeContext) setWindow(0, cap);
    else setWindow(viewStart_, viewLength_);  // clamped to a context that may have changed
    update();
}

void KvCacheGrid::setWindow(int start, int length) {
    const int cap = capacity();
    if (cap > 0) {
        length = std::clamp(length, std::min(kMinViewLength, cap), cap);
        start = std::clamp(start, 0, cap - length);
    }
    if (start == viewStart_ && length == viewLength_) return;
    viewStart_ = start;
    viewLength_ = std::max(1, length);
    emit viewChanged();
    update();
}

void KvCacheGrid::showRange(int start, int length) {
    setViewMode(ViewMode::Manual);
    setWindow(start, length);
}

void KvCacheGrid::centreOn(int position) { showRange(position - viewLength_ / 2, viewLength_); }

void KvCacheGrid::zoomAt(qreal x, qreal factor) {
    if (width() <= 0 || factor <= 0) return;
    setViewMode(ViewMode::Manual);
    const double anchor = viewStart_ + x * viewLength_ / width();
    const int length = int(std::lround(viewLength_ * factor));
    setWindow(int(std::lround(anchor - (anchor - viewStart_) * factor)), length);
}

void KvCacheGrid::panBy(qreal dx) {
    if (width() <= 0) return;
    setViewMode(ViewMode::Manual);
    setWindow(viewStart_ - int(std::lround(dx * viewLength_ / width())), viewLength_);
}

qreal KvCacheGrid::rowGap() const {
    const int n = rows();
    if (n <= 1) return 0;
    const qreal plain = height() / n;
    return plain >= 8 ? 2 : plain >= 4 ? 1 : 0;
}

qreal KvCacheGrid::rowHeight() const {
    const int n = rows();
    return n > 0 ? (height() - rowGap() * (n - 1)) / n : 0;
}

bool KvCacheGrid::showsHeads() const {
    return !collapse_ && source_ && source_->kvHeads() > 1 && rowHeight() / source_->kvHeads() >= 3;
}

int KvCacheGrid::positionAt(qreal x) const {
    if (width() <= 0 || x < 0 || x >= width()) return -1;
    const int p = viewStart_ + int(std::floor(x * viewLength_ / width()));
    return p < capacity() ? p : -1;
}

int KvCacheGrid::layerAt(qreal y) const {
    if (collapse_ || y < 0 || y >= height()) return -1;
    const int row = int(std::floor(y / (rowHeight() + rowGap())));
    return row < rows() ? row : -1;
}

QString KvCacheGrid::originAt(int position) const {
    if (!source_ || position < 0 || position >= capacity()) return QString();
    int begin = 0;
    for (const auto& [count, origin] : source_->stats().originRuns) {
        if (position < begin + count) return cellOriginName(origin);
        begin += count;
    }
    return cellOriginName(CellOrigin::Empty);
}

QString KvCacheGrid::describeAt(qreal x, qreal y) const {
    const int p = positionAt(x);
    if (p < 0) return QString();
    const QString origin = originAt(p);
    const QString what = origin == QStringLiteral("prompt")      ? tr("prompt token (prefill)")
                         : origin == QStringLiteral("generated") ? tr("generated token (decode)")
                                                                 : tr("empty, reserved");
    const int layer = layerAt(y);
    if (layer < 0) return tr("position %1: %2").arg(groupedCount(uint64_t(p)), what);
    if (source_->isSlidingLayer(layer) && p < source_->cellsOutsideWindow())
        return tr("position %1, layer %2 (window %3): %4, kept in memory but outside the window: the next token does not read it")
            .arg(groupedCount(uint64_t(p))).arg(layer).arg(groupedCount(uint64_t(source_->slidingWindow()))).arg(what);
    if (showsHeads()) {
        const qreal within = y - layer * (rowHeight() + rowGap());
        const int head = std::min(source_->kvHeads() - 1, int(within / (rowHeight() / source_->kvHeads())));
        return tr("position %1, layer %2, KV head %3: %4").arg(groupedCount(uint64_t(p))).arg(layer).arg(head).arg(what);
    }
    return tr("position %1, layer %2: %3").arg(groupedCount(uint64_t(p))).arg(layer).arg(what);
}

QVariantList KvCacheGrid::positionTicks() const {
    QVariantList out;
    if (capacity() <= 0 || width() <= 0) return out;
    const int step = niceStep(kMinTickSpacing * viewLength_ / width());
    for (int p = (viewStart_ + step - 1) / step * step; p <= viewStart_ + viewLength_; p += step)
        out.append(QVariantMap{{QStringLiteral("x"), xOf(p)}, {QStringLiteral("label"), groupedCount(uint64_t(p))}});
    return out;
}

QVariantList KvCacheGrid::layerTicks() const {
    QVariantList out;
    const int n = collapse_ ? 0 : rows();
    if (n == 0) return out;
    const qreal pitch = rowHeight() + rowGap();
    const int every = std::max(1, int(std::ceil(kMinLabelSpacing / pitch)));
    for (int layer = 0; layer < n; layer += every)
        out.append(QVariantMap{{QStringLiteral("y"), layer * pitch + rowHeight() / 2},
                               {QStringLiteral("label"), QString::number(layer) + (source_->isSlidingLayer(layer) ? QStringLiteral("w") : QString())}});
    return out;
}

void KvCacheGrid::paint(QPainter* painter) {
    const int cap = capacity(), n = rows();
    if (!source_ || cap <= 0 || n <= 0 || width() <= 0) return;
    const double viewEnd = viewStart_ + viewLength_;

    // The runs in position order: the used cells, then the empty reserved rest.
    struct Segment { int begin, end; QColor color; };
    std::vector<Segment> segments;
    int begin = 0;
    for (const auto& [count, origin] : source_->stats().originRuns) {
        segments.push_back({begin, begin + count, origin == CellOrigin::Generated ? generatedColor_ : promptColor_});
        begin += count;
    }
    const int used = begin;
    segments.push_back({used, cap, emptyColor_});

    // Where each run starts and ends on screen. A run narrower than a pixel (one token in a
    // compressed view) still gets one, pushing the next run right, so that every run shows.
    std::vector<std::pair<qreal, qreal>> spans;
    qreal right = 0, usedRight = 0;
    for (const Segment& s : segments) {
        const double b = std::max<double>(s.begin, viewStart_), e = std::min<double>(s.end, viewEnd);
        if (e <= b) {
            spans.emplace_back(0, 0);
            continue;
        }
        const qreal x0 = std::max(xOf(b), right);
        const qreal x1 = std::max(xOf(e), x0 + 1);
        spans.emplace_back(x0, x1);
        right = x1;
        if (s.end <= used) usedRight = x1;
    }
    const qreal rh = rowHeight(), pitch = rh + rowGap();
    for (int row = 0; row < n; ++row)
        for (size_t i = 0; i < segments.size(); ++i)
            if (spans[i].second > spans[i].first)
                painter->fillRect(QRectF(spans[i].first, row * pitch, spans[i].second - spans[i].first, rh), segments[i].color);
    // Sliding-window layers: the cells before the next token's window stay in memory (the engine
    // allocates and writes every position on every layer) but attention no longer reads them.
    if (!collapse_ && source_->cellsOutsideWindow() > 0) {
        const double e = std::min<double>(source_->cellsOutsideWindow(), viewEnd);
        if (e > viewStart_) {
            QColor shade = outsideWindowColor_;
            const qreal x1 = std::max(xOf(e), 1.0);
            for (int row = 0; row < n; ++row)
                if (source_->isSlidingLayer(row)) {
                    painter->fillRect(QRectF(0, row * pitch, x1, rh), QBrush(shade, Qt::BDiagPattern));
                    painter->fillRect(QRectF(x1 - 1, row * pitch, 1, rh), shade);  // the window's edge
                }
        }
    }
    // Single cells once they are wide enough to tell apart.
    if (width() / viewLength_ >= kCellLinesFrom)
        for (int p = viewStart_ + 1; p < viewEnd; ++p) painter->fillRect(QRectF(std::floor(xOf(p)), 0, 1, height()), lineColor_);
    // The KV heads inside each layer: [layer][kv_head][position][head_dim].
    if (showsHeads()) {
        QColor headLine = lineColor_;
        headLine.setAlphaF(0.55f);
        const int heads = source_->kvHeads();
        for (int row = 0; row < n; ++row)
            for (int h = 1; h < heads; ++h) painter->fillRect(QRectF(0, std::floor(row * pitch + h * rh / heads), width(), 1), headLine);
    }
    // Where the next token's K and V will be written.
    if (used >= viewStart_ && used <= viewEnd && used < cap)
        painter->fillRect(QRectF(std::min(std::max(xOf(used), usedRight), width() - 2), 0, 2, height()), cursorColor_);
}

void KvCacheGrid::geometryChange(const QRectF& newGeometry, const QRectF& oldGeometry) {
    QQuickPaintedItem::geometryChange(newGeometry, oldGeometry);
    if (newGeometry.size() != oldGeometry.size()) emit viewChanged();
}

void KvCacheGrid::wheelEvent(QWheelEvent* event) {
    // Ctrl+wheel zooms around the pointer, a horizontal wheel (or Shift+wheel) pans; a plain
    // wheel is left to the scrolling panel.
    const QPoint delta = event->angleDelta();
    if (event->modifiers() & Qt::ControlModifier && delta.y() != 0) {
        zoomAt(event->position().x(), delta.y() > 0 ? 0.8 : 1.25);
    } else if (delta.x() != 0 || (event->modifiers() & Qt::ShiftModifier && delta.y() != 0)) {
        panBy((delta.x() != 0 ? delta.x() : delta.y()) / 4.0);
    } else {
        event->ignore();
        return;
    }
    event->accept();
}

void KvCacheGrid::mousePressEvent(QMouseEvent* event) {
    dragX_ = event->position().x();
    dragStart_ = viewStart_;
    setKeepMouseGrab(true);  // a drag pans the grid, not the panel around it
    event->accept();
}

void KvCacheGrid::mouseMoveEvent(QMouseEvent* event) {
    if (width() <= 0) return;
    setViewMode(ViewMode::Manual);
    setWindow(dragStart_ - int(std::lround((event->position().x() - dragX_) * viewLength_ / width())), viewLength_);
    event->accept();
}

}  // namespace inferscope
