#pragma once
// AttentionHeatMap: the Attention panel's heat-map, painted from a PositionInspector's weights as
// the engine returned them. layer >= 0: one row per query head, one column per cached position
// (key), the cell the softmax weight the head's query put on that key; query heads that read the
// same KV head (a GQA group) are banded together and labelled with it; keys outside a sliding
// window (weight 0, never read) are hatched. layer == -1: the overview, one row per layer, the
// mean over its heads. Colour: √weight, so that the small weights beside an attention sink stay
// visible (the tooltip gives the exact value).
//
// Hover (real mouse events) sets hoverText: the token at that position, its weight, the head or
// layer; a click selects the token at that position when it is a generated one.

#include <QColor>
#include <QImage>
#include <QPointer>
#include <QQuickPaintedItem>
#include <QtQml/qqmlregistration.h>

#include "visualizer/position_inspector.h"

namespace inferscope {

class AttentionHeatMap : public QQuickPaintedItem {
    Q_OBJECT
    QML_ELEMENT
    Q_PROPERTY(inferscope::PositionInspector* inspector READ inspector WRITE setInspector NOTIFY inspectorChanged)
    Q_PROPERTY(int layerIndex READ layerIndex WRITE setLayerIndex NOTIFY layerChanged)  // -1: all layers (mean over heads)
    Q_PROPERTY(int rows READ rows NOTIFY contentChanged)                 // heads, or layers in the overview
    Q_PROPERTY(int columns READ columns NOTIFY contentChanged)           // cached positions
    Q_PROPERTY(QString hoverText READ hoverText NOTIFY hoverChanged)     // "" when the mouse is not on a cell
    Q_PROPERTY(QColor lowColor MEMBER low_ NOTIFY styleChanged)
    Q_PROPERTY(QColor highColor MEMBER high_ NOTIFY styleChanged)
    Q_PROPERTY(QColor textColor MEMBER text_ NOTIFY styleChanged)
    Q_PROPERTY(QColor lineColor MEMBER line_ NOTIFY styleChanged)
    Q_PROPERTY(QColor markColor MEMBER mark_ NOTIFY styleChanged)        // sliding-window edges, GQA bands

public:
    explicit AttentionHeatMap(QQuickItem* parent = nullptr);
    void paint(QPainter* painter) override;

    PositionInspector* inspector() const { return inspector_; }
    void setInspector(PositionInspector* inspector);
    int layerIndex() const { return layer_; }
    void setLayerIndex(int layer);
    int rows() const;
    int columns() const;
    QString hoverText() const { return hoverText_; }

    // The value painted at a cell: the engine's weight (a head), or its mean over the layer's heads.
    Q_INVOKABLE double valueAt(int row, int position) const;
    // The cell under a point of the item: {row, position}, or {-1, -1}.
    Q_INVOKABLE QPoint cellAt(qreal x, qreal y) const;
    static constexpr qreal kLeft = 64;   // row labels and the GQA bands
    static constexpr qreal kRowHeight = 14;

signals:
    void inspectorChanged();
    void layerChanged();
    void contentChanged();
    void hoverChanged();
    void styleChanged();

protected:
    void hoverMoveEvent(QHoverEvent* event) override;
    void hoverLeaveEvent(QHoverEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;

private:
    void rebuild();           // the image of cells, from the inspector's current result
    void setHover(const QString& text);
    QPointer<PositionInspector> inspector_;
    int layer_ = 0;
    QImage cells_;            // columns × rows, one pixel per cell, scaled when painted
    QColor low_{"#f4f5f8"}, high_{"#4f46e5"}, text_{"#1c1f24"}, line_{"#d8dce3"}, mark_{"#d9730d"};
    QString hoverText_;
};

}  // namespace inferscope
