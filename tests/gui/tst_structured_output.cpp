// Settings → Structured output: the grammar compiled as it is typed (errors said in place), and the
// answers it constrains — exact text, the sampler's grammar stage on every step, refusals that keep
// the conversation as it was.
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTest>

#include "chat/structured_output.h"
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
