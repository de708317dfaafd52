// The visualizer's data with the real model: the Probabilities panel's step (following the
// stream, picked from the text), branching from an alternative (equal to a fresh run of the same
// tokens, with only one new token prefilled), answer versions, replay over the stored logits,
// the heat map's token offsets, and the per-token export.
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QTextBlock>
#include <QTextDocument>

#include "chat_controller.h"
#include "token_heatmap.h"
#include "chat_store.h"
#include "chat_fixture.h"
#include "gui_test_helpers.h"
#include "sampling_settings.h"
#include "step_inspector.h"

using namespace inferscope;
using namespace inferscope::testing_gui;

class TestStepInspector : public QObject {
    Q_OBJECT

    struct Fixture : ChatFixture {
        explicit Fixture(float temperature = 0.0f) : ChatFixture(20, temperature) {}
    };

private slots:
    void initTestCase() { isolateSettings(); }

    // A newline token's tint stays on the token: Qt's rich text made a tinted span around a line
    // break tint the whole next paragraph. Newlines are written outside the spans.
    void aNewlineDoesNotCarryItsTintIntoTheNextParagraph() {
        std::vector<StepRecord> steps(3);
        steps[0].piece = "A";
        steps[1].piece = "\nB";
        steps[2].piece = "C";
        for (StepRecord& s : steps) s.sample.pRaw = 0.1f;  // all tinted
        const HeatText heat = buildHeatText(steps, HeatMode::Probability, false, false, {});
        QCOMPARE(heat.plain, QStringLiteral("A\nBC"));
        QCOMPARE(heat.tokenStarts, (QList<int>{0, 1, 3}));
        QVERIFY2(!heat.html.contains(QRegularExpression(QStringLiteral("<span[^>]*>[^<]*\n"))), qPrintable(heat.html));
        QCOMPARE(heat.html.count(QStringLiteral("<span")), 3);  // A, B and C; nothing around the newline
        // As the chat's TextEdit lays it out: one paragraph (the break is a line separator, so no
        // paragraph starts with a tinted span, which Qt paints across the whole line), the same
        // characters at the same offsets as the plain text, no paragraph background.
        QTextDocument doc;
        doc.setHtml(heat.html);
        QCOMPARE(doc.blockCount(), 1);
        QCOMPARE(doc.toPlainText(), heat.plain);
        QCOMPARE(doc.characterCount() - 1, heat.plain.size());
        QVERIFY(!doc.firstBlock().blockFormat().hasProperty(QTextFormat::BackgroundBrush));

        // Every character Qt would start a paragraph at, inside tinted tokens: still one paragraph.
        std::vector<StepRecord> odd(6);
        const char* pieces[] = {"a", "\rb", "c\xE2\x80\xA9", "d\xC2\x85", "\x0B" "e", "\x0C" "f"};
        for (size_t i = 0; i < odd.size(); ++i) {
            odd[i].piece = pieces[i];
            odd[i].sample.pRaw = 0.1f;
        }
        const HeatText oddHeat = buildHeatText(odd, HeatMode::Probability, false, false, {});
        QTextDocument oddDoc;
        oddDoc.setHtml(oddHeat.html);
        QCOMPARE(oddDoc.blockCount(), 1);
        QCOMPARE(oddDoc.characterCount() - 1, oddHeat.plain.size());
    }

    void followsTheNewestStepAndSelectsFromText() {
        Fixture f;
        QVERIFY(loadAndWait(f.engine, bundledModel()));
        QVERIFY(f.answer([&] { return f.chat->send("Once upon a time"); }));
        QTest::qWait(150);  // the panel follows at most 10 times a second
        QVERIFY(f.inspector->following());
        QCOMPARE(f.inspector->row(), 1);
        QCOMPARE(f.inspector->step(), 19);
        QCOMPARE(f.inspector->stepCount(), 20);
        // Pick step 1 (" there") from its position in the heat text.
        ChatModel* m = f.chat->messages();
        const QVariantList starts = m->data(m->index(1), ChatModel::TokenStartsRole).toList();
        QCOMPARE(starts.size(), 20);
        QCOMPARE(starts[0].toInt(), 0);   // ","
        QCOMPARE(starts[1].toInt(), 1);   // " there"
        QCOMPARE(starts[2].toInt(), 7);   // " was"
        f.inspector->selectAtPosition(1, 3);
        QVERIFY(!f.inspector->following());
        QCOMPARE(f.inspector->step(), 1);
        const QVariantMap cur = f.inspector->current();
        QCOMPARE(cur.value("id").toInt(), 383);
        QCOMPARE(cur.value("token").toString(), QString::fromUtf8("\u2423there"));
        QCOMPARE(cur.value("rank").toInt(), 1);
        const QVariantList cands = f.inspector->candidates();
        QCOMPARE(cands.size(), 20);
        QVERIFY(cands[0].toMap().value("chosen").toBool());
        QCOMPARE(cands[0].toMap().value("p").toList().size(), kSamplerStageCount);
        QCOMPARE(f.inspector->survivors().size(), kSamplerStageCount);
        QVERIFY(f.inspector->describe(1, 1).startsWith(QString::fromUtf8("“\u2423there”")));
        // The heat text has one span per tinted token and the same characters as the answer.
        const QString html = m->data(m->index(1), ChatModel::HeatTextRole).toString();
        QVERIFY(html.contains("<span style=\"background-color:rgba("));

        // The next answer is followed again: the panel shows its newest token, not the one clicked.
        QVERIFY(f.answer([&] { return f.chat->send(" The end."); }));
        QTest::qWait(150);
        QVERIFY(f.inspector->following());
        QCOMPARE(f.inspector->row(), 3);
    }

