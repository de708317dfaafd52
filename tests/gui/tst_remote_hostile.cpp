// The app's remote client (RemoteSession) against a hostile server in the test, on 127.0.0.1:
// a redirect to another port (the API key must not follow it), endless bodies (an error page, a
// model list, an answer sent whole, a stream of tokens that never ends), a 10 MB event, 10,000
// alternatives for one token, a server that accepts and says nothing, one that stalls mid-answer,
// one that hangs up. Each asserts the message a person reads and that the client stopped reading:
// the server could write at most the cap and what the kernel's socket buffers hold past it.
#include <QNetworkReply>
#include <QSettings>
#include <QSignalSpy>
#include <QTcpServer>
#include <QTcpSocket>
#include <QtTest>
#include <functional>
#include <memory>

#include "remote/remote_session.h"
#include "settings/app_settings.h"

using namespace inferscope;

namespace {

// What a request looked like to the server.
struct Seen {
    QByteArray head;  // request line and headers
};

// Loopback sockets buffer a few MiB between the writer and a reader that stopped reading.
constexpr qint64 kSocketSlack = qint64(16) << 20;
// No endless writer writes more than this: a client that never stops fails the test, not the machine.
constexpr qint64 kWriterBound = qint64(512) << 20;

// A server whose answer to each request is a function of the request. Each request on its own
// connection; heads over 64 KiB are not read.
class HostileServer : public QObject {
public:
    using Respond = std::function<void(QTcpSocket*, const QByteArray& head)>;
    Respond respond;
    QList<Seen> seen;
    int connections = 0;
    qint64 written = 0;  // bytes an endless writer got into the socket
    bool peerClosed = false;

    HostileServer() {
        server_.listen(QHostAddress::LocalHost, 0);
        connect(&server_, &QTcpServer::newConnection, this, [this] {
            QTcpSocket* s = server_.nextPendingConnection();
            ++connections;
            connect(s, &QTcpSocket::disconnected, this, [this] { peerClosed = true; });
            connect(s, &QTcpSocket::disconnected, s, &QObject::deleteLater);
            auto buffer = std::make_shared<QByteArray>();
            auto answered = std::make_shared<bool>(false);
            connect(s, &QTcpSocket::readyRead, s, [this, s, buffer, answered] {
                if (*answered) return void(s->readAll());
                buffer->append(s->readAll().left(65536));
                const qsizetype end = buffer->indexOf("\r\n\r\n");
                if (end < 0) return;
                const QByteArray head = buffer->left(end);
                *answered = true;
                seen.append({head});
                respond(s, head);
            });
        });
    }
    quint16 port() const { return server_.serverPort(); }
    QString url() const { return QStringLiteral("http://127.0.0.1:%1").arg(port()); }

    // Writes `start`, then `filler` again and again while the peer reads (bounded by kWriterBound).
    void endless(QTcpSocket* s, const QByteArray& start, const QByteArray& filler) {
        s->write(start);
        auto more = [this, s, filler] {
            while (s->state() == QAbstractSocket::ConnectedState && s->bytesToWrite() < (1 << 20) && written < kWriterBound) {
                s->write(filler);
                written += filler.size();
            }
        };
        connect(s, &QTcpSocket::bytesWritten, s, more);
        more();
    }

private:
    QTcpServer server_;
};

QByteArray sseHead() { return "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"; }

QByteArray tokenEvent(const QByteArray& text) {
    return "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" + text + "\"},\"logprobs\":{\"content\":[{\"token\":\"" + text +
           "\",\"logprob\":-0.5,\"top_logprobs\":[{\"token\":\"" + text + "\",\"logprob\":-0.5}]}]},\"finish_reason\":null}]}\n\n";
}

RemoteServer serverAt(const HostileServer& s, const QString& key = QString()) {
    return {RemoteSession::normalizeBase(s.url()), key, QStringLiteral("m"), QString()};
}

RemoteChatRequest hello(int maxTokens = 16) {
    RemoteChatRequest r;
    r.messages = {{QStringLiteral("user"), QStringLiteral("Hello")}};
    r.maxTokens = maxTokens;
    return r;
}

// Runs one chat to its end: the failure message ("" when it finished) and the steps that came.
struct Outcome {
    QString failure;
    int steps = 0;
    int maxCandidates = 0;
    bool finished = false;
    qint64 busiestReadUs = 0;  // the GUI thread's CPU time for the longest single arrival
};

// The GUI thread is never held over 50 ms by one arrival, whatever the server sends (its own CPU
// time, so a busy machine does not inflate it).
constexpr qint64 kGuiBudgetUs = 50'000;
Outcome chat(RemoteSession& session, const RemoteChatRequest& request = hello()) {
    Outcome o;
    QObject::connect(&session, &RemoteSession::stepsReady, &session, [&o](quint64, const StepBatch& b) {
        o.steps += int(b.steps.size());
        for (const StepRecord& s : b.steps) o.maxCandidates = std::max(o.maxCandidates, int(s.sample.top.size()));
    });
    QSignalSpy failed(&session, &RemoteSession::generationFailed);
    QSignalSpy finished(&session, &RemoteSession::generationFinished);
    session.startChat(1, request);
    if (!QTest::qWaitFor([&] { return !failed.isEmpty() || !finished.isEmpty(); }, 60000)) o.failure = QStringLiteral("(no end)");
    else if (!failed.isEmpty()) o.failure = failed.first().at(1).toString();
    o.finished = !finished.isEmpty();
    o.busiestReadUs = session.busiestReadUs();
    QObject::disconnect(&session, &RemoteSession::stepsReady, &session, nullptr);
    return o;
}

QString listModels(RemoteSession& session, const RemoteServer& server) {
    QSignalSpy listed(&session, &RemoteSession::modelsListed);
    QSignalSpy failed(&session, &RemoteSession::modelsFailed);
    session.listModels(server);
    if (!QTest::qWaitFor([&] { return !listed.isEmpty() || !failed.isEmpty(); }, 60000)) return QStringLiteral("(no end)");
    return failed.isEmpty() ? listed.first().first().toStringList().join(',') : failed.first().first().toString();
}

}  // namespace

