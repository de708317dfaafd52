// The answer bubble's heat text as a person sees it: HeatDocument in a rich-text TextEdit holds
// the heat map's characters at the plain text's offsets, each token's tint as their background.
// While the answer streams it writes only what changed (the new tokens and the cursor), and after
// any sequence of updates — streaming, the end, another tint mode, the mode "off", the TextEdit
// resetting its own document — the document equals the heat map written whole.
#include <QQmlComponent>
#include <QQmlContext>
#include <QQmlEngine>
#include <QQuickItem>
#include <QSignalSpy>
#include <QTest>
#include <QTextBlock>
#include <QTextCursor>
#include <QTextDocument>
#include <QtQml/qqmlextensionplugin.h>

#include "chat/chat_model.h"
#include "chat/heat_document.h"
#include "gui_test_helpers.h"
#include "manual_pacer_clock.h"

#include "app/qml_modules.h"  // Q_IMPORT_QML_PLUGIN of each module

using namespace inferscope;
using testing_gui::ManualPacerClock;

namespace {

StepRecord step(int k, const char* piece, float p) {
    StepRecord r;
    r.step = k;
    r.piece = piece;
    r.sample.pRaw = p;
    r.sample.entropyBits = 1.0f;
    return r;
}

// A document's characters and each one's background, as one comparable string: "a[#rrggbbaa]".
QString contents(const QTextDocument& doc) {
    QString out;
    for (QTextBlock b = doc.firstBlock(); b.isValid(); b = b.next()) {
        if (b != doc.firstBlock()) out += QStringLiteral("¶");
        for (auto it = b.begin(); !it.atEnd(); ++it) {
            const QTextFragment f = it.fragment();
            const QTextCharFormat format = f.charFormat();
            const QString tint = format.hasProperty(QTextFormat::BackgroundBrush) ? format.background().color().name(QColor::HexArgb) : QString();
            for (QChar c : f.text()) out += tint.isEmpty() ? QString(c) : QStringLiteral("%1[%2]").arg(c).arg(tint);
        }
    }
    return out;
}

QString written(const QList<HeatSpan>& spans) {
    QTextDocument doc;
    QTextCursor cursor(&doc);
    HeatDocument::write(cursor, spans);
    return contents(doc);
}

}  // namespace

class TestHeatDocument : public QObject {
    Q_OBJECT

    struct Bubble {
        QQmlEngine engine;
        std::unique_ptr<QQuickItem> edit;
        HeatDocument* heat = nullptr;
        QTextDocument* doc = nullptr;
        bool make() {
            QQmlComponent c(&engine);
            c.setData("import QtQuick\nimport Inferscope.Chat\n"
                      "TextEdit { width: 300; textFormat: TextEdit.RichText; wrapMode: TextEdit.Wrap\n"
                      "  property HeatDocument heat: HeatDocument { document: textDocument } }",
                      QUrl());
            edit.reset(qobject_cast<QQuickItem*>(c.create()));
            if (!edit) qWarning() << c.errors();
            if (!edit) return false;
            heat = edit->property("heat").value<HeatDocument*>();
            doc = edit->property("textDocument").value<QQuickTextDocument*>()->textDocument();
            return heat && doc;
        }
    };

private slots:
    void initTestCase() { testing_gui::useTestLocations(); }