    void branchingEqualsAFreshRunAndKeepsTheOldVersion() {
        Fixture f;
        QVERIFY(loadAndWait(f.engine, bundledModel()));
        QVERIFY(f.answer([&] { return f.chat->send("Once upon a time"); }));
        const ChatMessage original = f.last();
        const int k = 4;
        const int32_t alternative = original.steps[k].sample.top[1].id;
        QSignalSpy prefill(&f.engine, &EngineController::prefillFinished);
        f.inspector->select(1, k);
        QVERIFY(f.answer([&] { return f.inspector->branch(alternative); }));
        const ChatMessage& branched = f.last();
        // The kept tokens, the alternative, then a continuation.
        QCOMPARE(branched.steps.size(), size_t(20 + k + 1));
        for (int s = 0; s < k; ++s) QCOMPARE(branched.steps[size_t(s)].sample.id, original.steps[size_t(s)].sample.id);
        QCOMPARE(branched.steps[size_t(k)].sample.id, alternative);
        QCOMPARE(branched.steps[size_t(k) + 1].step, k + 1);  // numbered after the kept steps
        const auto stats = prefill.last().at(1).value<PrefillStats>();
        QCOMPARE(stats.nComputed, 1);                 // only the alternative ran: no new prefill
        QCOMPARE(stats.nReused, 5 + k);               // prompt + kept tokens came from the cache
        QVERIFY(f.chat->cacheNote().startsWith(QStringLiteral("Branched at token %1").arg(k + 1)));
        QCOMPARE(branched.variants.size(), size_t(2));
        QCOMPARE(branched.stats.value("branchedAt").toInt(), k);

        // A fresh engine run of prompt + the first k tokens + the alternative gives the same continuation.
        EngineOptions opt;
        opt.modelPath = bundledModel().toStdString();
        opt.device = DeviceKind::Cpu;
        auto fresh = Engine::load(opt);
        QVERIFY(fresh);
        GenerateRequest req;
        req.prompt = {1, 403, 407, 261, 378};
        for (int s = 0; s < k; ++s) req.prompt.push_back(original.steps[size_t(s)].sample.id);
        req.prompt.push_back(alternative);
        req.sampler.temperature = 0.0f;
        req.maxTokens = 20;
        auto reference = (*fresh)->generate(req);
        QVERIFY(reference);
        for (size_t s = 0; s < reference->tokens.size(); ++s)
            QCOMPARE(branched.steps[size_t(k) + 1 + s].sample.id, reference->tokens[s]);

        // The previous version stays reachable.
        const QString branchedText = branched.text;
        QVERIFY(f.chat->showVariant(1, 0));
        QCOMPARE(f.last().text, original.text);
        QVERIFY(f.chat->showVariant(1, 1));
        QCOMPARE(f.last().text, branchedText);
        // The store keeps the shown version.
        const auto stored = f.store.messages(f.chat->conversationId());
        QCOMPARE(stored.size(), 2);
        QCOMPARE(stored[1].content, branchedText);
    }

    void regenerateAddsAVersion() {
        Fixture f(1.0f);
        QVERIFY(loadAndWait(f.engine, bundledModel()));
        QVERIFY(f.answer([&] { return f.chat->send("Once upon a time"); }));
        const QString first = f.last().text;
        SamplerParams other;
        other.temperature = 1.0f;
        other.seed = 4242;
        f.chat->setSamplerOverride(other);
        QVERIFY(f.answer([&] { return f.chat->regenerate(); }));
        QCOMPARE(f.chat->messages()->count(), 2);
        QCOMPARE(f.last().variants.size(), size_t(2));
        QCOMPARE(f.last().activeVariant, 1);
        QVERIFY(f.chat->showVariant(1, 0));
        QCOMPARE(f.last().text, first);
    }

