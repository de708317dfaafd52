// Nothing lost on a crash: a process chatting with the real bundled model and a conversation
// database on disk is killed with SIGKILL at a random moment, 20 times (seeded, about 7 s in
// all). After each kill the file passes PRAGMA integrity_check, every message the process had
// reported as committed is there unchanged, at most one message more was committed since its
// last report, and every stored answer is whole (its text is exactly its token records' pieces;
// no half-written answer). The next process opens the file without any recovery notice.
//
// Run as "tst_crash_safety --chat-child DIR SEED" it is the chatting process: it opens
// DIR/conversations.db, prints "open: <notice>" and "ready", then chats forever with short
// sampled answers, starting a new conversation every few exchanges. After each commit it appends
// "msg <conversation> <position> <role> <sha1 of the text> <id>" to DIR/committed.log (write +
// fdatasync: the line is only there once the message is).
#include <QCryptographicHash>
#include <QDir>
#include <QElapsedTimer>
#include <QProcess>
#include <QRandomGenerator>
#include <QSet>
#include <QSignalSpy>
#include <QSqlDatabase>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <unistd.h>

#include "app/app_graph.h"
#include "record/step_record_codec.h"
#include "gui_test_helpers.h"

using namespace inferscope;
using namespace inferscope::testing_gui;

namespace {

const QStringList kPrompts = {
    QStringLiteral("Once upon a time"), QStringLiteral("The little dog"), QStringLiteral("Lily and Tom went"),
    QStringLiteral(" and then"), QStringLiteral("שלום, said the bird"), QStringLiteral("🐶 and 🐱 played"),
};

QByteArray sha1(const QString& text) { return QCryptographicHash::hash(text.toUtf8(), QCryptographicHash::Sha1).toHex(); }

// The chatting process.
class ChatChild : public QObject {
public:
    // The app's object graph (AppGraph) on the database in `dir`, no window.
    ChatChild(const QString& dir, quint32 seed) : random_(seed), graph_(AppGraph::Options{.database = dir + QStringLiteral("/conversations.db")}) {
        log_ = ::open(qPrintable(dir + QStringLiteral("/committed.log")), O_WRONLY | O_APPEND | O_CREAT, 0600);
        std::printf("open: %s\n", qPrintable(graph_.openReport.message));
        std::fflush(stdout);
        connect(&store_, &ChatStore::conversationsChanged, this, [this] { logCommitted(); });
        connect(&engine_, &EngineController::modelChanged, this, [this] { next(); });
        connect(&chat_, &ChatController::answerFinished, this, [this] { QTimer::singleShot(0, this, [this] { next(); }); });
        engine_.loadModel(bundledModel());
    }

private:
    void next() {
        if (chat_.messages()->count() >= 2 * int(random_.bounded(1, 4))) chat_.newConversation();
        SamplerParams sampled;
        sampled.temperature = 1.0f;
        sampled.seed = random_.generate();
        chat_.setSamplerOverride(sampled);
        chat_.setMaxTokensOverride(int(random_.bounded(4, 48)));
        if (!chat_.send(kPrompts[random_.bounded(int(kPrompts.size()))])) {
            std::printf("send failed: %s\n", qPrintable(chat_.lastError()));
            std::fflush(stdout);
            QCoreApplication::exit(1);
        }
        if (!ready_) {
            ready_ = true;
            std::printf("ready\n");
            std::fflush(stdout);
        }
    }
    // After every commit: report the messages not reported yet (only once they are in the file).
    void logCommitted() {
        if (chat_.conversationId() == 0) return;
        for (const StoredMessage& m : store_.messages(chat_.conversationId())) {
            if (logged_.contains(m.id)) continue;
            logged_.insert(m.id);
            const QByteArray line = QStringLiteral("msg %1 %2 %3 %4 %5\n").arg(m.conversationId).arg(m.position).arg(m.role,
                                        QString::fromLatin1(sha1(m.content))).arg(m.id).toUtf8();
            if (::write(log_, line.constData(), size_t(line.size())) != line.size() || ::fdatasync(log_) != 0) QCoreApplication::exit(2);
        }
    }

    QRandomGenerator random_;
    AppGraph graph_;
    ChatStore& store_ = graph_.store;
    EngineController& engine_ = *graph_.engine;
    ChatController& chat_ = *graph_.chat;
    QSet<qint64> logged_;
    int log_ = -1;
    bool ready_ = false;
};

struct LoggedMessage {
    qint64 conversation = 0;
    int position = 0;
    QString role;
    QByteArray hash;
};

QHash<qint64, LoggedMessage> readLog(const QString& path) {
    QHash<qint64, LoggedMessage> logged;
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return logged;
    for (const QByteArray& line : f.readAll().split('\n')) {
        const QList<QByteArray> p = line.split(' ');
        if (p.size() != 6 || p[0] != "msg") continue;  // the last line may have been cut by the kill
        logged.insert(p[5].toLongLong(), {p[1].toLongLong(), p[2].toInt(), QString::fromLatin1(p[3]), p[4]});
    }
    return logged;
}

}  // namespace

