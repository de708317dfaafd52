#include "chat/draft_summary.h"

#include <QCoreApplication>

namespace inferscope {
namespace {

QString tr(const char* text) { return QCoreApplication::translate("DraftSummary", text); }
QString two(double v) { return QString::number(v, 'f', 2); }

}  // namespace

DraftTotals draftTotals(const std::vector<StepRecord>& steps) {
    DraftTotals t;
    for (const StepRecord& s : steps) {
        if (!s.draft) continue;
        const DraftRecord& d = *s.draft;
        if (d.verifyRows > 0) {  // a round's first token carries its costs
            t.rounds += 1;
            t.drafted += d.draftLength;
            t.draftUs += d.draftUs;
            t.verifyUs += d.verifyUs;
        }
        t.accepted += d.fate == DraftRecord::Fate::Accepted;
        t.corrected += d.fate == DraftRecord::Fate::Corrected;
        t.bonus += d.fate == DraftRecord::Fate::Bonus;
    }
    return t;
}

QString describeDraft(const DraftRecord& d, const QString& draftedText) {
    const QString place = tr("(draft token %1 of %2)").arg(d.draftIndex + 1).arg(d.draftLength);
    switch (d.fate) {
        case DraftRecord::Fate::Accepted:
            return tr("drafted %1, q %2, p %3: accepted with probability %4 %5")
                .arg(draftedText, two(d.q), two(d.p), two(d.acceptProbability), place);
        case DraftRecord::Fate::Corrected:
            return tr("drafted %1, q %2, p %3: rejected (accepted with probability %4) %5; this token was drawn from max(0, p − q) instead")
                .arg(draftedText, two(d.q), two(d.p), two(d.acceptProbability), place);
        case DraftRecord::Fate::Bonus:
            return d.draftLength == 1 ? tr("bonus: the drafted token was accepted; this one was drawn from p after it")
                                      : tr("bonus: all %1 drafted tokens were accepted; this one was drawn from p after them").arg(d.draftLength);
        case DraftRecord::Fate::Undrafted: break;
    }
    return tr("not drafted: nothing was drafted this round, a plain decode step");
}

QVariantMap draftMap(const DraftRecord* d, const std::function<QString(int32_t)>& textOf, int32_t chosen) {
    if (!d) return {};
    const bool drafted = d->fate == DraftRecord::Fate::Accepted || d->fate == DraftRecord::Fate::Corrected;
    const QString draftedText = drafted && d->draftedId >= 0 ? textOf(d->draftedId) : QString();
    QVariantList candidates, residual;
    for (const DraftCandidate& c : d->candidates)
        candidates.append(QVariantMap{{"token", textOf(c.id)}, {"p", double(c.p)}, {"q", double(c.q)},
                                      {"drafted", c.id == d->draftedId}, {"chosen", c.id == chosen}});
    for (const DraftResidual& e : d->residual)
        residual.append(QVariantMap{{"token", textOf(e.id)}, {"r", double(e.r)}, {"chosen", e.id == chosen}});
    const QString rule = drafted ? QStringLiteral("min(1, p/q) = min(1, %1 / %2) = %3").arg(two(d->p), two(d->q), two(d->acceptProbability))
                                 : QString();
    return {{"fate", QLatin1String(draftFateName(d->fate))}, {"drafted", draftedText}, {"q", double(d->q)}, {"p", double(d->p)},
            {"acceptProbability", double(d->acceptProbability)}, {"draftIndex", d->draftIndex}, {"draftLength", d->draftLength},
            {"verifyRows", d->verifyRows}, {"verifyMs", double(d->verifyUs) / 1000.0}, {"draftMs", double(d->draftUs) / 1000.0},
            {"text", describeDraft(*d, draftedText)}, {"rule", rule}, {"candidates", candidates}, {"residual", residual},
            {"residualMass", double(d->residualMass)}};
}

QString draftTotalsText(const DraftTotals& t) {
    if (!t.any()) return {};
    return tr("speculative: %1 drafted, %2 accepted (%3%), %4 rounds")
        .arg(t.drafted)
        .arg(t.accepted)
        .arg(QString::number(t.acceptance() * 100.0, 'f', 0))
        .arg(t.rounds);
}

QColor draftTint(DraftRecord::Fate fate, bool dark) {
    switch (fate) {
        case DraftRecord::Fate::Accepted: return dark ? QColor(0x2e, 0x6b, 0x3a) : QColor(0xb7, 0xe4, 0xbf);
        case DraftRecord::Fate::Corrected: return dark ? QColor(0x8a, 0x2e, 0x2e) : QColor(0xf4, 0xb0, 0xa8);
        case DraftRecord::Fate::Bonus: return dark ? QColor(0x2c, 0x4f, 0x86) : QColor(0xb8, 0xd0, 0xf5);
        case DraftRecord::Fate::Undrafted: break;
    }
    return {};
}

}  // namespace inferscope