    void streamsByWritingOnlyTheNewTokensAndEndsAsAWholeWrite() {
        ManualPacerClock clock;
        ChatModel model;
        model.setPacerClock(clock);
        ChatMessage question;
        question.role = Message::User;
        question.text = QStringLiteral("Hi");
        model.append(question);
        ChatMessage answer;
        answer.role = Message::Assistant;
        answer.streaming = true;
        const int row = model.append(answer);
        Bubble bubble;
        QVERIFY(bubble.make());
        HeatDocument& heat = *bubble.heat;
        heat.setModel(&model);
        heat.setRow(row);
        heat.setStreaming(true);
        const QModelIndex index = model.index(row);
        auto follow = [&] { heat.setRevision(model.data(index, ChatModel::HeatRevisionRole).toInt()); };
        follow();
        QCOMPARE(heat.revision(), 0);  // no steps yet: no heat map
        QCOMPARE(bubble.doc->characterCount() - 1, 0);

        const QList<std::vector<StepRecord>> batches = {
            {step(0, " Once", 0.9f), step(1, " upon", 0.3f)},
            {step(2, " a\n", 0.05f), step(3, "time", 0.6f)},
            {step(4, ",", 1.0f), step(5, " \xF0\x9F", 0.5f)},  // half an emoji: shown as U+FFFD for now
            {step(6, "\xA6\x99", 0.5f), step(7, " the\r\nend", 0.2f)},
        };
        QSignalSpy changes(bubble.doc, &QTextDocument::contentsChange);
        int before = 0;  // the characters the document held before the batch, the cursor excluded
        for (const auto& batch : batches) {
            clock.advance(ChatModel::kStreamingHeatMs);  // the model rebuilds its heat map at most this often
            changes.clear();
            model.appendSteps(row, batch);
            follow();
            const HeatText* h = model.heatText(row);
            QVERIFY(h);
            QList<HeatSpan> withCursor = h->spans;
            withCursor.append({QStringLiteral(" \u258D"), {}});
            QCOMPARE(contents(*bubble.doc), written(withCursor));
            // Only the end changed: what was there before the last token's span stayed.
            QVERIFY(!changes.isEmpty());
            for (const auto& c : changes) QVERIFY2(c[0].toInt() >= before - 2, qPrintable(QStringLiteral("a change at %1 of %2").arg(c[0].toInt()).arg(before)));
            before = int(h->plain.size());
        }
        QCOMPARE(model.heatText(row)->plain, QString::fromUtf8(" Once upon a\ntime, \xF0\x9F\xA6\x99 the\r\nend"));
        // The characters at the plain text's offsets ("\r\n" is two of them), which hovering relies on.
        QCOMPARE(bubble.doc->characterCount() - 1, model.heatText(row)->plain.size() + 2);

        // The end: no cursor.
        model.finish(row, model.at(row).text, Message::EndOfGeneration, {});
        heat.setStreaming(false);
        follow();
        QCOMPARE(contents(*bubble.doc), written(model.heatText(row)->spans));
        // Another tint: every span again; "off": nothing.
        model.setHeatMode(QStringLiteral("surprisal"));
        follow();
        QCOMPARE(contents(*bubble.doc), written(model.heatText(row)->spans));
        QVERIFY(contents(*bubble.doc).contains(QLatin1Char('[')));
        model.setHeatMode(QStringLiteral("off"));
        follow();
        QCOMPARE(heat.revision(), 0);
        QCOMPARE(contents(*bubble.doc), QString());
        model.setHeatMode(QStringLiteral("probability"));
        follow();
        QCOMPARE(contents(*bubble.doc), written(model.heatText(row)->spans));

        // The TextEdit (or anything else) replacing the document's text: written again at once
        // after, not appended to what is no longer there.
        bubble.doc->setPlainText(QStringLiteral("something else"));
        QCOMPARE(contents(*bubble.doc), written(model.heatText(row)->spans));
    }

    // While an answer streams its heat map is rebuilt with a batch at most every kStreamingHeatMs
    // (the text itself with every batch), never between two batches; its end, at once.
    void whileStreamingTheHeatMapIsRebuiltAtMostEveryInterval() {
        ManualPacerClock clock;
        ChatModel model;
        model.setPacerClock(clock);
        ChatMessage answer;
        answer.role = Message::Assistant;
        answer.streaming = true;
        const int row = model.append(answer);
        auto revision = [&] { return model.data(model.index(row), ChatModel::HeatRevisionRole).toInt(); };
        model.appendSteps(row, {step(0, "Once", 0.9f)});
        const int first = revision();
        QVERIFY(first > 0);
        clock.advance(ChatModel::kStreamingHeatMs - 1);
        model.appendSteps(row, {step(1, " upon", 0.3f)});
        QCOMPARE(model.at(row).text, QStringLiteral("Once upon"));
        QCOMPARE(revision(), first);  // the same heat map: one token behind the text
        clock.advance(1000);
        QCOMPARE(revision(), first);  // nothing rebuilds it between batches
        model.appendSteps(row, {step(2, " a", 0.05f)});
        const int second = revision();
        QVERIFY(second > first);
        QCOMPARE(model.heatText(row)->plain, QStringLiteral("Once upon a"));
        clock.advance(ChatModel::kStreamingHeatMs);  // exactly the interval since that rebuild
        model.appendSteps(row, {step(3, " time", 0.6f)});
        QVERIFY(revision() > second);
        const int third = revision();
        model.appendSteps(row, {step(4, ".", 0.6f)});
        QCOMPARE(revision(), third);
        model.finish(row, QStringLiteral("Once upon a time."), Message::EndOfGeneration, {});
        QVERIFY(revision() > third);
        QCOMPARE(model.heatText(row)->plain, QStringLiteral("Once upon a time."));
    }

