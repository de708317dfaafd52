// Bad input in the GUI, with the real bundled model, a database on disk and the window offscreen:
//   - hostile sampling settings are refused in the engine's own words, and nothing is sent;
//   - a 10 MB paste: refused before the composer lays it out and before it is tokenized, with a
//     clear message (the bound's, from the byte count); a 10 MB message already stored is shown
//     in part (its first ChatModel::kShownChars characters); a message that fits the bound but not the context is tokenized on
//     the worker and refused by the engine;
//   - right-to-left text, emoji, NUL and other control characters, combining marks and lone
//     surrogates in a prompt, and invalid UTF-8 and NUL bytes in an answer: stored, searched,
//     exported, reopened and shown as they are.
#include <QClipboard>
#include <QGuiApplication>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "app_stack.h"
#include "record/step_record_codec.h"
#include "gui_test_helpers.h"

#include "app/qml_modules.h"  // Q_IMPORT_QML_PLUGIN of each module

using namespace inferscope;
using namespace inferscope::testing_app;
using namespace inferscope::testing_gui;

namespace {

QString tenMegabytes() {
    const QString line = QStringLiteral("Once upon a time there was a little girl named Lily. She liked to play outside. ");
    QString s;
    s.reserve(10'000'000 + line.size());
    while (s.size() < 10'000'000) s += line;
    return s;
}

// The message bubble of a row, as the window shows it.
QQuickItem* bubbleText(const AppStack& app, int row) {
    auto* list = app.find<QQuickItem>(QStringLiteral("messageList"));
    if (!list) return nullptr;
    QQuickItem* delegate = nullptr;
    QMetaObject::invokeMethod(list, "positionViewAtIndex", Q_ARG(int, row), Q_ARG(int, 0));
    QMetaObject::invokeMethod(list, "itemAtIndex", Q_RETURN_ARG(QQuickItem*, delegate), Q_ARG(int, row));
    return delegate ? delegate->findChild<QQuickItem*>(QStringLiteral("messageText")) : nullptr;
}

int byteToken(const Tokenizer& tokenizer, uint8_t byte) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", byte);
    for (int32_t id = 0; id < tokenizer.vocabSize(); ++id)
        if (tokenizer.piece(id) == name) return id;
    return -1;
}

}  // namespace

class TestChatInput : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    QString db() const { return dir_.filePath(QStringLiteral("conversations.db")); }

    bool answer(AppStack& app, const std::function<bool()>& start) {
        QSignalSpy done(app.chat.get(), &ChatController::answerFinished);
        return start() && done.wait(20000);
    }
    static void greedy(AppStack& app, int maxTokens = 8) {
        SamplerParams p;
        p.temperature = 0.0f;
        app.chat->setSamplerOverride(p);
        app.chat->setMaxTokensOverride(maxTokens);
    }

