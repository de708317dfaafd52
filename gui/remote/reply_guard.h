#pragma once
// ReplyGuard: what the app's remote client allows one HTTP reply (remote_session.h). A server is
// hostile until it has answered well, so every reply has
//  - three deadlines: to connect and send the request, to the first byte of the answer (a server
//    that queues the request or reads a long prompt is silent that long), and between two
//    arrivals once the answer flows;
//  - a cap on the bytes its reader takes in, counted as they are read (an endless body costs
//    at most the cap, then the connection is closed).
// Past either, the guard aborts the reply and remembers why; the reader's finished handler asks
// problem() before anything else. It lives as the reply's child, so it dies with it.

#include <QElapsedTimer>
#include <QObject>
#include <QString>
#include <QTimer>

class QNetworkReply;

namespace inferscope {

struct RemoteTimeouts {
    int connectMs = 10'000;     // name resolution, TCP (and TLS) handshake, the request sent
    int firstByteMs = 300'000;  // request sent → the first byte of the answer
    int idleMs = 60'000;        // between two arrivals once the answer flows
};

class ReplyGuard : public QObject {
    Q_OBJECT
public:
    enum class Problem { None, ConnectTimeout, FirstByteTimeout, IdleTimeout, TooLarge };

    ReplyGuard(QNetworkReply* reply, const RemoteTimeouts& timeouts, qint64 maxBytes);

    // The reader took `n` more bytes: false (and the reply aborted) once past the cap.
    bool take(qint64 n);
    // The reader's own, smaller cap for this reply (an answer sent whole) was passed.
    void exceeded(qint64 cap);
    Problem problem() const { return problem_; }
    qint64 maxBytes() const { return maxBytes_; }
    // The problem in words for a person ("" for None): `where` is the server's address.
    QString describe(const QString& where) const;

private:
    void arm(int ms);
    void expire();
    void trip(Problem p);

    QNetworkReply* reply_;
    RemoteTimeouts timeouts_;
    qint64 maxBytes_;
    qint64 taken_ = 0;
    enum class Phase { Connecting, Waiting, Receiving } phase_ = Phase::Connecting;
    Problem problem_ = Problem::None;
    QTimer timer_;
};

// A network failure in words a person can act on (Qt's own strings name internals:
// "Connection closed", "Host 127.0.0.1 not found").
QString networkProblem(const QNetworkReply* reply);

}  // namespace inferscope