class TestRemoteHostile : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QCoreApplication::setOrganizationName(QStringLiteral("inferscope-test-hostile"));
    }

    void aRedirectToAnotherPortIsNotFollowedAndTheKeyStaysHome() {
        HostileServer other;
        other.respond = [](QTcpSocket* s, const QByteArray&) {
            s->write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{\"data\":[{\"id\":\"stolen\"}]}");
            s->disconnectFromHost();
        };
        HostileServer server;
        server.respond = [&other](QTcpSocket* s, const QByteArray&) {
            s->write("HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:" + QByteArray::number(other.port()) +
                     "/v1/models?token=abc\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            s->disconnectFromHost();
        };
        RemoteSession session;
        QCOMPARE(listModels(session, serverAt(server, QStringLiteral("sk-secret"))),
                 QStringLiteral("%1 redirected the request to another server (%2). Redirects are followed only on the same server, so that the "
                                "API key stays with %1; connect to %2 directly if you trust it.")
                     .arg(server.url(), other.url()));
        QCOMPARE(other.connections, 0);
        QCOMPARE(server.seen.size(), 1);
        QVERIFY(server.seen[0].head.contains("Authorization: Bearer sk-secret"));
    }

    void aRedirectOnTheSameServerIsFollowedWithTheKey() {
        HostileServer server;
        server.respond = [](QTcpSocket* s, const QByteArray& head) {
            if (head.startsWith("GET /v1/models "))
                s->write("HTTP/1.1 308 Permanent Redirect\r\nLocation: /v2/models\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            else
                s->write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{\"data\":[{\"id\":\"here\"}]}");
            s->disconnectFromHost();
        };
        RemoteSession session;
        QCOMPARE(listModels(session, serverAt(server, QStringLiteral("sk-secret"))), QStringLiteral("here"));
        QCOMPARE(server.seen.size(), 2);
        QVERIFY(server.seen[1].head.startsWith("GET /v2/models "));
        QVERIFY(server.seen[1].head.contains("Authorization: Bearer sk-secret"));
    }

    void anEndlessModelListIsCutAtFourMebibytes() {
        HostileServer server;
        server.respond = [&server](QTcpSocket* s, const QByteArray&) {
            server.endless(s, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{\"data\":[", QByteArray(65536, ' '));
        };
        RemoteSession session;
        QCOMPARE(listModels(session, serverAt(server)),
                 QStringLiteral("%1 sent more than 4 MB, more than any answer needs; the connection was closed.").arg(server.url()));
        QTRY_VERIFY_WITH_TIMEOUT(server.peerClosed, 20000);
        QVERIFY2(server.written < RemoteSession::kMaxModelListBytes + kSocketSlack, qPrintable(QString::number(server.written)));
    }

    void anEndlessErrorPageIsReadOnlyAsFarAsItsMessage() {
        HostileServer server;
        server.respond = [&server](QTcpSocket* s, const QByteArray&) {
            server.endless(s, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n<html>", QByteArray(65536, 'x'));
        };
        RemoteSession session;
        session.setServer(serverAt(server));
        const Outcome o = chat(session);
        QCOMPARE(o.failure, QStringLiteral("%1 answered HTTP 503 (Service Unavailable)").arg(server.url()));
        QTRY_VERIFY_WITH_TIMEOUT(server.peerClosed, 20000);
        QVERIFY2(server.written < RemoteSession::kMaxErrorBodyBytes + kSocketSlack, qPrintable(QString::number(server.written)));
    }

    void anEndlessAnswerSentWholeIsCutAtSixteenMebibytes() {
        HostileServer server;
        server.respond = [&server](QTcpSocket* s, const QByteArray&) {
            server.endless(s, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{\"choices\":[", QByteArray(65536, ' '));
        };
        RemoteSession session;
        session.setServer(serverAt(server));
        const Outcome o = chat(session);
        QCOMPARE(o.failure, QStringLiteral("%1 sent more than 16 MB, more than any answer needs; the connection was closed.").arg(server.url()));
        QTRY_VERIFY_WITH_TIMEOUT(server.peerClosed, 20000);
        QVERIFY2(server.written < RemoteSession::kMaxWholeAnswerBytes + kSocketSlack, qPrintable(QString::number(server.written)));
        QVERIFY2(o.busiestReadUs < kGuiBudgetUs, qPrintable(QString::number(o.busiestReadUs)));
    }

    void aStreamThatNeverEndsIsClosedPastTheTokensAskedFor() {
        HostileServer server;
        server.respond = [&server](QTcpSocket* s, const QByteArray&) { server.endless(s, sseHead(), tokenEvent("la")); };
        RemoteSession session;
        session.setServer(serverAt(server));
        const Outcome o = chat(session, hello(16));
        QCOMPARE(o.failure, QStringLiteral("%1 kept sending tokens past the 16 asked for; the connection was closed.").arg(server.url()));
        QCOMPARE(o.steps, 16 + RemoteSession::kExtraTokens);
        QTRY_VERIFY_WITH_TIMEOUT(server.peerClosed, 20000);
        QVERIFY2(server.written < kSocketSlack, qPrintable(QString::number(server.written)));
        QVERIFY2(o.busiestReadUs < kGuiBudgetUs, qPrintable(QString::number(o.busiestReadUs)));
    }

    void aTenMegabyteEventIsRefusedAndTheRestNotRead() {
        HostileServer server;
        server.respond = [&server](QTcpSocket* s, const QByteArray&) {
            server.endless(s, sseHead() + tokenEvent("Once") + "data: {\"choices\":[{\"delta\":{\"content\":\"", QByteArray(65536, 'a'));
        };
        RemoteSession session;
        session.setServer(serverAt(server));
        const Outcome o = chat(session);
        QCOMPARE(o.steps, 1);
        QCOMPARE(o.failure, QStringLiteral("The answer from %1 stopped after 1 token: the server reported an error: The server sent an event of more than "
                                           "1 MiB: not an answer this app reads.").arg(server.url()));
        QTRY_VERIFY_WITH_TIMEOUT(server.peerClosed, 20000);
        QVERIFY2(server.written < OpenAiStreamParser::kMaxEventBytes + kSocketSlack, qPrintable(QString::number(server.written)));
        QVERIFY2(o.busiestReadUs < kGuiBudgetUs, qPrintable(QString::number(o.busiestReadUs)));
    }

    void tenThousandAlternativesKeepTwenty() {
        QByteArray top;
        for (int i = 0; i < 10000; ++i) top += (i ? "," : "") + QByteArray("{\"token\":\"t") + QByteArray::number(i) + "\",\"logprob\":-" + QByteArray::number(1 + i) + "}";
        const QByteArray event = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"t0\"},\"logprobs\":{\"content\":[{\"token\":\"t0\",\"logprob\":-1,"
                                 "\"top_logprobs\":[" + top + "]}]},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
        HostileServer server;
        server.respond = [event](QTcpSocket* s, const QByteArray&) {
            s->write(sseHead() + event);
            s->disconnectFromHost();
        };
        RemoteSession session;
        session.setServer(serverAt(server));
        const Outcome o = chat(session);
        QCOMPARE(o.failure, QString());
        QVERIFY(o.finished);
        QCOMPARE(o.steps, 1);
        QCOMPARE(o.maxCandidates, 20);
        QVERIFY2(o.busiestReadUs < kGuiBudgetUs, qPrintable(QString::number(o.busiestReadUs)));
    }

    void aServerThatSaysNothingIsGivenUpAtTheFirstByteDeadline() {
        HostileServer server;
        server.respond = [](QTcpSocket*, const QByteArray&) {};  // reads the request, never answers
        RemoteSession session;
        session.setTimeouts({10'000, 300, 60'000});
        session.setServer(serverAt(server));
        const Outcome o = chat(session);
        QCOMPARE(o.failure, QStringLiteral("%1 accepted the request but sent nothing for %2 s; the request was given up.").arg(server.url(), QLocale().toString(0.3)));
        QTRY_VERIFY_WITH_TIMEOUT(server.peerClosed, 20000);
    }

    void aStallMidAnswerKeepsWhatArrivedAndSaysSo() {
        HostileServer server;
        server.respond = [](QTcpSocket* s, const QByteArray&) { s->write(sseHead() + tokenEvent("Once") + tokenEvent(" upon")); };  // then silence
        RemoteSession session;
        session.setTimeouts({10'000, 60'000, 300});
        session.setServer(serverAt(server));
        const Outcome o = chat(session);
        QCOMPARE(o.steps, 2);
        QCOMPARE(o.failure, QStringLiteral("The answer stopped after 2 tokens: %1 stopped sending: nothing arrived for %2 s, so the connection was closed.")
                                .arg(server.url(), QLocale().toString(0.3)));
        QTRY_VERIFY_WITH_TIMEOUT(server.peerClosed, 20000);
    }

    void aHangUpMidAnswerIsNamed() {
        HostileServer server;
        server.respond = [](QTcpSocket* s, const QByteArray&) {
            s->write(sseHead() + tokenEvent("Once") + tokenEvent(" upon") + tokenEvent(" a"));
            s->disconnectFromHost();
        };
        RemoteSession session;
        session.setServer(serverAt(server));
        const Outcome o = chat(session);
        QCOMPARE(o.steps, 3);
        QCOMPARE(o.failure, QStringLiteral("The answer from %1 stopped after 3 tokens: the connection closed before the server said the answer was complete.")
                                .arg(server.url()));
    }

    void aHangUpBeforeAnyAnswerIsNamed() {
        HostileServer server;
        server.respond = [](QTcpSocket* s, const QByteArray&) { s->abort(); };
        RemoteSession session;
        session.setServer(serverAt(server));
        const Outcome o = chat(session);
        QCOMPARE(o.steps, 0);
        QCOMPARE(o.failure, QStringLiteral("Could not reach %1: the server closed the connection. Is the server running, and is the address right?").arg(server.url()));
    }

    void userInfoIsUsedForTheRunButNeverKeptInTheAddress() {
        QCOMPARE(RemoteSession::normalizeBase(QStringLiteral("http://ann:pw@127.0.0.1:8080/v1/")).toString(), QStringLiteral("http://127.0.0.1:8080"));
        QCOMPARE(RemoteSession::userInfoOf(QStringLiteral("ann:pw@127.0.0.1:8080")), QStringLiteral("ann:pw"));
        HostileServer server;
        server.respond = [](QTcpSocket* s, const QByteArray& head) {
            s->write(head.contains("Authorization: Basic")
                         ? QByteArray("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{\"data\":[{\"id\":\"in\"}]}")
                         : QByteArray("HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"x\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"));
            s->disconnectFromHost();
        };
        const QString typed = QStringLiteral("http://ann:pw@127.0.0.1:%1").arg(server.port());
        RemoteSession session;
        QCOMPARE(listModels(session, {RemoteSession::normalizeBase(typed), QString(), QString(), RemoteSession::userInfoOf(typed)}), QStringLiteral("in"));
        QVERIFY(server.seen.last().head.contains("Authorization: Basic " + QByteArray("ann:pw").toBase64()));
    }

    void anOlderSettingsFileLosesTheUserInfoOfItsServers() {
        {
            QSettings s;
            s.clear();
            s.setValue("models/recent", QStringList{"http://ann:pw@10.0.0.2:8080#llama", "/models/a.gguf", "http://10.0.0.2:8080#llama"});
        }
        AppSettings settings(nullptr);
        QCOMPARE(settings.recentModels(), (QStringList{"http://10.0.0.2:8080#llama", "/models/a.gguf"}));
        QCOMPARE(QSettings().value("models/recent").toStringList(), settings.recentModels());
        settings.noteModelLoaded(QStringLiteral("http://bob:x@10.0.0.3:1#m"));
        QCOMPARE(settings.recentModels().first(), QStringLiteral("http://10.0.0.3:1#m"));
        QVERIFY(!QSettings().value("models/recent").toStringList().join(' ').contains(QLatin1String("pw")));
        QSettings().clear();
    }

    void timeoutsAreSettingsWithinBounds() {
        QSettings().clear();
        AppSettings settings(nullptr);
        QCOMPARE(settings.connectTimeout(), 10);
        QCOMPARE(settings.firstByteTimeout(), 300);
        QCOMPARE(settings.idleTimeout(), 60);
        settings.setRemoteTimeouts(5, 0, 120);  // 0 is not a deadline: kept as it was
        QCOMPARE(settings.connectTimeout(), 5);
        QCOMPARE(settings.firstByteTimeout(), 300);
        QCOMPARE(settings.idleTimeout(), 120);
        AppSettings again(nullptr);
        QCOMPARE(again.connectTimeout(), 5);
        QCOMPARE(again.idleTimeout(), 120);
        QSettings().clear();
    }
};

QTEST_GUILESS_MAIN(TestRemoteHostile)
#include "tst_remote_hostile.moc"
