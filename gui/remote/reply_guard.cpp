#include "remote/reply_guard.h"

#include <QLocale>
#include <QNetworkReply>

namespace inferscope {

ReplyGuard::ReplyGuard(QNetworkReply* reply, const RemoteTimeouts& timeouts, qint64 maxBytes)
    : QObject(reply), reply_(reply), timeouts_(timeouts), maxBytes_(maxBytes) {
    timer_.setSingleShot(true);
    connect(&timer_, &QTimer::timeout, this, &ReplyGuard::expire);
    connect(reply, &QNetworkReply::requestSent, this, [this] {
        if (phase_ == Phase::Connecting) {
            phase_ = Phase::Waiting;
            arm(timeouts_.firstByteMs);
        }
    });
    auto arrived = [this] {
        phase_ = Phase::Receiving;
        arm(timeouts_.idleMs);
    };
    connect(reply, &QNetworkReply::metaDataChanged, this, arrived);
    connect(reply, &QNetworkReply::readyRead, this, arrived);
    connect(reply, &QNetworkReply::downloadProgress, this, arrived);
    connect(reply, &QNetworkReply::finished, &timer_, &QTimer::stop);
    arm(timeouts_.connectMs);
}

void ReplyGuard::arm(int ms) {
    if (problem_ != Problem::None) return;
    timer_.start(std::max(1, ms));
}

void ReplyGuard::expire() {
    switch (phase_) {
        case Phase::Connecting: return trip(Problem::ConnectTimeout);
        case Phase::Waiting: return trip(Problem::FirstByteTimeout);
        case Phase::Receiving: return trip(Problem::IdleTimeout);
    }
}

bool ReplyGuard::take(qint64 n) {
    taken_ += n;
    if (taken_ <= maxBytes_) return true;
    trip(Problem::TooLarge);
    return false;
}

void ReplyGuard::exceeded(qint64 cap) {
    maxBytes_ = cap;
    trip(Problem::TooLarge);
}

void ReplyGuard::trip(Problem p) {
    if (problem_ != Problem::None) return;
    problem_ = p;
    timer_.stop();
    // A reply that has ended (its last bytes read in the reader's finished handler) has nothing
    // left to stop, but went past the cap all the same: the reader still hears why.
    if (reply_->isFinished()) return;
    // After the reader's turn: it may be inside its readyRead handler. finished() follows, with
    // OperationCanceledError, and the reader asks problem() first.
    QMetaObject::invokeMethod(reply_, &QNetworkReply::abort, Qt::QueuedConnection);
}

QString ReplyGuard::describe(const QString& where) const {
    const auto seconds = [](int ms) { return QLocale().toString(ms / 1000.0, 'g', 3); };
    switch (problem_) {
        case Problem::None: return {};
        case Problem::ConnectTimeout:
            return tr("Could not reach %1 within %2 s (no connection). Is the address right and the server running?").arg(where, seconds(timeouts_.connectMs));
        case Problem::FirstByteTimeout:
            return tr("%1 accepted the request but sent nothing for %2 s; the request was given up.").arg(where, seconds(timeouts_.firstByteMs));
        case Problem::IdleTimeout:
            return tr("%1 stopped sending: nothing arrived for %2 s, so the connection was closed.").arg(where, seconds(timeouts_.idleMs));
        case Problem::TooLarge:
            return tr("%1 sent more than %2, more than any answer needs; the connection was closed.")
                .arg(where, QLocale().formattedDataSize(maxBytes_, 0, QLocale::DataSizeTraditionalFormat));
    }
    return {};
}

QString networkProblem(const QNetworkReply* reply) {
    switch (reply->error()) {
        case QNetworkReply::NoError: return {};
        case QNetworkReply::ConnectionRefusedError: return ReplyGuard::tr("nothing is listening at that address (connection refused)");
        case QNetworkReply::RemoteHostClosedError: return ReplyGuard::tr("the server closed the connection");
        case QNetworkReply::HostNotFoundError: return ReplyGuard::tr("no computer has that name (host not found)");
        case QNetworkReply::TimeoutError: return ReplyGuard::tr("the connection timed out");
        case QNetworkReply::SslHandshakeFailedError: return ReplyGuard::tr("the secure connection failed (TLS handshake: certificate or protocol)");
        case QNetworkReply::NetworkSessionFailedError:
        case QNetworkReply::TemporaryNetworkFailureError: return ReplyGuard::tr("the network is down");
        case QNetworkReply::ProxyConnectionRefusedError:
        case QNetworkReply::ProxyConnectionClosedError:
        case QNetworkReply::ProxyNotFoundError:
        case QNetworkReply::ProxyTimeoutError:
        case QNetworkReply::ProxyAuthenticationRequiredError: return ReplyGuard::tr("the proxy failed (%1)").arg(reply->errorString());
        case QNetworkReply::InsecureRedirectError:
        case QNetworkReply::TooManyRedirectsError: return ReplyGuard::tr("it redirected the request elsewhere, which is not followed");
        case QNetworkReply::OperationCanceledError: return ReplyGuard::tr("the request was stopped");
        default: return reply->errorString();
    }
}

}  // namespace inferscope