    void replayCountsWhatOtherSettingsChange() {
        Fixture f(1.0f);
        QVERIFY(loadAndWait(f.engine, bundledModel()));
        QVERIFY(f.answer([&] { return f.chat->send("Once upon a time"); }));
        f.inspector->select(1, 0);
        QVERIFY(f.inspector->replayAvailable());
        // The answer's own settings and seed: nothing changes.
        f.inspector->resetReplayToAnswer();
        QSignalSpy result(f.inspector.get(), &StepInspector::replayResultChanged);
        QVERIFY(result.wait(2000));
        QCOMPARE(f.inspector->replayError(), QString());
        QCOMPARE(f.inspector->replayChangedCount(), 0);
        QCOMPARE(f.inspector->replayInexactCount(), 0);  // stories260K: all 512 logits are stored
        // Greedy: exactly the steps whose pick was not the most probable change.
        int notTop = 0;
        for (const auto& s : f.last().steps) notTop += s.sample.rank != 1;
        f.inspector->setReplayTemperature(0.0);
        QVERIFY(result.wait(2000));
        QCOMPARE(f.inspector->replayChangedCount(), notTop);
        QCOMPARE(int(f.last().replayChanged.size()), 20);
        QCOMPARE(f.inspector->replayCurrent().value("id").toInt(), f.last().steps[0].sample.top[0].id);
    }

    // The replay box beside a finished answer offers the replay: after a click on a token of a
    // longer conversation, opening a shorter one left the panel on no step ("Available once an
    // answer has finished" beside finished answers). Another conversation: the panel follows it.
    void anotherConversationIsFollowedAndItsAnswerReplayable() {
        Fixture f;
        QVERIFY(loadAndWait(f.engine, bundledModel()));
        QVERIFY(f.answer("Once upon a time"));
        const qint64 shorter = f.chat->conversationId();
        f.chat->newConversation();
        QVERIFY(f.answer("Once upon a time"));
        QVERIFY(f.answer(" The end."));
        f.inspector->select(3, 2);
        QVERIFY(!f.inspector->following());
        QVERIFY(f.chat->openConversation(shorter));
        QCOMPARE(f.chat->messages()->count(), 2);
        QVERIFY(f.inspector->following());
        QCOMPARE(f.inspector->row(), 1);
        QVERIFY(f.inspector->replayAvailable());
        QCOMPARE(f.inspector->replayNote(), QString());
        // Why not, when not: no answer yet.
        f.chat->newConversation();
        QCOMPARE(f.inspector->replayNote(), QStringLiteral("No answer yet: every step's logits are kept, so the sampler can run again on them once one has finished."));
    }

    // Every token of the vocabulary shows as something visible in "picked" and the candidates
    // (a byte-fallback token showed blank).
    void everyTokenHasAVisibleLabel() {
        Fixture f;
        QVERIFY(loadAndWait(f.engine, bundledModel()));
        const int n = f.engine.model()->tokenizer->vocabSize();
        QVERIFY(n > 256);
        QStringList blank;
        for (int id = 0; id < n; ++id) {
            const QString label = f.inspector->tokenText(id);
            bool seen = false;
            for (const QChar c : label) seen = seen || (c.isPrint() && !c.isSpace() && c.category() != QChar::Other_Format);
            if (!seen) blank << QStringLiteral("%1 \"%2\"").arg(id).arg(label);
        }
        QVERIFY2(blank.isEmpty(), qPrintable(blank.join(QStringLiteral(", "))));
    }

    void exportsTheAnswersTokens() {
        Fixture f;
        QVERIFY(loadAndWait(f.engine, bundledModel()));
        QVERIFY(f.answer([&] { return f.chat->send("Once upon a time"); }));
        f.inspector->select(1, 0);
        QTemporaryDir dir;
        const QString json = dir.filePath("tokens.json"), csv = dir.filePath("tokens.csv");
        QVERIFY(f.inspector->exportRecords(QUrl::fromLocalFile(json), "json"));
        QVERIFY(f.inspector->exportRecords(QUrl::fromLocalFile(csv), "csv"));
        QFile jf(json);
        QVERIFY(jf.open(QIODevice::ReadOnly));
        const QJsonArray steps = QJsonDocument::fromJson(jf.readAll()).object().value("steps").toArray();
        QCOMPARE(steps.size(), 20);
        QCOMPARE(steps[0].toObject().value("id").toInt(), 432);
        QCOMPARE(steps[0].toObject().value("piece").toString(), QStringLiteral(","));
        QCOMPARE(steps[0].toObject().value("top").toArray().size(), 20);
        QVERIFY(steps[0].toObject().value("top").toArray()[0].toObject().value("stages").toObject().contains("top-p"));
        QFile cf(csv);
        QVERIFY(cf.open(QIODevice::ReadOnly));
        const QStringList lines = QString::fromUtf8(cf.readAll()).split('\n', Qt::SkipEmptyParts);
        QCOMPARE(lines.size(), 21);
        QVERIFY(lines[0].startsWith("step,position,id,token,p,p_final,logit,rank,entropy_bits"));
        QVERIFY(lines[1].startsWith("0,5,432,\",\","));
    }
};

QTEST_GUILESS_MAIN(TestStepInspector)
#include "tst_step_inspector.moc"