class TestCrashSafety : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    QSet<qint64> seen_;  // ids found in the file after earlier kills

    // The file as the kill left it, through a connection of its own.
    void verifyDatabase(int round) {
        const QString name = QStringLiteral("after-kill");
        {
            QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), name);
            db.setDatabaseName(dir_.filePath(QStringLiteral("conversations.db")));
            QVERIFY(db.open());
            QSqlQuery q(db);
            QVERIFY(q.exec(QStringLiteral("PRAGMA integrity_check")) && q.next());
            QCOMPARE(q.value(0).toString(), QStringLiteral("ok"));
            q.finish();
            const QHash<qint64, LoggedMessage> logged = readLog(dir_.filePath(QStringLiteral("committed.log")));
            QVERIFY(q.exec(QStringLiteral("SELECT id, conversation_id, position, role, content, finish_reason, tokens, "
                                          "token_records FROM messages ORDER BY conversation_id, position")));
            QHash<qint64, int> positions;  // next expected position per conversation
            QSet<qint64> found;
            int unreported = 0;
            while (q.next()) {
                const qint64 id = q.value(0).toLongLong(), conversation = q.value(1).toLongLong();
                const int position = q.value(2).toInt();
                const QString role = q.value(3).toString(), content = q.value(4).toString();
                found.insert(id);
                QCOMPARE(position, positions.value(conversation, 0));  // dense, in order
                positions[conversation] = position + 1;
                QCOMPARE(role, position % 2 == 0 ? QStringLiteral("user") : QStringLiteral("assistant"));
                if (auto it = logged.find(id); it != logged.end()) {
                    QCOMPARE(conversation, it->conversation);
                    QCOMPARE(position, it->position);
                    QCOMPARE(role, it->role);
                    QCOMPARE(sha1(content), it->hash);
                } else if (!seen_.contains(id)) {
                    ++unreported;  // committed after the last report, before the kill
                }
                if (role == QLatin1String("user")) {
                    QVERIFY2(kPrompts.contains(content), qPrintable(content));
                    continue;
                }
                // A whole answer: a finish reason, and the text of exactly its records' pieces.
                QVERIFY2(QStringList({"eos", "length"}).contains(q.value(5).toString()), qPrintable(q.value(5).toString()));
                const QByteArray records = q.value(7).toByteArray();
                const auto steps = decodeStepRecords(std::span(reinterpret_cast<const uint8_t*>(records.constData()), size_t(records.size())));
                QVERIFY(steps && !steps->empty());
                std::string pieces;
                for (const StepRecord& s : *steps) pieces += s.piece;
                QCOMPARE(content, QString::fromUtf8(pieces));
                QCOMPARE(q.value(6).toByteArray().size(), qsizetype(steps->size() * 4));
            }
            QVERIFY2(unreported <= 1, qPrintable(QStringLiteral("round %1: %2 messages committed since the last report").arg(round).arg(unreported)));
            for (auto it = logged.begin(); it != logged.end(); ++it)
                QVERIFY2(found.contains(it.key()), qPrintable(QStringLiteral("round %1: reported message %2 is gone").arg(round).arg(it.key())));
            seen_.unite(found);
        }
        QSqlDatabase::removeDatabase(name);
    }

private slots:
    void initTestCase() {
        useTestLocations();
        QVERIFY(dir_.isValid());
    }

    void killedAtRandomMomentsLosesNothing() {
        QRandomGenerator random(20261129);
        QElapsedTimer total;
        total.start();
        int rounds = 0;
        for (int round = 0; round < 20; ++round, ++rounds) {
            QProcess child;
            child.setProcessChannelMode(QProcess::SeparateChannels);
            child.start(QCoreApplication::applicationFilePath(),
                        {QStringLiteral("--chat-child"), dir_.path(), QString::number(1000 + round)});
            QVERIFY(child.waitForStarted());
            QByteArray out;
            while (!out.contains("ready\n") && child.state() == QProcess::Running && child.waitForReadyRead(20000))
                out += child.readAllStandardOutput();
            QVERIFY2(out.contains("ready\n"), out.constData());
            QVERIFY2(out.startsWith("open: \n"), out.constData());  // opened cleanly: no recovery, no notice
            QTest::qSleep(int(random.bounded(20, 400)));  // answers stream and commit meanwhile
            QCOMPARE(::kill(pid_t(child.processId()), SIGKILL), 0);
            QVERIFY(child.waitForFinished(10000));
            QCOMPARE(child.exitStatus(), QProcess::CrashExit);
            verifyDatabase(round);
            if (QTest::currentTestFailed()) return;
        }
        qInfo("%d kills in %lld ms, %lld messages in the file", rounds, total.elapsed(), qint64(seen_.size()));
        QVERIFY(seen_.size() > 40);
        ChatStore store;  // and the app's own open is clean
        const auto report = store.open(dir_.filePath(QStringLiteral("conversations.db")));
        QVERIFY(report.persistent);
        QCOMPARE(report.message, QString());
    }
};

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    if (argc == 4 && QByteArray(argv[1]) == "--chat-child") {
        useTestLocations();
        ChatChild child(QString::fromLocal8Bit(argv[2]), quint32(QByteArray(argv[3]).toUInt()));
        return app.exec();
    }
    TestCrashSafety test;
    return QTest::qExec(&test, argc, argv);
}

#include "tst_crash_safety.moc"
