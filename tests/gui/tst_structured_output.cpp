// Settings → Structured output: the grammar compiled as it is typed (errors said in place), and the
// answers it constrains — exact text, the sampler's grammar stage on every step, refusals that keep
// the conversation as it was.
#include <QJsonDocument>
#include <cmath>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTest>

#include "chat/chat_model.h"
#include "chat/structured_output.h"
#include "chat/token_heatmap.h"
#include "chat_fixture.h"
#include "gui_test_helpers.h"

using namespace inferscope;
using namespace inferscope::testing_gui;

class TestStructuredOutput : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { useTestLocations(); }

    void compiledAsTyped() {
        StructuredOutput s(nullptr);
        QVERIFY(!s.grammar());
        s.setKind(StructuredOutput::Kind::Gbnf);
        QCOMPARE(s.text(), StructuredOutput::example(StructuredOutput::Kind::Gbnf));  // an example to start from
        QCOMPARE(s.error(), QString());
        QVERIFY(s.grammar());
        s.setText("root ::= answer");  // a rule that is not defined
        QVERIFY(!s.grammar());
        QVERIFY2(s.error().contains("answer"), qPrintable(s.error()));
        s.setKind(StructuredOutput::Kind::JsonSchema);
        QCOMPARE(s.text(), QStringLiteral("root ::= answer"));  // the text is kept: not a schema
        QVERIFY(!s.error().isEmpty());
        s.setText(StructuredOutput::example(StructuredOutput::Kind::JsonSchema));
        QCOMPARE(s.error(), QString());
        QVERIFY(s.grammar());
        s.setKind(StructuredOutput::Kind::Off);
        QVERIFY(!s.grammar());
        QCOMPARE(s.error(), QString());
    }

    // "yes." or "no." and nothing else; every step's grammar stage removed what the grammar forbids.
    void aGrammarDecidesTheAnswer() {
        ChatFixture f(16);
        QVERIFY(loadAndWait(*f.engine, bundledModel()));
        f.structured->setKind(StructuredOutput::Kind::Gbnf);
        f.structured->setText("root ::= answer \".\"\nanswer ::= \"yes\" | \"no\"");
        QVERIFY(f.answer("Once upon a time"));
        const ChatMessage& a = f.last();
        QVERIFY2(a.text == "yes." || a.text == "no.", qPrintable(a.text));
        QCOMPARE(a.finishReason, Message::EndOfGeneration);
        QVERIFY(!a.steps.empty());
        for (const StepRecord& s : a.steps) {
            QVERIFY(s.sample.constrained);
            for (const CandidateRecord& c : s.sample.top)
                if (c.id == s.sample.id) QVERIFY(c.p[size_t(SamplerStage::Grammar)] > 0);
        }
        // The story model wants a story: its first choice is not "yes" or "no", and the mask took
        // that mass away.
        const SampleRecord& first = a.steps.front().sample;
        QVERIFY(first.grammarMassRemoved > 0.5f);
        QCOMPARE(first.top.front().p[size_t(SamplerStage::Grammar)], 0.0f);
        // Its rank is among every token, not among those the grammar left: the favourite was removed.
        QVERIFY(first.top.front().id != first.id);
        int above = 0;
        for (const CandidateRecord& c : first.top) above += c.logit > first.logit ? 1 : 0;
        QVERIFY2(first.rank > above, qPrintable(QString::number(first.rank)));
        // Tinted by the fight meter: the first token, whose favourite the grammar removed, as red as
        // the model did not want it; a token of an unconstrained answer not at all.
        const HeatText fight = buildHeatText(a.steps, HeatMode::Fight, false, false, {}, 0, {});
        QVERIFY(first.pBeforeGrammar < 0.5f);
        QVERIFY(fight.spans.front().tint.isValid());
        QVERIFY(std::abs(fight.spans.front().tint.alphaF() - (0.25 + 0.75 * (1.0 - double(first.pBeforeGrammar)))) < 1e-4);  // 16-bit alpha
        f.structured->setKind(StructuredOutput::Kind::Off);
        QVERIFY(f.answer("Once upon a time"));
        for (const HeatSpan& span : buildHeatText(f.last().steps, HeatMode::Fight, false, false, {}, 0, {}).spans) QVERIFY(!span.tint.isValid());
    }

    // A JSON schema: the answer is an object with the one boolean it requires, complete.
    void jsonSchema() {
        ChatFixture f(64);
        QVERIFY(loadAndWait(*f.engine, bundledModel()));
        f.structured->setKind(StructuredOutput::Kind::JsonSchema);
        f.structured->setText(R"({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": false})");
        QCOMPARE(f.structured->error(), QString());
        QVERIFY(f.answer("Once upon a time"));
        const ChatMessage& a = f.last();
        QCOMPARE(a.finishReason, Message::EndOfGeneration);
        QJsonParseError error;
        const QJsonDocument doc = QJsonDocument::fromJson(a.text.toUtf8(), &error);
        QVERIFY2(error.error == QJsonParseError::NoError && doc.isObject(), qPrintable(a.text));
        QCOMPARE(doc.object().keys(), QStringList{"ok"});
        QVERIFY(doc.object()["ok"].isBool());

        // Under the answer: what it was asked to be, checked, and the JSON formatted on demand;
        // the same after the setting changed and the conversation was opened again.
        auto verdictOf = [&](int row) { return f.chat->messages()->index(row).data(ChatModel::StructuredRole).toMap(); };
        const QString formatted = QStringLiteral("{\n  \"ok\": %1\n}").arg(doc.object()["ok"].toBool() ? "true" : "false");
        QVariantMap v = verdictOf(1);
        QCOMPARE(v["kind"].toString(), QStringLiteral("json_schema"));
        QCOMPARE(v["verdict"].toString(), QStringLiteral("valid"));
        QCOMPARE(v["summary"].toString(), QStringLiteral("✓ Valid JSON matching the schema it was asked to follow"));
        QCOMPARE(v["formatted"].toString(), formatted);
        QVERIFY(verdictOf(0).isEmpty());  // the question was asked nothing
        const qint64 id = f.chat->conversationId();
        f.structured->setKind(StructuredOutput::Kind::Off);
        f.chat->newConversation();
        QVERIFY(f.chat->openConversation(id));
        QCOMPARE(verdictOf(1), v);
        QCOMPARE(f.chat->messages()->at(1).origin.structured.kind, StructuredKind::JsonSchema);
    }

    // Cut off by max tokens: every token kept to the schema, but the JSON is not finished, and the
    // answer says so.
    void aCutOffAnswerIsIncomplete() {
        ChatFixture f(3);
        QVERIFY(loadAndWait(*f.engine, bundledModel()));
        f.structured->setKind(StructuredOutput::Kind::JsonSchema);  // the example: a name and an age
        QCOMPARE(f.structured->error(), QString());
        QVERIFY(f.answer("Once upon a time"));
        QCOMPARE(f.last().finishReason, Message::MaxTokens);
        const QVariantMap v = f.chat->messages()->index(1).data(ChatModel::StructuredRole).toMap();
        QCOMPARE(v["verdict"].toString(), QStringLiteral("incomplete"));
        QCOMPARE(v["summary"].toString(), QStringLiteral("✗ Incomplete: the answer ends before the JSON schema does"));
        QVERIFY(!v.contains("formatted"));
    }

    // Branching an answer held to a schema: a token the schema forbids is refused with the reason
    // and changes nothing; one it allows continues under the answer's own schema from after the
    // kept text (not from its start), whatever the setting says now, and the result is valid.
    void aBranchKeepsItsAnswersConstraint() {
        ChatFixture f(64);
        QVERIFY(loadAndWait(*f.engine, bundledModel()));
        f.structured->setKind(StructuredOutput::Kind::JsonSchema);
        f.structured->setText(R"({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": false})");
        QVERIFY(f.answer("Once upon a time"));
        const ChatMessage before = f.last();
        // A step where the grammar left the pick an alternative and removed another candidate.
        int step = -1, allowed = -1, forbidden = -1;
        for (int k = 0; k < int(before.steps.size()) && step < 0; ++k) {
            int a = -1, b = -1;
            for (const CandidateRecord& c : before.steps[size_t(k)].sample.top) {
                if (c.id == before.steps[size_t(k)].sample.id) continue;
                if (c.p[size_t(SamplerStage::Grammar)] > 0 && a < 0) a = c.id;
                if (c.p[size_t(SamplerStage::Grammar)] == 0 && b < 0 && !f.engine->model()->tokenizer->tokenBytes(c.id).empty()) b = c.id;
            }
            if (a >= 0 && b >= 0) std::tie(step, allowed, forbidden) = std::tuple(k, a, b);
        }
        QVERIFY2(step >= 0, qPrintable(before.text));
        f.structured->setKind(StructuredOutput::Kind::Off);  // the setting no longer asks anything

        QVERIFY(!f.chat->branchFrom(1, step, forbidden));
        const QString token = QString::fromStdString(f.engine->model()->tokenizer->tokenBytes(forbidden));
        QCOMPARE(f.chat->lastError(), QStringLiteral("The JSON schema this answer was held to does not allow “\u2068%1\u2069” here: branch to a token it "
                                                     "allows (the Probabilities panel's grammar column shows them).").arg(token));
        QCOMPARE(f.last().text, before.text);
        QCOMPARE(f.last().variants.size(), before.variants.size());

        QVERIFY(f.answer([&] { return f.chat->branchFrom(1, step, allowed); }));
        const ChatMessage& after = f.last();
        QCOMPARE(after.finishReason, Message::EndOfGeneration);
        QCOMPARE(after.steps[size_t(step)].sample.id, allowed);
        QCOMPARE(after.origin.structured.kind, StructuredKind::JsonSchema);
        const QJsonDocument doc = QJsonDocument::fromJson(after.text.toUtf8());
        QVERIFY2(doc.isObject() && doc.object().keys() == QStringList{"ok"}, qPrintable(after.text));
        QCOMPARE(f.chat->messages()->index(1).data(ChatModel::StructuredRole).toMap()["verdict"].toString(), QStringLiteral("valid"));
    }

    // A grammar that does not compile: Send refuses with the parser's words and keeps nothing.
    void aBrokenGrammarRefusesToSend() {
        ChatFixture f(8);
        QVERIFY(loadAndWait(*f.engine, bundledModel()));
        f.structured->setKind(StructuredOutput::Kind::Gbnf);
        f.structured->setText("root ::= nothing");
        QVERIFY(!f.chat->send("Once upon a time"));
        QCOMPARE(f.chat->messages()->count(), 0);  // the question was not kept
        QCOMPARE(f.chat->lastError(), QStringLiteral("Structured output: %1 (Settings → Structured output)").arg(f.structured->error()));
        f.structured->setKind(StructuredOutput::Kind::Off);
        QVERIFY(f.answer("Once upon a time"));
    }
};

QTEST_GUILESS_MAIN(TestStructuredOutput)
#include "tst_structured_output.moc"
