#pragma once
// CandidatesItem: what the painted views of one step's candidates share (FunnelChart,
// CandidateBars) — the candidates as StepInspector.candidates lists them, read once per update
// into rows, and a repaint when they, the layout or the colours change.

#include <QList>
#include <QQuickPaintedItem>
#include <QVariantList>
#include <QtQml/qqmlregistration.h>

namespace inferscope {

class CandidatesItem : public QQuickPaintedItem {
    Q_OBJECT
    QML_ANONYMOUS
    // StepInspector.candidates: {token, chosen, pRaw, pFinal, p: [after each stage]}, most probable first.
    Q_PROPERTY(QVariantList candidates READ candidates WRITE setCandidates NOTIFY candidatesChanged)

public:
    struct Row {
        QString token;
        bool chosen = false;
        double pRaw = 0, pFinal = 0;
        QList<double> p;  // per sampler stage
    };

    explicit CandidatesItem(QQuickItem* parent = nullptr);
    QVariantList candidates() const { return candidates_; }
    void setCandidates(const QVariantList& candidates);
    const QList<Row>& rows() const { return rows_; }

signals:
    void candidatesChanged();
    void layoutChanged();
    void styleChanged();

protected:
    // The height the rows need (the implicit height, set after each change).
    virtual qreal neededHeight() const = 0;

private:
    QVariantList candidates_;
    QList<Row> rows_;
};

}  // namespace inferscope
