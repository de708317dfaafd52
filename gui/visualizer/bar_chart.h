#pragma once
// BarChart: one bar per value (decode ms per token), optionally a second series drawn over it as
// a line (the same run without the KV cache), and a horizontal reference (a bound). Painted with
// QPainter into the scene graph: hundreds of bars cost one texture, and it renders offscreen.

#include <QColor>
#include <QList>
#include <QQuickPaintedItem>
#include <QStringList>
#include <QtQml/qqmlregistration.h>

namespace inferscope {

class BarChart : public QQuickPaintedItem {
    Q_OBJECT
    QML_ELEMENT
    Q_PROPERTY(QList<qreal> values READ values WRITE setValues NOTIFY changed)
    Q_PROPERTY(QList<qreal> overlay READ overlay WRITE setOverlay NOTIFY changed)  // drawn as a line
    Q_PROPERTY(QColor color MEMBER color_ NOTIFY changed)
    Q_PROPERTY(QColor overlayColor MEMBER overlayColor_ NOTIFY changed)
    Q_PROPERTY(QColor axisColor MEMBER axisColor_ NOTIFY changed)
    Q_PROPERTY(qreal referenceValue MEMBER reference_ NOTIFY changed)   // 0: none
    Q_PROPERTY(QString referenceLabel MEMBER referenceLabel_ NOTIFY changed)
    Q_PROPERTY(QString unit MEMBER unit_ NOTIFY changed)                // "ms"
    Q_PROPERTY(int highlightIndex MEMBER highlight_ NOTIFY changed)     // -1: none
    Q_PROPERTY(qreal maxValue READ maxValue NOTIFY changed)             // the top of the scale
    Q_PROPERTY(QStringList labels MEMBER labels_ NOTIFY changed)        // under each bar (few bars); else 1 .. n
    // The scale's three labels as painted, bottom to top, in plain numbers ("0", "500", "1000 ms";
    // milliseconds from 1000 on as seconds: "0", "1", "2 s"), never "1e+03".
    Q_PROPERTY(QStringList axisLabels READ axisLabels NOTIFY changed)

public:
    explicit BarChart(QQuickItem* parent = nullptr);
    void paint(QPainter* painter) override;

    QList<qreal> values() const { return values_; }
    void setValues(const QList<qreal>& v);
    QList<qreal> overlay() const { return overlay_; }
    void setOverlay(const QList<qreal>& v);
    qreal maxValue() const;
    QStringList axisLabels() const;
    // At most three significant digits, no exponent, no trailing zeros: 1000 -> "1000", 0.0005 -> "0.0005".
    static QString plainNumber(qreal v);
    // Which bar is under x (for tooltips); -1 outside.
    Q_INVOKABLE int indexAt(qreal x) const;

signals:
    void changed();

private:
    QList<qreal> values_, overlay_;
    QColor color_{"#2f6feb"}, overlayColor_{"#d9730d"}, axisColor_{"#888888"};
    qreal reference_ = 0;
    QString referenceLabel_, unit_;
    QStringList labels_;
    int highlight_ = -1;
};

}  // namespace inferscope
