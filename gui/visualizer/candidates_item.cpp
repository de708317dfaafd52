#include "visualizer/candidates_item.h"

namespace inferscope {

CandidatesItem::CandidatesItem(QQuickItem* parent) : QQuickPaintedItem(parent) {
    setAntialiasing(true);
    auto relayout = [this] {
        setImplicitHeight(neededHeight());
        update();
    };
    connect(this, &CandidatesItem::candidatesChanged, this, relayout);
    connect(this, &CandidatesItem::layoutChanged, this, relayout);
    connect(this, &CandidatesItem::styleChanged, this, [this] { update(); });
}

void CandidatesItem::setCandidates(const QVariantList& candidates) {
    candidates_ = candidates;
    rows_.clear();
    rows_.reserve(candidates.size());
    for (const QVariant& c : candidates) {
        const QVariantMap m = c.toMap();
        Row row{m.value(QStringLiteral("token")).toString(), m.value(QStringLiteral("chosen")).toBool(),
                m.value(QStringLiteral("pRaw")).toDouble(), m.value(QStringLiteral("pFinal")).toDouble(), {}};
        for (const QVariant& p : m.value(QStringLiteral("p")).toList()) row.p.append(p.toDouble());
        rows_.append(std::move(row));
    }
    emit candidatesChanged();
}

}  // namespace inferscope
