#include "visualizer/draft_timeline.h"

#include <QCoreApplication>
#include <QStringList>
#include <algorithm>
#include <map>

namespace inferscope {
namespace {

QString tr(const char* text) { return QCoreApplication::translate("DraftTimeline", text); }

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

DraftTimeline draftTimeline(const std::vector<StepRecord>& steps) {
    DraftTimeline t;
    for (size_t i = 0; i < steps.size(); ++i) {
        const DraftRecord* d = steps[i].draft.get();
        if (!d) continue;
        if (d->verifyRows > 0 || t.rounds.empty()) {  // a round's first token carries its costs
            DraftRound r;
            r.firstStep = int(i);
            r.drafted = d->draftLength;
            r.verifyRows = d->verifyRows;
            r.draftMs = double(d->draftUs) / 1000.0;
            r.verifyMs = double(d->verifyUs) / 1000.0;
            t.rounds.push_back(r);
            if (size_t(r.drafted) > t.byPosition.size()) t.byPosition.resize(size_t(r.drafted));
            for (int k = 0; k < r.drafted; ++k) t.byPosition[size_t(k)].drafted += 1;
        }
        DraftRound& r = t.rounds.back();
        r.tokens += 1;
        if (d->fate == DraftRecord::Fate::Accepted) {
            r.accepted += 1;
            if (d->draftIndex >= 0 && size_t(d->draftIndex) < t.byPosition.size()) t.byPosition[size_t(d->draftIndex)].accepted += 1;
        }
        r.corrected = r.corrected || d->fate == DraftRecord::Fate::Corrected;
    }
    return t;
}

QVariantMap draftTimelineMap(const DraftTimeline& t) {
    if (!t.any()) return {};
    QVariantList rounds, positions, batches;
    double draftMs = 0, verifyMs = 0;
    int tokens = 0, drafted = 0, accepted = 0, corrected = 0, plain = 0;
    std::map<int, std::vector<double>> bySize;
    for (const DraftRound& r : t.rounds) {
        const QString outcome = r.drafted == 0 ? QStringLiteral("plain") : r.corrected ? QStringLiteral("corrected") : QStringLiteral("bonus");
        rounds.append(QVariantMap{{"step", r.firstStep}, {"drafted", r.drafted}, {"accepted", r.accepted}, {"outcome", outcome},
                                  {"tokens", r.tokens}, {"rows", r.verifyRows}, {"draftMs", r.draftMs}, {"verifyMs", r.verifyMs}});
        draftMs += r.draftMs;
        verifyMs += r.verifyMs;
        tokens += r.tokens;
        drafted += r.drafted;
        accepted += r.accepted;
        corrected += r.corrected;
        plain += r.drafted == 0;
        if (r.verifyRows > 0) bySize[r.verifyRows].push_back(r.verifyMs);
    }
    QStringList positionWords;
    for (size_t k = 0; k < t.byPosition.size(); ++k) {
        const DraftPosition& p = t.byPosition[k];
        const double rate = p.drafted > 0 ? double(p.accepted) / p.drafted : 0.0;
        positions.append(QVariantMap{{"position", int(k) + 1}, {"drafted", p.drafted}, {"accepted", p.accepted}, {"rate", rate}});
        positionWords << tr("%1: %2/%3").arg(k + 1).arg(p.accepted).arg(p.drafted);
    }
    for (const auto& [rows, times] : bySize) {
        const double med = median(times);
        batches.append(QVariantMap{{"rows", rows}, {"count", int(times.size())}, {"medianMs", med}, {"msPerRow", med / rows}});
    }
    const int rounds_ = int(t.rounds.size());
    const QString roundsText = tr("%1 rounds made %2 tokens: %3 drafted, %4 accepted; %5 ended on a rejection, %6 drafted nothing (a plain step)")
                                   .arg(rounds_).arg(tokens).arg(drafted).arg(accepted).arg(corrected).arg(plain);
    return {{"rounds", rounds}, {"byPosition", positions}, {"batches", batches}, {"draftMs", draftMs}, {"verifyMs", verifyMs},
            {"tokens", tokens}, {"roundsText", roundsText}, {"positionsText", tr("accepted/drafted by draft position: %1").arg(positionWords.join(QStringLiteral(" · ")))}};
}

}  // namespace inferscope