private slots:
    void initTestCase() {
        useTestLocations();
        QVERIFY(dir_.isValid());
    }
    void init() { removeFilesIn(dir_.path()); }

    void hostileSettingsAreRefusedInTheEnginesWords_data() {
        QTest::addColumn<QString>("field");
        QTest::addColumn<double>("value");
        QTest::addColumn<QString>("message");
        QTest::newRow("negative temperature") << "temperature" << -1.0 << "temperature must be >= 0, got -1";
        QTest::newRow("NaN temperature") << "temperature" << qQNaN() << "temperature must be >= 0, got nan";
        QTest::newRow("infinite temperature") << "temperature" << 1e300 << "temperature must be finite, got inf";
        QTest::newRow("top-p 2") << "topP" << 2.0 << "top-p must be in (0, 1], got 2";
        QTest::newRow("top-p 0") << "topP" << 0.0 << "top-p must be in (0, 1], got 0";
        QTest::newRow("min-p -0.5") << "minP" << -0.5 << "min-p must be in [0, 1], got -0.5";
        QTest::newRow("repeat penalty 0") << "repeatPenalty" << 0.0 << "repeat-penalty must be > 0, got 0";
        QTest::newRow("max tokens 0") << "maxTokens" << 0.0 << "max tokens must be at least 1, got 0";
        QTest::newRow("max tokens -5") << "maxTokens" << -5.0 << "max tokens must be at least 1, got -5";
        QTest::newRow("threads 2000") << "threads" << 2000.0 << "threads must be between 1 and 1024 (0 = all cores), got 2000";
        QTest::newRow("seed -7") << "seed" << -7.0 << "seed must be -1 (random) or a number >= 0, got -7";
        QTest::newRow("top-n 10000") << "topN" << 10000.0 << "top-n must be in [0, 4096], got 10000";
    }
    void hostileSettingsAreRefusedInTheEnginesWords() {
        QFETCH(QString, field);
        QFETCH(double, value);
        QFETCH(QString, message);
        AppStack app(QStringLiteral(":memory:"));
        QVERIFY(loadAndWait(*app.engine, bundledModel()));
        app.sampling->resetDefaults();
        QVERIFY(app.chat->canSend());
        // As the settings panel sets it: a QML property write.
        QVERIFY(app.sampling->setProperty(field.toLatin1(), value));
        QCOMPARE(app.sampling->validationError(), message);
        QVERIFY(!app.chat->canSend());
        QVERIFY(!app.chat->send(QStringLiteral("Once upon a time")));
        QCOMPARE(app.chat->messages()->count(), 0);
        app.sampling->resetDefaults();
        QVERIFY(app.chat->canSend());
    }

    // The settings' words are the engine's: what it answers when asked anyway.
    void theEngineSaysTheSame() {
        EngineController engine(nullptr);
        QVERIFY(loadAndWait(engine, bundledModel()));
        QSignalSpy failed(&engine, &EngineController::generationFailed);
        auto job = textJob("Once", 0);
        QVERIFY(engine.startGeneration(job) != 0);
        QVERIFY(failed.wait(5000));
        QCOMPARE(failed.last().at(1).toString(), QStringLiteral("max tokens must be at least 1, got 0"));
        job = textJob("Once", 4, -1.0f);
        QVERIFY(engine.startGeneration(job) != 0);
        QVERIFY(failed.wait(5000));
        QCOMPARE(failed.last().at(1).toString(), QStringLiteral("temperature must be >= 0, got -1"));
        job = textJob("Once", 4);
        job.sampler.topP = 2.0f;
        QVERIFY(engine.startGeneration(job) != 0);
        QVERIFY(failed.wait(5000));
        QCOMPARE(failed.last().at(1).toString(), QStringLiteral("top-p must be in (0, 1], got 2"));
    }

    void aTenMegabytePasteIsRefusedWithoutFreezing() {
        AppStack app(db());
        QVERIFY(app.showWindow());
        QVERIFY(QTest::qWaitForWindowExposed(app.window()));
        QVERIFY(loadAndWait(*app.engine, bundledModel()));
        const QString huge = tenMegabytes();
        const QString expected = QStringLiteral("it needs at least 1111112 tokens and the context holds 2048. Shorten it, or load the "
                                                "model with a larger context.");
        // Ctrl+V in the composer: refused before the field lays it out.
        auto* input = app.find<QQuickItem>(QStringLiteral("composerInput"));
        QVERIFY(input);
        input->forceActiveFocus();
        QGuiApplication::clipboard()->setText(huge);
        // The freeze this guards against is laying out or tokenizing the 10 MB (8-15 s): the
        // composer stays empty and the message is the bound's ("at least", from the byte count),
        // so neither happened.
        QTest::keySequence(app.window(), QKeySequence::Paste);
        QCOMPARE(input->property("text").toString(), QString());
        QCOMPARE(app.chat->lastError(), QStringLiteral("Not pasted, the text is too long: ") + expected);
        QTRY_COMPARE(app.find<QQuickItem>(QStringLiteral("errorText"))->property("text").toString(), app.chat->lastError());
        // A short paste goes in, alone: nothing of the refused one arrived after all.
        QGuiApplication::clipboard()->setText(QStringLiteral("Once upon"));
        QTest::keySequence(app.window(), QKeySequence::Paste);
        QCOMPARE(input->property("text").toString(), QStringLiteral("Once upon"));

        // Sent anyway (typed, dropped...): refused before it joins the conversation or is tokenized.
        QVERIFY(!app.chat->send(huge));
        QCOMPARE(app.chat->lastError(), QStringLiteral("The message is too long: ") + expected);
        QCOMPARE(app.chat->messages()->count(), 0);
        QVERIFY(app.store.conversations().isEmpty());
        QVERIFY(app.chat->canSend());
    }

    // The same bound for byte-level BPE, which has no <0xNN> tokens: Llama 3's 256 byte-alphabet
    // tokens cover every byte and its longest token stands for 128 bytes (128 spaces, id 58040; its
    // piece is 256 bytes of "Ġ"), so 10,000,000 bytes need at least 78125 tokens. The bound was
    // off for BPE (no bound: the 10 MB went to the worker and took ~8 s to tokenize before the
    // engine refused it).
    void aTenMegabytePasteIsRefusedForABytePairVocabulary() {
        const QString llama3 = QStringLiteral(INFERSCOPE_SHARED_DIR "/models/arch/llama3-tiny.gguf");
        if (!QFile::exists(llama3)) QSKIP("../shared/models/arch/llama3-tiny.gguf not found");
        AppStack app(db());
        QVERIFY(loadAndWait(*app.engine, llama3));
        QCOMPARE(app.engine->model()->maxTokenBytes, 128);
        // The bound is a true lower bound at its tightest: 128 spaces are one token.
        const std::string spaces(128, ' ');
        QCOMPARE(app.engine->model()->tokenizer->encode(spaces, false, false), (std::vector<int32_t>{58040}));
        QCOMPARE(minTokensFor(int64_t(spaces.size()), app.engine->model()->maxTokenBytes), 1);
        const QString expected = QStringLiteral("it needs at least 78125 tokens and the context holds 2048. Shorten it, or load the "
                                                "model with a larger context.");
        const QString huge = tenMegabytes();
        QCOMPARE(app.chat->tooLongError(huge), QStringLiteral("The message is too long: ") + expected);
        QVERIFY(!app.chat->send(huge));
        QCOMPARE(app.chat->lastError(), QStringLiteral("The message is too long: ") + expected);
        QCOMPARE(app.chat->messages()->count(), 0);
        QVERIFY(app.chat->canSend());
        // The engine's worker refuses it by the same bound, before tokenizing (tokenized, the
        // message would give the exact count instead of "at least").
        QSignalSpy failed(app.engine.get(), &EngineController::generationFailed);
        QVERIFY(app.engine->startGeneration(textJob(huge.toStdString(), 4)) != 0);
        QVERIFY(failed.wait(30000));
        QCOMPARE(failed.last().at(1).toString(),
                 QStringLiteral("the prompt is at least 78125 tokens but the context holds 2048; shorten it or load with a larger context"));
    }

    // A 10 MB message in the database (a model with a huge context, an older version): opening
    // the conversation shows its first 20,000 characters at once, and says so.
    void aStoredTenMegabyteMessageIsShownInPart() {
        const QString huge = tenMegabytes();
        qint64 id = 0;
        {
            ChatStore store;
            QVERIFY(store.open(db()).persistent);
            StoredConversation c;
            c.title = QStringLiteral("Huge");
            c.mode = QStringLiteral("completion");
            id = *store.createConversation(c);
            StoredMessage user;
            user.conversationId = id;
            user.role = QStringLiteral("user");
            user.content = huge;
            QVERIFY(store.appendMessage(user));
        }
        AppStack app(db());
        QVERIFY(app.showWindow());
        QVERIFY(QTest::qWaitForWindowExposed(app.window()));
        QVERIFY(app.chat->openConversation(id));
        QCOMPARE(app.chat->messages()->at(0).text, huge);  // kept whole
        // Laid out whole, the bubble took about 7 s: it is given the first kShownChars alone.
        QQuickItem* text = nullptr;
        QTRY_VERIFY((text = bubbleText(app, 0)));
        QCOMPARE(text->property("text").toString(), huge.left(ChatModel::kShownChars));
        QVERIFY(text->parentItem()->parentItem()->findChild<QQuickItem*>(QStringLiteral("hiddenNote"))->isVisible());
        QVERIFY(!text->parentItem()->parentItem()->findChild<QQuickItem*>(QStringLiteral("editButton"))->isEnabled());
    }

    // Within the bound by its length, beyond the context once tokenized (on the worker): the
    // engine's refusal, the question kept for editing.
    void aMessageLongerThanTheContextIsRefusedByTheEngine() {
        AppStack app(db());
        QVERIFY(loadAndWait(*app.engine, bundledModel()));
        greedy(app);
        QString text;
        while (text.size() < 12000) text += QStringLiteral("Lily and Tom played in the park with a red ball. ");
        QVERIFY(app.chat->tooLongError(text).isEmpty());
        QSignalSpy failed(app.engine.get(), &EngineController::generationFailed);
        QVERIFY(app.chat->send(text));
        QVERIFY(failed.wait(10000));
        QVERIFY2(app.chat->lastError().startsWith(QStringLiteral("the prompt is ")) &&
                     app.chat->lastError().endsWith(QStringLiteral(" tokens but the context holds 2048; shorten it or load with a larger context")),
                 qPrintable(app.chat->lastError()));
        QCOMPARE(app.chat->messages()->count(), 1);
        QCOMPARE(app.chat->messages()->at(0).text, text);
        QVERIFY(app.chat->canSend());
        QVERIFY(answer(app, [&] { return app.chat->editAndResend(0, QStringLiteral("Once upon a time")); }));
        QCOMPARE(app.chat->messages()->count(), 2);
        QCOMPARE(app.store.messages(app.chat->conversationId()).size(), 2);
        QCOMPARE(app.store.messages(app.chat->conversationId())[0].content, QStringLiteral("Once upon a time"));
    }

    void unusualTextRoundTrips_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("stored");  // what is kept (and shown), when it differs from text
        QTest::addColumn<QString>("word");    // found by search
        QTest::addColumn<bool>("rightToLeft");
        QTest::newRow("Arabic") << QStringLiteral("مرحبا بالعالم، كيف حالك؟") << QString() << QStringLiteral("بالعالم") << true;
        QTest::newRow("Hebrew") << QStringLiteral("שלום עולם") << QString() << QStringLiteral("עולם") << true;
        QTest::newRow("mixed directions") << QStringLiteral("The word שלום means peace") << QString() << QStringLiteral("peace") << false;
        QTest::newRow("emoji") << QStringLiteral("👋🏽 hello 👩‍👩‍👧 family 🇫🇷 flag") << QString() << QStringLiteral("family") << false;
        QTest::newRow("NUL and controls") << QStringLiteral("before") + QChar(0) + QStringLiteral("after \x01\x1f bell\x07 tab\tend")
                                          << QString() << QStringLiteral("after") << false;
        QTest::newRow("combining marks") << QStringLiteral("cafe\u0301 na\u0308ive") << QString() << QStringLiteral("cafe") << false;
        // Not UTF-16 at all (a JavaScript string can hold it): kept as U+FFFD, as sent to the model.
        QTest::newRow("lone surrogates") << QStringLiteral("lone ") + QChar(0xD83D) + QStringLiteral(" high ") + QChar(0xDE00) + QStringLiteral(" low")
                                         << QStringLiteral("lone \uFFFD high \uFFFD low") << QStringLiteral("high") << false;
    }
    void unusualTextRoundTrips() {
        QFETCH(QString, text);
        QFETCH(QString, stored);
        QFETCH(QString, word);
        QFETCH(bool, rightToLeft);
        if (stored.isNull()) stored = text;
        AppStack app(db());
        QVERIFY(app.showWindow());
        QVERIFY(loadAndWait(*app.engine, bundledModel()));
        greedy(app);
        QVERIFY(answer(app, [&] { return app.chat->send(text); }));
        QCOMPARE(app.chat->lastError(), QString());
        const qint64 id = app.chat->conversationId();
        const ChatMessage& question = app.chat->messages()->at(0);
        QCOMPARE(question.text, stored);
        // What the model was given is the text, byte for byte (byte fallback where the vocabulary has no piece).
        const auto& tokenizer = *app.engine->model()->tokenizer;
        QCOMPARE(QByteArray::fromStdString(tokenizer.decode(question.tokens)), stored.toUtf8());
        // Stored, reopened, searched, exported.
        const auto messages = app.store.messages(id);
        QCOMPARE(messages[0].content, stored);
        QCOMPARE(messages[0].tokens, QVector<qint32>(question.tokens.begin(), question.tokens.end()));
        QCOMPARE(messages[1].content, app.chat->messages()->at(1).text);
        const auto hits = app.store.search(word);
        QCOMPARE(hits.size(), 1);
        QCOMPARE(hits[0].conversationId, id);
        const QString json = dir_.filePath(QStringLiteral("export.json"));
        QVERIFY(app.chat->exportConversation(id, QUrl::fromLocalFile(json), QStringLiteral("json")));
        QFile f(json);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonObject root = QJsonDocument::fromJson(f.readAll()).object();
        QCOMPARE(root[QStringLiteral("messages")].toArray()[0].toObject()[QStringLiteral("content")].toString(), stored);
        const QString md = dir_.filePath(QStringLiteral("export.md"));
        QVERIFY(app.chat->exportConversation(id, QUrl::fromLocalFile(md), QStringLiteral("markdown")));
        QFile m(md);
        QVERIFY(m.open(QIODevice::ReadOnly));
        QVERIFY(QString::fromUtf8(m.readAll()).contains(stored));
        app.chat->newConversation();
        QVERIFY(app.chat->openConversation(id));
        QCOMPARE(app.chat->messages()->at(0).text, stored);
        // Shown as it is, laid out in its own direction.
        QQuickItem* bubble = bubbleText(app, 0);
        QVERIFY(bubble);
        QCOMPARE(bubble->property("text").toString(), stored);
        QCOMPARE(bubble->property("effectiveHorizontalAlignment").toInt(), int(rightToLeft ? Qt::AlignRight : Qt::AlignLeft));
    }

    // A known limit: FTS5's unicode61 tokenizer keeps letters and digits only, so an emoji is a
    // separator, never a search term (the words around it are found).
    void emojiAloneAreNotSearchTerms() {
        ChatStore store;
        QVERIFY(store.open(QStringLiteral(":memory:")).ok);
        const qint64 id = *store.createConversation({});
        StoredMessage m;
        m.conversationId = id;
        m.role = QStringLiteral("user");
        m.content = QStringLiteral("🐶dog and 🐱");
        QVERIFY(store.appendMessage(m));
        QCOMPARE(ChatStore::toFtsQuery(QStringLiteral("🐱")), QString());
        QCOMPARE(store.search(QStringLiteral("🐱")).size(), 0);
        QCOMPARE(store.search(QStringLiteral("dog")).size(), 1);
        QCOMPARE(store.search(QStringLiteral("🐶dog")).size(), 1);
    }

    // The model's bytes are not always UTF-8: an answer branched onto a lone lead byte (E2) and
    // onto a NUL byte. The text shows U+FFFD and U+0000; the records keep the bytes.
    void invalidUtf8AndNulInAnAnswer() {
        AppStack app(db());
        QVERIFY(app.showWindow());
        QVERIFY(loadAndWait(*app.engine, bundledModel()));
        greedy(app, 6);
        QVERIFY(answer(app, [&] { return app.chat->send(QStringLiteral("Once upon a time")); }));
        const auto& tokenizer = *app.engine->model()->tokenizer;
        const int lead = byteToken(tokenizer, 0xE2), nul = byteToken(tokenizer, 0x00);
        QVERIFY(lead > 0 && nul > 0);
        QVERIFY(answer(app, [&] { return app.chat->branchFrom(1, 2, lead); }));
        const ChatMessage broken = app.chat->messages()->at(1);
        QCOMPARE(broken.steps[2].piece, std::string("\xE2"));
        QVERIFY2(broken.text.contains(QChar(0xFFFD)), qPrintable(broken.text));
        QVERIFY(answer(app, [&] { return app.chat->branchFrom(1, 3, nul); }));
        const ChatMessage withNul = app.chat->messages()->at(1);
        QVERIFY(withNul.text.contains(QChar(0)));
        const qint64 id = app.chat->conversationId();

        const auto messages = app.store.messages(id);
        QCOMPARE(messages[1].content, withNul.text);
        QCOMPARE(app.store.versions(messages[1].id).size(), 2);
        QStringList versionTexts;
        for (const StoredVersion& v : app.store.versions(messages[1].id)) versionTexts << v.content;
        QVERIFY(versionTexts.contains(broken.text));
        const QString json = dir_.filePath(QStringLiteral("bytes.json"));
        QVERIFY(app.chat->exportConversation(id, QUrl::fromLocalFile(json), QStringLiteral("json")));
        QFile f(json);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray bytes = f.readAll();
        QVERIFY(bytes.contains("\"piece_bytes\":\"e2\""));
        QVERIFY(bytes.contains("\\u0000"));
        const QJsonObject answerJson = QJsonDocument::fromJson(bytes).object()[QStringLiteral("messages")].toArray()[1].toObject();
        QCOMPARE(answerJson[QStringLiteral("content")].toString(), withNul.text);
        app.chat->newConversation();
        QVERIFY(app.chat->openConversation(id));
        QCOMPARE(app.chat->messages()->at(1).text, withNul.text);
        QVERIFY(app.chat->showVariant(1, 1));
        QCOMPARE(app.chat->messages()->at(1).text, broken.text);
        QCOMPARE(app.chat->messages()->at(1).steps[2].piece, std::string("\xE2"));
    }
};

int main(int argc, char** argv) {
    QGuiApplication app(argc, argv);
    TestChatInput test;
    return QTest::qExec(&test, argc, argv);
}

#include "tst_chat_input.moc"