    // A bubble made for an answer already finished (a fast model's, a conversation opened): the
    // TextEdit, completed after the HeatDocument inside it, empties its document; the heat text
    // is there as soon as the bubble exists, not a turn of the event loop later.
    void aBubbleMadeAfterTheAnswerShowsItAtOnce() {
        ChatModel model;
        ChatMessage answer;
        answer.role = Message::Assistant;
        const int row = model.append(answer);
        model.appendSteps(row, {step(0, "Hello", 0.5f), step(1, " there", 0.9f)});
        model.finish(row, QStringLiteral("Hello there"), Message::EndOfGeneration, {});
        QQmlEngine engine;
        engine.rootContext()->setContextProperty(QStringLiteral("theModel"), &model);
        engine.rootContext()->setContextProperty(QStringLiteral("theRevision"), model.data(model.index(row), ChatModel::HeatRevisionRole).toInt());
        QQmlComponent c(&engine);
        c.setData("import QtQuick\nimport Inferscope.Chat\n"
                  "TextEdit { width: 300; textFormat: TextEdit.RichText\n"
                  "  property HeatDocument heat: HeatDocument { document: textDocument; model: theModel; row: 0; revision: theRevision } }",
                  QUrl());
        std::unique_ptr<QQuickItem> edit(qobject_cast<QQuickItem*>(c.create()));
        QVERIFY2(edit, qPrintable(c.errorString()));
        QTextDocument* doc = edit->property("textDocument").value<QQuickTextDocument*>()->textDocument();
        QCOMPARE(contents(*doc), written(model.heatText(row)->spans));  // no event handled since create()
        QCOMPARE(doc->toPlainText(), QStringLiteral("Hello there"));
    }

    // Where a position of the text falls, for the tooltip, a click and the outline: a character
    // made of two tokens' bytes belongs to the token that completed it.
    void positionsMapToTheirSteps() {
        ChatModel model;
        ChatMessage answer;
        answer.role = Message::Assistant;
        const int row = model.append(answer);
        model.appendSteps(row, {step(0, "a", 0.5f), step(1, "\xF0\x9F", 0.5f), step(2, "\xA6\x99", 0.5f), step(3, "bc", 0.5f)});
        model.finish(row, QString::fromUtf8("a\xF0\x9F\xA6\x99" "bc"), Message::EndOfGeneration, {});
        Bubble bubble;
        QVERIFY(bubble.make());
        bubble.heat->setModel(&model);
        bubble.heat->setRow(row);
        bubble.heat->setRevision(model.data(model.index(row), ChatModel::HeatRevisionRole).toInt());
        QCOMPARE(model.heatText(row)->tokenStarts, (QList<int>{0, 1, 1, 3}));
        const HeatDocument& h = *bubble.heat;
        QCOMPARE(h.stepAt(-1), -1);
        QCOMPARE(h.stepAt(0), 0);
        QCOMPARE(h.stepAt(1), 2);  // the emoji's first half: its completing token
        QCOMPARE(h.stepAt(2), 2);
        QCOMPARE(h.stepAt(4), 3);
        QCOMPARE(h.stepStart(1), 1);
        QCOMPARE(h.stepEnd(1), 3);  // outlined with the character it is part of
        QCOMPARE(h.stepEnd(2), 3);
        QCOMPARE(h.stepEnd(3), 5);
        QCOMPARE(h.stepStart(4), -1);
        QCOMPARE(h.stepEnd(-1), -1);
    }
};

QTEST_MAIN(TestHeatDocument)
#include "tst_heat_document.moc"
