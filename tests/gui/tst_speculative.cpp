// Speculative decoding in the app (Settings → Speculative decoding): with prompt lookup the answer is
// plain greedy decoding's token for token, its tokens carry their drafts' fates, the Probabilities
// panel says what became of a drafted token, the footer counts the drafts, and all of it comes back
// from the store after a restart. A draft model that cannot be used is refused in words.
#include <map>

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "chat/draft_summary.h"
#include "chat_fixture.h"
#include "gui_test_helpers.h"
#include "settings/speculative_settings.h"
#include "visualizer/step_inspector.h"
#include "visualizer/timeline_model.h"

using namespace inferscope;
using namespace inferscope::testing_gui;

namespace {

// Repetitive: prompt lookup finds what follows in the text itself.
const QString kPrompt = QStringLiteral(
    "Once upon a time, there was a little girl named Lily. She liked to play in the park. "
    "Once upon a time, there was a little girl named Lily. She liked to play");

std::vector<int32_t> idsOf(const ChatMessage& m) {
    std::vector<int32_t> ids;
    for (const StepRecord& s : m.steps) ids.push_back(s.sample.id);
    return ids;
}

int countFate(const ChatMessage& m, DraftRecord::Fate fate) {
    int n = 0;
    for (const StepRecord& s : m.steps) n += s.draft && s.draft->fate == fate;
    return n;
}

// The app's graph on a database file, greedy answers of 40 tokens, completion mode.
struct Graph : AppGraph {
    explicit Graph(const QString& database) : AppGraph(Options{.database = database}) {
        SamplerParams p;
        p.temperature = 0.0f;
        p.seed = 42;
        chat->setSamplerOverride(p);
        sampling->setMaxTokens(40);
        chat->setMode(ChatController::Mode::Completion);
    }
    ~Graph() { shutDown(); }
    bool answer(const QString& text) {
        QSignalSpy done(chat.get(), &ChatController::answerFinished);
        return chat->send(text) && done.wait(30000);
    }
    const ChatMessage& last() const { return chat->messages()->at(chat->messages()->count() - 1); }
};

// Sampled at temperature 1 (fixed seed), prompt lookup drafting 4: drafts are rejected and corrected.
struct SampledGraph : Graph {
    explicit SampledGraph(const QString& database) : Graph(database) {
        SamplerParams p;
        p.temperature = 1.0f;
        p.seed = 7;
        chat->setSamplerOverride(p);
    }
    // The bundled model loaded, prompt lookup on with up to 4 drafts.
    bool readyForPromptLookup() {
        if (!loadAndWait(*engine, bundledModel())) return false;
        speculative->setMode(SpeculativeSettings::Mode::PromptLookup);
        speculative->setMaxDraft(4);
        return true;
    }
    int lastRow() const { return chat->messages()->count() - 1; }
    int firstStep(DraftRecord::Fate fate) const {
        const ChatMessage& a = last();
        for (size_t i = 0; i < a.steps.size(); ++i)
            if (a.steps[i].draft && a.steps[i].draft->fate == fate) return int(i);
        return -1;
    }
};

QString two(double v) { return QString::number(v, 'f', 2); }

}  // namespace

