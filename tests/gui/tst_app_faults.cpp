// Faults while working, on the app's own object graph (tests/gui/app_stack.h) with the real bundled
// model and a conversation database on disk:
//   - closing the window mid-answer, before the first token and mid-load: prompt, and the answer
//     shown so far is kept as a stopped one;
//   - loading another model mid-answer: the partial answer is kept and stored;
//   - a full disk when saving a message (SQLite's max_page_count): the error is shown, nothing
//     stored earlier is lost, and the unsaved messages are saved in order once there is room;
//   - exports to an unwritable place or a full disk (RLIMIT_FSIZE in a child process): a clear
//     error and no partial file;
//   - a damaged database: the notice reaches the window, and the app itself says it on stderr.
//
// Run as "tst_app_faults --export-under-limit DB ID FILE FORMAT BYTES" it is the child process: it
// opens DB, limits the size of any file it writes to BYTES (SIGXFSZ ignored), exports
// conversation ID to FILE and prints the store's error.
#include <QDir>
#include <QFile>
#include <QGuiApplication>
#include <QJsonDocument>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <csignal>
#include <cstdio>
#include <sys/resource.h>

#include "step_gate.h"
#include "app_stack.h"
#include "record/step_record_codec.h"
#include "gui_test_helpers.h"

#include "app/qml_modules.h"  // Q_IMPORT_QML_PLUGIN of each module

using namespace inferscope;
using namespace inferscope::testing_app;
using namespace inferscope::testing_gui;

namespace {

QString tinyRandomModel() { return QStringLiteral(INFERSCOPE_TEST_DATA_DIR "/llama-2-tiny-random.gguf"); }

// A long sampled answer: with seed 2 the story of "Once upon a time" goes on for all 1900 tokens
// (others end by themselves after a few hundred, which could beat a test's stop).
void answerAtLength(ChatController& chat) {
    SamplerParams sampled;
    sampled.temperature = 1.0f;
    sampled.seed = 2;
    chat.setSamplerOverride(sampled);
    chat.setMaxTokensOverride(1900);
}

void answerBriefly(ChatController& chat) {
    SamplerParams greedy;
    greedy.temperature = 0.0f;
    chat.setSamplerOverride(greedy);
    chat.setMaxTokensOverride(12);
}

std::vector<StepRecord> decodeRecords(const QByteArray& bytes) {
    auto steps = decodeStepRecords(std::span(reinterpret_cast<const uint8_t*>(bytes.constData()), size_t(bytes.size())));
    return steps ? *steps : std::vector<StepRecord>{};
}

QByteArray readFile(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

bool writeFile(const QString& path, const QByteArray& bytes) {
    QFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write(bytes) == bytes.size();
}

QString integrity(const QString& file) {
    const QString name = QStringLiteral("integrity-check");
    QString result;
    {
        QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), name);
        db.setDatabaseName(file);
        if (db.open()) result = pragma(db, QStringLiteral("PRAGMA integrity_check")).toString();
        db.close();
    }
    QSqlDatabase::removeDatabase(name);
    return result;
}

int exportUnderLimit(const QStringList& args) {
    ChatStore store;
    if (!store.open(args[0]).persistent) return 2;
    std::signal(SIGXFSZ, SIG_IGN);  // a write past the limit fails with EFBIG instead of killing us
    const rlimit limit{rlim_t(args[4].toLongLong()), rlim_t(args[4].toLongLong())};
    if (setrlimit(RLIMIT_FSIZE, &limit) != 0) return 3;
    const bool ok = store.exportConversation(args[1].toLongLong(), args[2], args[3]);
    std::printf("%s\n", qPrintable(ok ? QStringLiteral("exported") : store.lastError()));
    return ok ? 0 : 1;
}

}  // namespace

class TestAppFaults : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    QString db() const { return dir_.filePath(QStringLiteral("conversations.db")); }

