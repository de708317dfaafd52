#pragma once
// FunnelChart: the sampler funnel's cells, painted — a row per candidate: its token, then its
// probability after each sampler stage as a bar with the percentage on it, "×" where the stage
// removed it. One painted item instead of seventy cells of QML items with seven bindings each:
// those took the GUI thread ~2.5 ms at every step the panel followed (2.5% of a core, on two
// cores the decode's, while an answer streamed).

#include <QColor>
#include <QFont>
#include <QtQml/qqmlregistration.h>

#include "visualizer/candidates_item.h"

namespace inferscope {

class FunnelChart : public CandidatesItem {
    Q_OBJECT
    QML_ELEMENT
    Q_PROPERTY(int stageCount MEMBER stageCount_ NOTIFY layoutChanged)
    Q_PROPERTY(int rows MEMBER maxRows_ NOTIFY layoutChanged)  // at most this many candidates
    Q_PROPERTY(qreal tokenWidth MEMBER tokenWidth_ NOTIFY layoutChanged)
    Q_PROPERTY(qreal spacing MEMBER spacing_ NOTIFY layoutChanged)
    Q_PROPERTY(qreal rowHeight MEMBER rowHeight_ NOTIFY layoutChanged)
    // A stage's column width: what the width leaves after the token's column, shared (the QML header lines up with it).
    Q_PROPERTY(qreal cellWidth READ cellWidth NOTIFY cellWidthChanged)
    Q_PROPERTY(int shownRows READ shownRows NOTIFY candidatesChanged)  // of the candidates: at most `rows`
    Q_PROPERTY(QColor textColor MEMBER textColor_ NOTIFY styleChanged)
    Q_PROPERTY(QColor mutedColor MEMBER mutedColor_ NOTIFY styleChanged)        // "×"
    Q_PROPERTY(QColor accentColor MEMBER accentColor_ NOTIFY styleChanged)      // the picked token
    Q_PROPERTY(QColor cellColor MEMBER cellColor_ NOTIFY styleChanged)          // an empty cell
    Q_PROPERTY(QColor barColor MEMBER barColor_ NOTIFY styleChanged)
    Q_PROPERTY(QColor lastBarColor MEMBER lastBarColor_ NOTIFY styleChanged)    // the distribution drawn from
    Q_PROPERTY(QColor textOnBarColor MEMBER textOnBarColor_ NOTIFY styleChanged)
    Q_PROPERTY(QColor textOnLastBarColor MEMBER textOnLastBarColor_ NOTIFY styleChanged)
    Q_PROPERTY(QFont tokenFont MEMBER tokenFont_ NOTIFY styleChanged)
    Q_PROPERTY(QFont valueFont MEMBER valueFont_ NOTIFY styleChanged)

public:
    explicit FunnelChart(QQuickItem* parent = nullptr);
    void paint(QPainter* painter) override;

    int shownRows() const { return int(std::min<qsizetype>(maxRows_, maxRows_ < 0 ? 0 : rows().size())); }

    // What a cell shows (column 0: the token; 1 …: the percentage after that stage, "×" once removed).
    Q_INVOKABLE QString cellText(int row, int column) const;
    // The colour its text is drawn in: on the bar once the bar reaches the text's middle.
    Q_INVOKABLE QColor cellTextColor(int row, int column) const;
    // Where the cell is, and the colour behind its text (the bar's, or the empty cell's).
    Q_INVOKABLE QRectF cellRect(int row, int column) const;
    Q_INVOKABLE QColor cellBackground(int row, int column) const;
    qreal cellWidth() const;

signals:
    void cellWidthChanged();

protected:
    qreal neededHeight() const override { return shownRows() > 0 ? shownRows() * (rowHeight_ + spacing_) - spacing_ : 0; }

private:
    double pAt(int row, int column) const;

    int stageCount_ = 6;
    int maxRows_ = 10;
    qreal tokenWidth_ = 70, spacing_ = 3, rowHeight_ = 16;
    QColor textColor_, mutedColor_, accentColor_, cellColor_, barColor_, lastBarColor_, textOnBarColor_, textOnLastBarColor_;
    QFont tokenFont_, valueFont_;
};

}  // namespace inferscope