class TestSpeculative : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { useTestLocations(); }
    void init() {
        QSettings().remove("speculative");  // each test starts with it off
    }

    void greedyWithPromptLookupIsPlainDecodingAndShowsEachDraft() {
        QTemporaryDir dir;
        const QString db = dir.filePath("chats.sqlite");
        std::vector<int32_t> speculativeIds;
        QString footer, acceptedText;
        QVariantList acceptedCandidates;
        int acceptedStep = -1;
        std::vector<int32_t> plainIds;
        {  // plain greedy decoding, on a fresh engine
            Graph g(dir.filePath("plain.sqlite"));
            QVERIFY(loadAndWait(*g.engine, bundledModel()));
            QVERIFY(g.answer(kPrompt));
            plainIds = idsOf(g.last());
            QVERIFY(plainIds.size() > 10);
            for (const StepRecord& s : g.last().steps) QVERIFY(!s.draft);
            QCOMPARE(g.chat->messages()->data(g.chat->messages()->index(1), ChatModel::DraftsRole).toString(), QString());
        }
        {  // the same prompt with prompt lookup, on a fresh engine too
            Graph g(db);
            QVERIFY(loadAndWait(*g.engine, bundledModel()));
            QVERIFY(g.engine->abilities().drafts);
            g.speculative->setMode(SpeculativeSettings::Mode::PromptLookup);
            g.speculative->setMaxDraft(4);
            QVERIFY(g.answer(kPrompt));
            const ChatMessage& a = g.last();
            speculativeIds = idsOf(a);
            QCOMPARE(speculativeIds, plainIds);  // exactly plain greedy decoding
            QVERIFY(!a.steps[0].draft);          // the first token comes from the prefill
            for (size_t i = 1; i < a.steps.size(); ++i) QVERIFY2(a.steps[i].draft, qPrintable(QString::number(i)));
            QVERIFY2(countFate(a, DraftRecord::Fate::Accepted) > 0, "prompt lookup on a repeated sentence: some drafts accepted");
            const DraftTotals totals = draftTotals(a.steps);
            QCOMPARE(totals.accepted, countFate(a, DraftRecord::Fate::Accepted));
            QVERIFY(totals.rounds > 0 && totals.drafted >= totals.accepted);
            // The panel on an accepted token: its draft in words (greedy: p of the model's top token is 1).
            for (size_t i = 0; i < a.steps.size() && acceptedStep < 0; ++i)
                if (a.steps[i].draft && a.steps[i].draft->fate == DraftRecord::Fate::Accepted) acceptedStep = int(i);
            const int row = g.chat->messages()->count() - 1;
            g.inspector->setDetailsShown(true);
            g.inspector->select(row, acceptedStep);
            QTRY_COMPARE(g.inspector->details().step, acceptedStep);
            const QVariantMap draft = g.inspector->details().current.value("draft").toMap();
            QCOMPARE(draft.value("fate").toString(), QStringLiteral("accepted"));
            const DraftRecord& d = *a.steps[size_t(acceptedStep)].draft;
            const QString token = g.inspector->tokenText(a.steps[size_t(acceptedStep)].sample.id);
            QCOMPARE(draft.value("drafted").toString(), token);
            acceptedText = QStringLiteral("drafted %1, q 1.00, p 1.00: accepted with probability 1.00 (draft token %2 of %3)")
                               .arg(token).arg(d.draftIndex + 1).arg(d.draftLength);
            QCOMPARE(draft.value("text").toString(), acceptedText);
            // Greedy: p is all on the model's top token, which is the drafted one.
            acceptedCandidates = draft.value("candidates").toList();
            QVERIFY(!acceptedCandidates.isEmpty());
            const QVariantMap top = acceptedCandidates.first().toMap();
            QCOMPARE(top.value("token").toString(), token);
            QCOMPARE(top.value("p").toDouble(), 1.0);
            QCOMPARE(top.value("q").toDouble(), 1.0);
            QVERIFY(top.value("drafted").toBool() && top.value("chosen").toBool());
            // The footer's totals, and the tint by fate.
            footer = g.chat->messages()->data(g.chat->messages()->index(row), ChatModel::DraftsRole).toString();
            QCOMPARE(footer, QStringLiteral("speculative: %1 drafted, %2 accepted (%3%), %4 rounds")
                                 .arg(totals.drafted).arg(totals.accepted).arg(qRound(totals.acceptance() * 100)).arg(totals.rounds));
            g.chat->messages()->setHeatMode(QStringLiteral("draft"));
            const HeatText* heat = g.chat->messages()->heatText(row);
            QVERIFY(heat);
            const QColor accepted = g.chat->messages()->draftColor(QStringLiteral("accepted"));
            QVERIFY(std::any_of(heat->spans.begin(), heat->spans.end(), [&](const HeatSpan& s) { return s.tint == accepted; }));
        }
        // A restart: the stored answer keeps every draft record, and shows the same.
        Graph g(db);
        const auto list = g.store.conversations();
        QVERIFY(!list.empty());
        QVERIFY(g.chat->openConversation(list.front().id));
        const int row = g.chat->messages()->count() - 1;
        const ChatMessage& a = g.chat->messages()->at(row);
        QCOMPARE(idsOf(a), speculativeIds);
        QCOMPARE(g.chat->messages()->data(g.chat->messages()->index(row), ChatModel::DraftsRole).toString(), footer);
        g.inspector->setDetailsShown(true);
        g.inspector->select(row, acceptedStep);
        QTRY_COMPARE(g.inspector->details().step, acceptedStep);
        QCOMPARE(g.inspector->details().current.value("draft").toMap().value("text").toString(), acceptedText);
        QCOMPARE(g.inspector->details().current.value("draft").toMap().value("candidates").toList(), acceptedCandidates);  // ISR5 in the store
    }

    // A draft model file: the model itself drafting (the same vocabulary, the same weights) is
    // accepted every time, and the answer is still plain greedy decoding's; a model of another
    // vocabulary is refused, naming the file.
    void aDraftModelFileDraftsAndAnotherVocabularyIsRefused() {
        QTemporaryDir dir;
        std::vector<int32_t> plainIds;
        {
            Graph g(dir.filePath("plain.sqlite"));
            QVERIFY(loadAndWait(*g.engine, bundledModel()));
            QVERIFY(g.answer(kPrompt));
            plainIds = idsOf(g.last());
        }
        Graph g(dir.filePath("draft.sqlite"));
        QVERIFY(loadAndWait(*g.engine, bundledModel()));
        g.speculative->setMode(SpeculativeSettings::Mode::DraftModel);
        g.speculative->setMaxDraft(3);
        g.speculative->setDraftModel(bundledModel());
        QVERIFY(g.answer(kPrompt));
        QCOMPARE(idsOf(g.last()), plainIds);
        const DraftTotals totals = draftTotals(g.last().steps);
        QVERIFY(totals.drafted > 0);
        QCOMPARE(totals.accepted, totals.drafted);
        QCOMPARE(countFate(g.last(), DraftRecord::Fate::Corrected), 0);

        const QString other = QStringLiteral(INFERSCOPE_SHARED_DIR "/models/arch/llama3-tiny.gguf");
        if (!QFile::exists(other)) QSKIP("../shared/models/arch/llama3-tiny.gguf not found: the other vocabulary is not tried");
        g.speculative->setDraftModel(other);
        const int count = g.chat->messages()->count();
        QVERIFY(g.chat->send(QStringLiteral(" Then")));
        QTRY_VERIFY(!g.chat->generating());
        QVERIFY2(g.chat->lastError().startsWith("Speculative decoding: the draft model " + other + " does not fit this model: "),
                 qPrintable(g.chat->lastError()));
        QCOMPARE(g.chat->messages()->count(), count + 1);  // the question is kept, no empty answer
    }

    // A draft model that is no GGUF: the answer is refused, saying so, and nothing is kept.
    void anUnusableDraftModelIsRefusedInWords() {
        QTemporaryDir dir;
        const QString bad = dir.filePath("not-a-model.gguf");
        QFile f(bad);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("this is not a GGUF file");
        f.close();
        ChatFixture c(8);
        QVERIFY(loadAndWait(*c.engine, bundledModel()));
        c.speculative->setMode(SpeculativeSettings::Mode::DraftModel);
        QVERIFY(c.speculative->problem().startsWith("Choose a draft model"));
        QVERIFY(!c.chat->send(QStringLiteral("Once")));  // no file chosen: refused before it starts
        QVERIFY(c.chat->lastError().contains("Settings → Speculative decoding"));
        c.speculative->setDraftModel(QUrl::fromLocalFile(bad).toString());
        QCOMPARE(c.speculative->draftModel(), bad);
        QCOMPARE(c.speculative->problem(), QString());
        QVERIFY(c.chat->send(QStringLiteral("Once")));
        QTRY_VERIFY(!c.chat->generating());
        QVERIFY2(c.chat->lastError().startsWith("Speculative decoding: the draft model " + bad + " cannot be loaded"), qPrintable(c.chat->lastError()));
        // The setting persists like the others.
        SpeculativeSettings again(nullptr);
        QCOMPARE(again.mode(), SpeculativeSettings::Mode::DraftModel);
        QCOMPARE(again.draftModel(), bad);
    }

    // The Probabilities panel on a rejected draft: prompt lookup's q (1 for the drafted token, 0 for
    // the rest) beside the model's p for the leading tokens, the rule with the record's figures, and
    // the residual max(0, p − q) normalised, which for q = 1 is p without the draft, rescaled.
    void aRejectedDraftShowsPAndQAndTheResidual() {
        QTemporaryDir dir;
        SampledGraph g(dir.filePath("chats.sqlite"));
        QVERIFY(g.readyForPromptLookup());
        QVERIFY(g.answer(kPrompt));
        const int step = g.firstStep(DraftRecord::Fate::Corrected);
        QVERIFY2(step > 0, "temperature 1 on stories260K: some draft rejected");
        const StepRecord& s = g.last().steps[size_t(step)];
        const DraftRecord& d = *s.draft;
        g.inspector->setDetailsShown(true);
        g.inspector->select(g.lastRow(), step);
        QTRY_COMPARE(g.inspector->details().step, step);
        const QVariantMap draft = g.inspector->details().current.value("draft").toMap();
        QCOMPARE(draft.value("fate").toString(), QStringLiteral("corrected"));
        QCOMPARE(draft.value("rule").toString(), QStringLiteral("min(1, p/q) = min(1, %1 / 1.00) = %1").arg(two(d.p)));
        QCOMPARE(d.q, 1.0f);
        QCOMPARE(d.acceptProbability, d.p);
        const QVariantList candidates = draft.value("candidates").toList();
        QCOMPARE(candidates.size(), qsizetype(d.candidates.size()));
        QVERIFY(candidates.size() >= 2);
        int draftedRows = 0, chosenRows = 0;
        for (qsizetype i = 0; i < candidates.size(); ++i) {
            const QVariantMap c = candidates[i].toMap();
            const DraftCandidate& r = d.candidates[size_t(i)];
            QCOMPARE(c.value("token").toString(), g.inspector->tokenText(r.id));
            QCOMPARE(c.value("p").toDouble(), double(r.p));
            QCOMPARE(c.value("q").toDouble(), r.id == d.draftedId ? 1.0 : 0.0);  // prompt lookup: all on the draft
            if (r.id == d.draftedId) QCOMPARE(c.value("p").toDouble(), double(d.p));
            draftedRows += c.value("drafted").toBool();
            chosenRows += c.value("chosen").toBool();
            // p is the distribution the sampler drew from: its final stage, as the step's top-N has it.
            for (const auto& t : s.sample.top)
                if (t.id == r.id) QVERIFY2(qAbs(double(t.p[kSamplerStageCount - 1]) - double(r.p)) < 1e-5, qPrintable(c.value("token").toString()));
        }
        QCOMPARE(draftedRows, 1);
        QVERIFY(chosenRows <= 1);
        // The residual: p without the drafted token, renormalised over the rest (mass 1 − p).
        QCOMPARE(draft.value("residualMass").toDouble(), double(d.residualMass));
        QVERIFY(qAbs(d.residualMass - (1.0f - d.p)) < 1e-5f);
        const QVariantList residual = draft.value("residual").toList();
        QVERIFY(!residual.isEmpty() && residual.size() <= qsizetype(kDraftResidual));
        double previous = 1.0;
        for (qsizetype i = 0; i < residual.size(); ++i) {
            const QVariantMap e = residual[i].toMap();
            const DraftResidual& r = d.residual[size_t(i)];
            QVERIFY(r.id != d.draftedId);
            QCOMPARE(e.value("token").toString(), g.inspector->tokenText(r.id));
            QCOMPARE(e.value("chosen").toBool(), r.id == s.sample.id);
            QVERIFY(e.value("r").toDouble() <= previous);
            previous = e.value("r").toDouble();
            for (const DraftCandidate& c : d.candidates)
                if (c.id == r.id) QVERIFY(qAbs(double(r.r) - double(c.p) / (1.0 - double(d.p))) < 1e-5);
        }
        // An accepted draft: the rule, no residual.
        const int kept = g.firstStep(DraftRecord::Fate::Accepted);
        QVERIFY(kept > 0);
        g.inspector->select(g.lastRow(), kept);
        QTRY_COMPARE(g.inspector->details().step, kept);
        const QVariantMap accepted = g.inspector->details().current.value("draft").toMap();
        const DraftRecord& k = *g.last().steps[size_t(kept)].draft;
        QCOMPARE(accepted.value("rule").toString(), QStringLiteral("min(1, p/q) = min(1, %1 / 1.00) = %1").arg(two(k.p)));
        QVERIFY(accepted.value("residual").toList().isEmpty());
    }

    // The Timeline of a speculative answer: its rounds, the acceptance by draft position counted
    // from the records, verify batches by size, and the speed-up: not measured before any plain
    // decoding, then against a plain answer of this session, then against the same prompt decoded
    // without drafts.
    void theTimelineShowsRoundsAcceptanceByPositionAndTheMeasuredSpeedup() {
        QTemporaryDir dir;
        SampledGraph g(dir.filePath("chats.sqlite"));
        QVERIFY(g.readyForPromptLookup());
        // While the answer streams the rounds are not rebuilt (the GUI thread stays light).
        int whileStreaming = 0, shownWhileStreaming = 0;
        connect(g.timeline.get(), &TimelineModel::changed, this, [&] {
            if (!g.chat->generating()) return;
            ++whileStreaming;
            shownWhileStreaming += !g.timeline->speculative().isEmpty();
        });
        QVERIFY(g.answer(kPrompt));
        QCOMPARE(shownWhileStreaming, 0);
        qInfo("timeline refreshed %d times while the answer streamed", whileStreaming);
        g.inspector->select(g.lastRow(), 1);
        QTRY_COMPARE(g.timeline->row(), g.lastRow());
        QVariantMap sp = g.timeline->speculative();
        // Counted here from the records: rounds start on a token with its verify's cost.
        const ChatMessage& a = g.last();
        int rounds = 0, drafted = 0, accepted = 0, corrected = 0, plain = 0, tokens = 0;
        std::vector<int> posDrafted(4, 0), posAccepted(4, 0);
        std::map<int, int> batches;
        for (const StepRecord& s : a.steps) {
            if (!s.draft) continue;
            const DraftRecord& d = *s.draft;
            ++tokens;
            if (d.verifyRows > 0) {
                ++rounds;
                drafted += d.draftLength;
                plain += d.draftLength == 0;
                batches[d.verifyRows] += 1;
                QCOMPARE(d.verifyRows, d.draftLength + 1);  // the pending token and the drafts
                for (int i = 0; i < d.draftLength; ++i) posDrafted[size_t(i)] += 1;
            }
            if (d.fate == DraftRecord::Fate::Accepted) {
                ++accepted;
                posAccepted[size_t(d.draftIndex)] += 1;
            }
            corrected += d.fate == DraftRecord::Fate::Corrected;
        }
        QVERIFY(corrected > 0 && accepted > 0);
        QCOMPARE(sp.value("roundsText").toString(),
                 QStringLiteral("%1 rounds made %2 tokens: %3 drafted, %4 accepted; %5 ended on a rejection, %6 drafted nothing (a plain step)")
                     .arg(rounds).arg(tokens).arg(drafted).arg(accepted).arg(corrected).arg(plain));
        QCOMPARE(sp.value("rounds").toList().size(), rounds);
        const QVariantList byPosition = sp.value("byPosition").toList();
        QStringList words;
        for (qsizetype i = 0; i < byPosition.size(); ++i) {
            const QVariantMap p = byPosition[i].toMap();
            QCOMPARE(p.value("position").toInt(), int(i) + 1);
            QCOMPARE(p.value("drafted").toInt(), posDrafted[size_t(i)]);
            QCOMPARE(p.value("accepted").toInt(), posAccepted[size_t(i)]);
            QCOMPARE(p.value("rate").toDouble(), double(posAccepted[size_t(i)]) / posDrafted[size_t(i)]);
            words << QStringLiteral("%1: %2/%3").arg(i + 1).arg(posAccepted[size_t(i)]).arg(posDrafted[size_t(i)]);
        }
        QVERIFY(!byPosition.isEmpty());
        QCOMPARE(sp.value("positionsText").toString(), QStringLiteral("accepted/drafted by draft position: ") + words.join(QStringLiteral(" · ")));
        const QVariantList sizes = sp.value("batches").toList();
        QCOMPARE(sizes.size(), qsizetype(batches.size()));
        auto it = batches.begin();
        for (const QVariant& b : sizes) {
            QCOMPARE(b.toMap().value("rows").toInt(), it->first);
            QCOMPARE(b.toMap().value("count").toInt(), it->second);
            QVERIFY(b.toMap().value("medianMs").toDouble() > 0);
            ++it;
        }
        // No plain decoding yet on this model: the speed-up is not measured.
        QCOMPARE(sp.value("tokensPerSecond").toDouble(), a.stats.decodeTokensPerSecond);
        QVERIFY(!sp.contains("baseline"));
        QVERIFY(!sp.contains("speedup"));

        // The same prompt decoded without drafts, on the engine.
        QVERIFY(g.timeline->runWithoutDrafts());
        QTRY_VERIFY_WITH_TIMEOUT(!g.timeline->busy(), 30000);
        QVERIFY2(g.timeline->status().startsWith(QStringLiteral("Plain decoding: ")), qPrintable(g.timeline->status()));
        sp = g.timeline->speculative();
        const QVariantMap same = sp.value("baseline").toMap();
        const int n = same.value("tokens").toInt();
        QCOMPARE(n, int(a.steps.size()));
        QCOMPARE(same.value("source").toString(), QStringLiteral("the same prompt decoded for %1 tokens without drafts, just now").arg(n));
        QVERIFY(same.value("tokensPerSecond").toDouble() > 0);
        QCOMPARE(sp.value("speedup").toDouble(), a.stats.decodeTokensPerSecond / same.value("tokensPerSecond").toDouble());
        QCOMPARE(g.chat->messages()->count(), 2);  // a measurement: nothing added to the conversation

        // A plain answer in the conversation becomes the baseline of its model.
        g.speculative->setMode(SpeculativeSettings::Mode::Off);
        QVERIFY(g.answer(QStringLiteral(" Then")));
        const double plainRate = g.last().stats.decodeTokensPerSecond;
        const int plainTokens = int(g.last().steps.size());
        QVERIFY(plainRate > 0);
        g.inspector->select(1, 1);
        QTRY_COMPARE(g.timeline->row(), 1);
        sp = g.timeline->speculative();
        const QVariantMap session = sp.value("baseline").toMap();
        QCOMPARE(session.value("source").toString(),
                 QStringLiteral("a plain answer of %1 tokens on this model, earlier in this session").arg(plainTokens));
        QCOMPARE(session.value("tokensPerSecond").toDouble(), plainRate);
        QCOMPARE(sp.value("speedup").toDouble(), g.chat->messages()->at(1).stats.decodeTokensPerSecond / plainRate);
        // The plain answer itself shows no speculative figures.
        g.inspector->select(3, 1);
        QTRY_COMPARE(g.timeline->row(), 3);
        QVERIFY(g.timeline->speculative().isEmpty());
    }

    // The answer's export: per token whether it was drafted, accepted or corrected, with q and p.
    void theExportSaysWhatEachDraftBecame() {
        QTemporaryDir dir;
        SampledGraph g(dir.filePath("chats.sqlite"));
        QVERIFY(g.readyForPromptLookup());
        QVERIFY(g.answer(kPrompt));
        const int step = g.firstStep(DraftRecord::Fate::Corrected);
        QVERIFY(step > 0);
        const ChatMessage& a = g.last();
        g.inspector->select(g.lastRow(), 0);
        const QString json = dir.filePath("tokens.json"), csv = dir.filePath("tokens.csv");
        QVERIFY(g.inspector->exportRecords(QUrl::fromLocalFile(json), "json"));
        QVERIFY(g.inspector->exportRecords(QUrl::fromLocalFile(csv), "csv"));
        QFile jf(json);
        QVERIFY(jf.open(QIODevice::ReadOnly));
        const QJsonArray steps = QJsonDocument::fromJson(jf.readAll()).object().value("steps").toArray();
        QCOMPARE(steps.size(), qsizetype(a.steps.size()));
        QVERIFY(!steps[0].toObject().contains("speculative"));  // the prefill's token
        const DraftRecord& d = *a.steps[size_t(step)].draft;
        const QJsonObject spec = steps[step].toObject().value("speculative").toObject();
        QCOMPARE(spec.value("fate").toString(), QStringLiteral("corrected"));
        QCOMPARE(spec.value("drafted").toBool(), true);
        QCOMPARE(spec.value("accepted").toBool(), false);
        QCOMPARE(spec.value("corrected").toBool(), true);
        QCOMPARE(spec.value("draft_id").toInt(), d.draftedId);
        QCOMPARE(float(spec.value("q").toDouble()), d.q);
        QCOMPARE(float(spec.value("p").toDouble()), d.p);
        QCOMPARE(float(spec.value("residual_mass").toDouble()), d.residualMass);
        QCOMPARE(spec.value("candidates").toArray().size(), qsizetype(d.candidates.size()));
        QCOMPARE(spec.value("residual").toArray().size(), qsizetype(d.residual.size()));
        QCOMPARE(spec.value("residual").toArray()[0].toObject().value("id").toInt(), d.residual[0].id);
        int exportedAccepted = 0, recordAccepted = 0;
        for (qsizetype i = 0; i < steps.size(); ++i) {
            exportedAccepted += steps[i].toObject().value("speculative").toObject().value("accepted").toBool();
            recordAccepted += a.steps[size_t(i)].draft && a.steps[size_t(i)].draft->fate == DraftRecord::Fate::Accepted;
        }
        QCOMPARE(exportedAccepted, recordAccepted);
        QFile cf(csv);
        QVERIFY(cf.open(QIODevice::ReadOnly));
        const QStringList lines = QString::fromUtf8(cf.readAll()).split('\n', Qt::SkipEmptyParts);
        QCOMPARE(lines.size(), int(a.steps.size()) + 1);
        QVERIFY(lines[0].endsWith(QStringLiteral(",draft_fate,drafted,accepted,corrected,draft_id,draft_token,q,p_target,accept_probability")));
        QVERIFY(lines[1].endsWith(QStringLiteral(",,,,,,,,,")));  // no draft record
        const QString tail = QStringLiteral(",corrected,1,0,1,%1,").arg(d.draftedId);
        QVERIFY2(lines[step + 1].contains(tail), qPrintable(lines[step + 1]));
        QVERIFY2(lines[step + 1].endsWith(QStringLiteral(",%1,%2,%3").arg(double(d.q), 0, 'g', 7).arg(double(d.p), 0, 'g', 7)
                                              .arg(double(d.acceptProbability), 0, 'g', 7)), qPrintable(lines[step + 1]));
    }
};

QTEST_MAIN(TestSpeculative)
#include "tst_speculative.moc"
