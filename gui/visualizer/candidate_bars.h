#pragma once
// CandidateBars: the Probabilities panel's top candidates, painted — a row per candidate: its
// token, a bar for its probability (scaled to the most probable one's, faint when the sampler's
// stages removed it), the percentage. The rows' clicks, hover, focus and accessible names stay
// with the ItemDelegates under it; this draws what they show. Twenty rows of QML labels and bars
// took ~26 ms of the GUI thread over a 256-token answer, most of it laying their changing texts
// out again (on two cores, taken from the decode).

#include <QColor>
#include <QFont>
#include <QtQml/qqmlregistration.h>

#include "visualizer/candidates_item.h"

namespace inferscope {

class CandidateBars : public CandidatesItem {
    Q_OBJECT
    QML_ELEMENT
    Q_PROPERTY(int count READ count NOTIFY candidatesChanged)
    Q_PROPERTY(qreal rowHeight MEMBER rowHeight_ NOTIFY layoutChanged)
    Q_PROPERTY(qreal tokenWidth MEMBER tokenWidth_ NOTIFY layoutChanged)
    Q_PROPERTY(qreal percentWidth MEMBER percentWidth_ NOTIFY layoutChanged)
    Q_PROPERTY(qreal spacing MEMBER spacing_ NOTIFY layoutChanged)
    Q_PROPERTY(qreal barHeight MEMBER barHeight_ NOTIFY layoutChanged)
    Q_PROPERTY(QColor textColor MEMBER textColor_ NOTIFY styleChanged)
    Q_PROPERTY(QColor accentColor MEMBER accentColor_ NOTIFY styleChanged)   // the picked token and its bar
    Q_PROPERTY(QColor trackColor MEMBER trackColor_ NOTIFY styleChanged)
    Q_PROPERTY(QColor barColor MEMBER barColor_ NOTIFY styleChanged)
    Q_PROPERTY(QFont tokenFont MEMBER tokenFont_ NOTIFY styleChanged)
    Q_PROPERTY(QFont percentFont MEMBER percentFont_ NOTIFY styleChanged)

public:
    explicit CandidateBars(QQuickItem* parent = nullptr);
    void paint(QPainter* painter) override;

    int count() const { return int(rows().size()); }

    // What a row shows: its token, and its percentage ("36.6%", "0.14%").
    Q_INVOKABLE QString tokenText(int row) const;
    Q_INVOKABLE QString percentText(int row) const;
    // The bar's length as a fraction of the track (the most probable candidate fills it).
    Q_INVOKABLE qreal barFraction(int row) const;
    Q_INVOKABLE QColor tokenColor(int row) const;

protected:
    qreal neededHeight() const override { return rows().size() * rowHeight_; }

private:
    double maxP() const;
    qreal rowHeight_ = 22, tokenWidth_ = 90, percentWidth_ = 52, spacing_ = 6, barHeight_ = 14;
    QColor textColor_, accentColor_, trackColor_, barColor_;
    QFont tokenFont_, percentFont_;
};

}  // namespace inferscope
