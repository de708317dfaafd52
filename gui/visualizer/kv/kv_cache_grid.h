#pragma once
// KvCacheGrid: the KV cache drawn as layers × positions. Each row is one layer (split into its
// KV heads when there is room), each column one position of the context: prompt cells, generated
// cells and the empty reserved rest, plus a marker where the next token will be written; on a
// sliding-window layer the cells before the next token's window hatched (kept, not read). A
// 2,048-position context is wider than the panel, so the grid shows a window of positions:
// following the fill (the default), the whole context, or what the wheel and a drag choose.
// Painted with QPainter (a few rectangles per run of cells, whatever the context length), and
// repainted only when the source's stats or the window change: no animation while decoding.

#include <QColor>
#include <QPointer>
#include <QQuickPaintedItem>
#include <QVariantList>

#include "visualizer/kv/kv_cache_view.h"

namespace inferscope {

class KvCacheGrid : public QQuickPaintedItem {
    Q_OBJECT
    QML_ELEMENT
    Q_PROPERTY(inferscope::KvCacheView* source READ source WRITE setSource NOTIFY sourceChanged)
    // One row for all layers (an overview strip) instead of a row per layer.
    Q_PROPERTY(bool collapseLayers READ collapseLayers WRITE setCollapseLayers NOTIFY appearanceChanged)
    // Which positions show: following the fill (the default; the window grows in powers of two),
    // the whole context, or a window the user zoomed or dragged to.
    Q_PROPERTY(ViewMode viewMode READ viewMode WRITE setViewMode NOTIFY viewChanged)
    Q_PROPERTY(int viewStart READ viewStart NOTIFY viewChanged)
    Q_PROPERTY(int viewLength READ viewLength NOTIFY viewChanged)
    Q_PROPERTY(double positionsPerPixel READ positionsPerPixel NOTIFY viewChanged)
    Q_PROPERTY(bool showsHeads READ showsHeads NOTIFY viewChanged)  // rows split into KV heads
    Q_PROPERTY(QVariantList positionTicks READ positionTicks NOTIFY viewChanged)  // [{x, label}]
    Q_PROPERTY(QVariantList layerTicks READ layerTicks NOTIFY viewChanged)        // [{y, label}]
    Q_PROPERTY(QColor promptColor MEMBER promptColor_ NOTIFY appearanceChanged)
    Q_PROPERTY(QColor generatedColor MEMBER generatedColor_ NOTIFY appearanceChanged)
    Q_PROPERTY(QColor emptyColor MEMBER emptyColor_ NOTIFY appearanceChanged)
    Q_PROPERTY(QColor lineColor MEMBER lineColor_ NOTIFY appearanceChanged)
    Q_PROPERTY(QColor cursorColor MEMBER cursorColor_ NOTIFY appearanceChanged)
    // Hatching over a sliding-window layer's cells that the next token does not read.
    Q_PROPERTY(QColor outsideWindowColor MEMBER outsideWindowColor_ NOTIFY appearanceChanged)

public:
    enum class ViewMode { FollowFill, WholeContext, Manual };
    Q_ENUM(ViewMode)

    explicit KvCacheGrid(QQuickItem* parent = nullptr);

    KvCacheView* source() const { return source_; }
    void setSource(KvCacheView* source);
    bool collapseLayers() const { return collapse_; }
    void setCollapseLayers(bool collapse);
    ViewMode viewMode() const { return mode_; }
    void setViewMode(ViewMode mode);
    int viewStart() const { return viewStart_; }
    int viewLength() const { return viewLength_; }
    double positionsPerPixel() const { return width() > 0 ? viewLength_ / width() : 0.0; }
    bool showsHeads() const;
    QVariantList positionTicks() const;
    QVariantList layerTicks() const;

    Q_INVOKABLE void showRange(int start, int length);
    Q_INVOKABLE void centreOn(int position);  // keeps the window's length
    // Zooms by factor (< 1: in) keeping the position under x in place; stops following.
    Q_INVOKABLE void zoomAt(qreal x, qreal factor);
    Q_INVOKABLE void panBy(qreal dx);
    Q_INVOKABLE int positionAt(qreal x) const;  // -1 outside the context
    Q_INVOKABLE int layerAt(qreal y) const;     // -1 when collapsed or outside
    Q_INVOKABLE QString originAt(int position) const;  // "prompt", "generated", "empty" or ""
    Q_INVOKABLE QString describeAt(qreal x, qreal y) const;  // one line for the hover readout

    void paint(QPainter* painter) override;

signals:
    void sourceChanged();
    void viewChanged();
    void appearanceChanged();

protected:
    void geometryChange(const QRectF& newGeometry, const QRectF& oldGeometry) override;
    void wheelEvent(QWheelEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;

private:
    void onSourceChanged();
    void setWindow(int start, int length);
    int capacity() const { return source_ ? source_->capacity() : 0; }
    int rows() const { return collapse_ ? 1 : (source_ ? source_->layers() : 0); }
    qreal rowHeight() const;
    qreal rowGap() const;
    qreal xOf(double position) const { return (position - viewStart_) * width() / viewLength_; }

    QPointer<KvCacheView> source_;
    bool collapse_ = false;
    ViewMode mode_ = ViewMode::FollowFill;
    int viewStart_ = 0;
    int viewLength_ = 1;
    qreal dragX_ = 0;     // where a drag started, and the window's start then
    int dragStart_ = 0;
    QColor promptColor_{0x2f, 0x6f, 0xeb}, generatedColor_{0xd9, 0x73, 0x0d};
    QColor emptyColor_{0xee, 0xf0, 0xf4}, lineColor_{0xd8, 0xdc, 0xe3}, cursorColor_{0x1c, 0x1f, 0x24};
    QColor outsideWindowColor_{0xff, 0xff, 0xff};
};

}  // namespace inferscope