private slots:
    void initTestCase() {
        useTestLocations();
        QVERIFY(dir_.isValid());
    }
    void init() { removeFilesIn(dir_.path()); }

    void closingTheWindowMidAnswerKeepsItAsStopped() {
        QString shown;
        {
            AppStack app(db());
            QVERIFY(app.openReport.persistent);
            QVERIFY(app.showWindow());
            QVERIFY(loadAndWait(*app.engine, bundledModel()));
            answerAtLength(*app.chat);
            StepGate gate(*app.engine, 20);  // the window closes mid-answer, however fast the machine
            QVERIFY(app.chat->send(QStringLiteral("Once upon a time")));
            QVERIFY(gate.waitHeld());
            QVERIFY(app.chat->generating());
            shown = app.chat->messages()->at(1).text;
            QVERIFY(!shown.isEmpty());
            app.close();
            // Closing cancelled the held answer rather than waiting for it to run on.
            QVERIFY2(!gate.expired(), "closing the window waited for the answer instead of stopping it");
        }
        QCOMPARE(integrity(db()), QStringLiteral("ok"));
        ChatStore store;
        QVERIFY(store.open(db()).persistent);
        QCOMPARE(store.conversations().size(), 1);
        const auto messages = store.messages(store.conversations().first().id);
        QCOMPARE(messages.size(), 2);
        QCOMPARE(messages[0].content, QStringLiteral("Once upon a time"));
        QCOMPARE(messages[1].finishReason, QStringLiteral("cancelled"));
        QCOMPARE(messages[1].content, shown);  // what the window showed, no more and no less
        const auto steps = decodeRecords(messages[1].tokenRecords);
        QVERIFY(!steps.empty());
        QCOMPARE(messages[1].tokens.size(), qsizetype(steps.size()));
        QCOMPARE(messages[1].stats.value(QStringLiteral("generatedTokens")).toInt(), int(steps.size()));
    }

    void closingBeforeTheFirstTokenKeepsTheQuestion() {
        {
            AppStack app(db());
            QVERIFY(loadAndWait(*app.engine, bundledModel()));
            answerAtLength(*app.chat);
            StepGate gate(*app.engine, 20);  // the answer cannot run past step 20 unless closing waits for it
            QVERIFY(app.chat->send(QStringLiteral("Once upon a time")));
            QCOMPARE(app.chat->messages()->count(), 2);  // the question and the empty answer
            app.close();  // no event was processed: nothing has come back yet
            QVERIFY2(!gate.expired(), "closing the window waited for the answer instead of stopping it");
        }
        ChatStore store;
        QVERIFY(store.open(db()).persistent);
        const auto messages = store.messages(store.conversations().first().id);
        QCOMPARE(messages.size(), 1);  // no empty answer
        QCOMPARE(messages[0].content, QStringLiteral("Once upon a time"));
        QCOMPARE(messages[0].role, QStringLiteral("user"));
    }

    void closingTheWindowMidLoadReturnsPromptly() {
        AppStack app(db());
        QVERIFY(app.showWindow());
        app.engine->loadModel(bundledModel());
        QCOMPARE(app.engine->state(), EngineController::State::Loading);  // closed before the load's answer came back
        app.close();  // returns: the worker thread was joined (a hang fails by ctest's timeout)

        // A generation running and a load queued behind it: the queued load is skipped.
        AppStack again(db());
        QVERIFY(loadAndWait(*again.engine, bundledModel()));
        answerAtLength(*again.chat);
        StepGate held(*again.engine, 20);
        QVERIFY(again.chat->send(QStringLiteral("Once upon a time")));
        QVERIFY(held.waitHeld());
        again.engine->loadModel(tinyRandomModel());
        again.close();
        QVERIFY2(!held.expired(), "closing the window waited for the answer instead of stopping it");
    }

    void loadingAnotherModelMidAnswerKeepsIt() {
        AppStack app(db());
        QVERIFY(loadAndWait(*app.engine, bundledModel()));
        answerAtLength(*app.chat);
        QSignalSpy finished(app.chat.get(), &ChatController::answerFinished);
        QSignalSpy modelChanged(app.engine.get(), &EngineController::modelChanged);
        StepGate gate(*app.engine, 20);  // mid-answer, however fast the machine
        QVERIFY(app.chat->send(QStringLiteral("Once upon a time")));
        QVERIFY(gate.waitHeld());
        app.engine->loadModel(tinyRandomModel());
        QVERIFY(modelChanged.wait(10000));
        QCOMPARE(finished.count(), 1);  // before the new model came
        const ChatMessage answer = app.chat->messages()->at(1);
        QVERIFY2(answer.finishReason == Message::Cancelled, qPrintable(finishName(answer.finishReason) + QStringLiteral(" after %1 steps").arg(answer.steps.size())));
        QVERIFY(!answer.text.isEmpty());
        QVERIFY(answer.tokens.empty());  // forgotten: they belong to the previous vocabulary
        const qint64 id = app.chat->conversationId();
        auto stored = app.store.messages(id);
        QCOMPARE(stored.size(), 2);
        QCOMPARE(stored[1].content, answer.text);
        QCOMPARE(stored[1].finishReason, QStringLiteral("cancelled"));
        QCOMPARE(decodeRecords(stored[1].tokenRecords).size(), answer.steps.size());
        QCOMPARE(stored[1].tokens.size(), qsizetype(answer.steps.size()));  // stored as generated, by the old model

        // The conversation goes on with the new model: every earlier message is tokenized again.
        answerBriefly(*app.chat);
        QSignalSpy done(app.chat.get(), &ChatController::answerFinished);
        QVERIFY(app.chat->send(QStringLiteral(" The end.")));
        QVERIFY(done.wait(20000));
        QCOMPARE(app.chat->lastError(), QString());
        stored = app.store.messages(id);
        QCOMPARE(stored.size(), 4);
        QCOMPARE(stored[1].content, answer.text);
        QCOMPARE(app.engine->modelDetails().vocabSize, 32000);
    }

    // A new conversation (Ctrl+N) or deleting this one mid-answer: the answer so far is kept in the
    // conversation it belongs to, and what the engine still sends for it is not written anywhere.
    void aNewConversationMidAnswerKeepsIt() {
        AppStack app(db());
        QVERIFY(app.showWindow());
        QVERIFY(loadAndWait(*app.engine, bundledModel()));
        answerAtLength(*app.chat);
        StepGate gate(*app.engine, 20);  // each long answer is held at step 20 until cancelled
        QVERIFY(app.chat->send(QStringLiteral("Once upon a time")));
        QVERIFY(gate.waitHeld());
        const qint64 first = app.chat->conversationId();
        const QString shown = app.chat->messages()->at(1).text;
        app.chat->newConversation();
        QCOMPARE(app.chat->messages()->count(), 0);
        QVERIFY(!app.chat->generating());
        // The cancelled job's end has come back (the engine is ready again): anything it streamed was delivered by then.
        QTRY_COMPARE_WITH_TIMEOUT(app.engine->state(), EngineController::State::Ready, 5000);
        QCOMPARE(app.chat->messages()->count(), 0);  // nothing streamed into the new conversation
        const auto stored = app.store.messages(first);
        QCOMPARE(stored.size(), 2);
        QCOMPARE(stored[1].finishReason, QStringLiteral("cancelled"));
        QCOMPARE(stored[1].content, shown);

        answerBriefly(*app.chat);
        QSignalSpy done(app.chat.get(), &ChatController::answerFinished);
        QVERIFY(app.chat->send(QStringLiteral("The dog ran")) && done.wait(20000));
        QVERIFY(app.chat->conversationId() != first);
        QCOMPARE(app.store.messages(app.chat->conversationId()).size(), 2);

        // Deleting the conversation being answered.
        answerAtLength(*app.chat);
        QVERIFY(app.chat->send(QStringLiteral(" Then")));
        QVERIFY(gate.waitHeld());
        const qint64 second = app.chat->conversationId();
        QVERIFY(app.chat->deleteConversation(second));
        QCOMPARE(app.chat->messages()->count(), 0);
        QTRY_COMPARE_WITH_TIMEOUT(app.engine->state(), EngineController::State::Ready, 5000);
        QCOMPARE(app.chat->messages()->count(), 0);
        QVERIFY(!app.store.conversation(second));
        QCOMPARE(app.store.conversations().size(), 1);
    }

    // The disk fills up (max_page_count: the file may not grow) just before an answer is saved.
    void aFullDiskKeepsEverythingEarlierAndRetries() {
        AppStack app(db());
        QVERIFY(app.showWindow());
        QVERIFY(loadAndWait(*app.engine, bundledModel()));
        answerBriefly(*app.chat);
        QSignalSpy done(app.chat.get(), &ChatController::answerFinished);
        // An earlier conversation, and the start of this one.
        QVERIFY(app.chat->send(QStringLiteral("Once upon a time")) && done.wait(20000));
        const qint64 earlierId = app.chat->conversationId();
        const auto earlier = app.store.messages(earlierId);
        QCOMPARE(earlier.size(), 2);
        app.chat->newConversation();
        QVERIFY(app.chat->send(QStringLiteral("The dog ran")) && done.wait(20000));
        const qint64 id = app.chat->conversationId();
        QCOMPARE(app.store.messages(id).size(), 2);

        QSqlDatabase connection = storeConnection();
        QVERIFY(connection.isOpen());
        const int pages = pragma(connection, QStringLiteral("PRAGMA page_count")).toInt();
        QCOMPARE(pragma(connection, QStringLiteral("PRAGMA max_page_count = %1").arg(pages)).toInt(), pages);
        QVERIFY(app.chat->send(QStringLiteral(" The cat sat")) && done.wait(20000));
        QVERIFY2(app.chat->lastError().startsWith(QStringLiteral("Could not save the message: database or disk is full")),
                 qPrintable(app.chat->lastError()));
        QCOMPARE(app.find<QQuickItem>(QStringLiteral("errorText"))->property("text").toString(), app.chat->lastError());
        QCOMPARE(app.chat->messages()->count(), 4);  // the window still has everything
        QVERIFY(app.store.messages(id).size() < 4);
        QCOMPARE(app.store.messages(earlierId), earlier);  // nothing earlier lost
        QCOMPARE(pragma(connection, QStringLiteral("PRAGMA integrity_check")).toString(), QStringLiteral("ok"));

        // Room again: the next save stores what was left out first, in order.
        pragma(connection, QStringLiteral("PRAGMA max_page_count = 1073741823"));
        QVERIFY(app.chat->send(QStringLiteral(" Then it rained.")) && done.wait(20000));
        QCOMPARE(app.chat->lastError(), QString());
        const auto stored = app.store.messages(id);
        QCOMPARE(stored.size(), 6);
        for (int r = 0; r < 6; ++r) {
            QCOMPARE(stored[r].position, r);
            QCOMPARE(stored[r].content, app.chat->messages()->at(r).text);
            QCOMPARE(stored[r].role, roleName(app.chat->messages()->at(r).role));
        }
        QCOMPARE(app.store.messages(earlierId), earlier);
    }

    // Another version of an earlier answer opens as a new conversation; with the disk full that
    // copy cannot be made: no half-made copy is left, and the window shows the original again.
    void aFullDiskWhenAVersionWouldOpenAsANewConversation() {
        AppStack app(db());
        QVERIFY(loadAndWait(*app.engine, bundledModel()));
        answerBriefly(*app.chat);
        QSignalSpy done(app.chat.get(), &ChatController::answerFinished);
        QVERIFY(app.chat->send(QStringLiteral("Once upon a time")) && done.wait(20000));
        QVERIFY(app.chat->regenerate() && done.wait(20000));
        QVERIFY(app.chat->send(QStringLiteral(" The end.")) && done.wait(20000));
        const qint64 id = app.chat->conversationId();
        const auto before = app.store.messages(id);
        QCOMPARE(before.size(), 4);

        QSqlDatabase connection = storeConnection();
        pragma(connection, QStringLiteral("PRAGMA max_page_count = %1").arg(pragma(connection, QStringLiteral("PRAGMA page_count")).toInt()));
        QVERIFY(!app.chat->showVariant(1, 0));
        QVERIFY2(app.chat->lastError().startsWith(QStringLiteral("Could not open that version as a new conversation: ")) &&
                     app.chat->lastError().contains(QStringLiteral("database or disk is full")),
                 qPrintable(app.chat->lastError()));
        QCOMPARE(app.chat->conversationId(), id);
        QCOMPARE(app.chat->messages()->count(), 4);
        QCOMPARE(app.chat->messages()->at(1).activeVariant, 1);
        QCOMPARE(app.store.conversations().size(), 1);
        QCOMPARE(app.store.messages(id), before);
        QCOMPARE(pragma(connection, QStringLiteral("PRAGMA integrity_check")).toString(), QStringLiteral("ok"));

        pragma(connection, QStringLiteral("PRAGMA max_page_count = 1073741823"));
        QVERIFY(app.chat->showVariant(1, 0));
        QVERIFY(app.chat->conversationId() != id);
        QCOMPARE(app.store.conversations().size(), 2);
        QCOMPARE(app.store.messages(id), before);
    }

    // Before a conversation even exists: its creation fails, and is done with the next save.
    void aFullDiskAtTheFirstMessage() {
        AppStack app(db());
        QVERIFY(loadAndWait(*app.engine, bundledModel()));
        answerBriefly(*app.chat);
        // The conversation's row holds the system prompt: 20 KB of it need pages the file does not have.
        app.chat->setSystemPrompt(QString(20000, QLatin1Char('s')));
        QSqlDatabase connection = storeConnection();
        pragma(connection, QStringLiteral("PRAGMA max_page_count = %1").arg(pragma(connection, QStringLiteral("PRAGMA page_count")).toInt()));
        QSignalSpy done(app.chat.get(), &ChatController::answerFinished);
        QVERIFY(app.chat->send(QStringLiteral("Once upon a time")) && done.wait(20000));
        QCOMPARE(app.chat->conversationId(), 0);
        QCOMPARE(app.chat->messages()->count(), 2);  // answered all the same
        QVERIFY2(app.chat->lastError().contains(QStringLiteral("database or disk is full")), qPrintable(app.chat->lastError()));
        pragma(connection, QStringLiteral("PRAGMA max_page_count = 1073741823"));
        QVERIFY(app.chat->send(QStringLiteral(" The end.")) && done.wait(20000));
        QVERIFY(app.chat->conversationId() != 0);
        QCOMPARE(app.store.messages(app.chat->conversationId()).size(), 4);
        QCOMPARE(app.store.conversation(app.chat->conversationId())->title, QStringLiteral("Once upon a time"));
    }

    void exportToAnUnwritablePlaceFailsCleanly() {
        AppStack app(db());
        QVERIFY(loadAndWait(*app.engine, bundledModel()));
        answerBriefly(*app.chat);
        QSignalSpy done(app.chat.get(), &ChatController::answerFinished);
        QVERIFY(app.chat->send(QStringLiteral("Once upon a time")) && done.wait(20000));
        const qint64 id = app.chat->conversationId();

        // A folder that does not exist, a "folder" that is a file, a target that is a folder.
        const QString file = dir_.filePath(QStringLiteral("a-file"));
        QVERIFY(QFile(file).open(QIODevice::WriteOnly));
        QDir(dir_.path()).mkdir(QStringLiteral("a-folder"));
        for (const QString& target : {dir_.filePath(QStringLiteral("missing/out.md")), file + QStringLiteral("/out.md"),
                                      dir_.filePath(QStringLiteral("a-folder"))}) {
            QVERIFY2(!app.chat->exportConversation(id, QUrl::fromLocalFile(target), QStringLiteral("markdown")), qPrintable(target));
            QVERIFY2(app.chat->lastError().startsWith(QStringLiteral("Export failed: Could not write ") + target),
                     qPrintable(app.chat->lastError()));
        }
        QVERIFY(QFileInfo(dir_.filePath(QStringLiteral("a-folder"))).isDir());
        QCOMPARE(QFileInfo(file).size(), 0);
        QVERIFY(!QFile::exists(dir_.filePath(QStringLiteral("missing"))));
        QCOMPARE(QDir(dir_.filePath(QStringLiteral("a-folder"))).entryList(QDir::NoDotAndDotDot | QDir::AllEntries | QDir::Hidden).size(), 0);
    }

    // A disk that fills up during the export (RLIMIT_FSIZE, in a child process): a large JSON
    // fails in its first write, a small Markdown only when it is flushed.
    void exportToAFullDiskLeavesNoPartialFile_data() {
        QTest::addColumn<QString>("format");
        QTest::addColumn<int>("limit");
        QTest::newRow("json, 8 KiB of room") << QStringLiteral("json") << 8192;
        QTest::newRow("markdown, 100 bytes of room") << QStringLiteral("markdown") << 100;
    }
    void exportToAFullDiskLeavesNoPartialFile() {
        QFETCH(QString, format);
        QFETCH(int, limit);
        const QString out = dir_.filePath(QStringLiteral("out/conversation.") + format);
        QDir(QFileInfo(out).path()).removeRecursively();
        QDir().mkpath(QFileInfo(out).path());
        qint64 id = 0;
        QByteArray wanted;
        {
            AppStack app(db());
            QVERIFY(loadAndWait(*app.engine, bundledModel()));
            answerBriefly(*app.chat);
            QSignalSpy done(app.chat.get(), &ChatController::answerFinished);
            QVERIFY(app.chat->send(QStringLiteral("Once upon a time")) && done.wait(20000));
            id = app.chat->conversationId();
            // An earlier export is there: a failed one must leave it as it was.
            QVERIFY(writeFile(out, "an earlier export\n"));
            const QString whole = dir_.filePath(QStringLiteral("whole.") + format);
            QVERIFY(app.store.exportConversation(id, whole, format));
            wanted = readFile(whole);
        }
        QVERIFY2(wanted.size() > limit, qPrintable(QString::number(wanted.size())));
        QProcess child;
        child.start(QCoreApplication::applicationFilePath(),
                    {QStringLiteral("--export-under-limit"), db(), QString::number(id), out, format, QString::number(limit)});
        QVERIFY(child.waitForFinished(30000));
        const QString said = QString::fromUtf8(child.readAllStandardOutput()).trimmed();
        QCOMPARE(child.exitStatus(), QProcess::NormalExit);
        QVERIFY2(child.exitCode() == 1, qPrintable(QStringLiteral("exit %1: %2 %3").arg(child.exitCode()).arg(said,
                                                   QString::fromUtf8(child.readAllStandardError()))));
        QCOMPARE(said, QStringLiteral("Could not write %1: File too large").arg(out));
        QCOMPARE(readFile(out), QByteArray("an earlier export\n"));  // untouched
        QCOMPARE(QDir(QFileInfo(out).path()).entryList(QDir::Files | QDir::Hidden).size(), 1);  // no temporary file left
    }

    // A damaged database: moved aside, what could be read recovered, and the window says so.
    void aDamagedDatabaseNoticeReachesTheWindow() {
        {
            AppStack app(db());
            QVERIFY(loadAndWait(*app.engine, bundledModel()));
            answerBriefly(*app.chat);
            QSignalSpy done(app.chat.get(), &ChatController::answerFinished);
            QVERIFY(app.chat->send(QStringLiteral("Once upon a time")) && done.wait(20000));
        }
        QFile f(db());
        QVERIFY(f.open(QIODevice::ReadWrite));
        QVERIFY(f.seek(100));
        f.write(QByteArray(4000, 'Z'));  // the header's tail and the schema page
        f.close();

        AppStack app(db());
        QVERIFY(app.openReport.persistent);
        QVERIFY2(!app.openReport.movedTo.isEmpty(), qPrintable(app.openReport.message));
        QVERIFY(QFile::exists(app.openReport.movedTo));
        QVERIFY(app.openReport.message.contains(QStringLiteral("was damaged")));
        QCOMPARE(app.chat->storeMessage(), app.openReport.message);
        QVERIFY(app.showWindow());
        QCOMPARE(app.find<QQuickItem>(QStringLiteral("errorText"))->property("text").toString(), app.openReport.message);
    }

    // The app itself (its main()): the notice is on stderr too, the file moved aside.
    void theAppReportsADamagedDatabase() {
        const QString data = dir_.filePath(QStringLiteral("app-data"));
        QDir().mkpath(data);
        QFile f(data + QStringLiteral("/conversations.db"));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(QByteArray("SQLite format 3") + QByteArray(4096, '\x01'));  // a header, then garbage
        f.close();
        QProcess app;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
        env.insert(QStringLiteral("XDG_CONFIG_HOME"), dir_.filePath(QStringLiteral("config")));
        app.setProcessEnvironment(env);
        app.start(QStringLiteral(INFERSCOPE_APP), {QStringLiteral("--screenshot"), dir_.filePath(QStringLiteral("shot.png")),
                                                   QStringLiteral("--data-dir"), data, QStringLiteral("--max-tokens"),
                                                   QStringLiteral("4"), QStringLiteral("--panel"), QStringLiteral("none")});
        QVERIFY(app.waitForFinished(60000));
        const QString err = QString::fromUtf8(app.readAllStandardError());
        QCOMPARE(app.exitCode(), 0);
        QVERIFY2(err.contains(QStringLiteral("inferscope: The conversation database ")) && err.contains(QStringLiteral("was damaged")),
                 qPrintable(err));
        const QStringList aside = QDir(data).entryList({QStringLiteral("conversations.db.corrupt-*")}, QDir::Files);
        QCOMPARE(aside.size(), 1);
        QVERIFY(QFile::exists(data + QStringLiteral("/conversations.db")));
    }
};

int main(int argc, char** argv) {
    QGuiApplication app(argc, argv);
    if (argc == 7 && QByteArray(argv[1]) == "--export-under-limit")
        return exportUnderLimit(app.arguments().mid(2));
    TestAppFaults test;
    return QTest::qExec(&test, argc, argv);
}

#include "tst_app_faults.moc"
