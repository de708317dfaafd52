#include "remote/remote_request.h"

#include <QCoreApplication>
#include <QNetworkReply>
#include <QNetworkRequest>

namespace inferscope {
namespace {

// Where a refused redirect pointed, as scheme://host:port only (a path or query may hold anything).
QString redirectTarget(const QNetworkReply* reply) {
    const QByteArray location = reply->rawHeader("Location").left(2048);
    const QUrl target = reply->url().resolved(QUrl::fromEncoded(location));
    if (!target.isValid() || target.host().isEmpty()) return {};
    QString where = target.scheme() + QLatin1String("://") + target.host();
    if (target.port() > 0) where += QLatin1Char(':') + QString::number(target.port());
    return where.left(200);
}

}  // namespace

QNetworkRequest remoteRequest(const RemoteServer& server, const QString& path) {
    QUrl url = server.base;
    url.setPath(url.path() + path);
    QNetworkRequest r(url);
    r.setHeader(QNetworkRequest::ContentTypeHeader, QStringLiteral("application/json"));
    // The key, or else the address's user info as HTTP Basic credentials (a reverse proxy's).
    if (!server.apiKey.isEmpty()) r.setRawHeader("Authorization", "Bearer " + server.apiKey.toUtf8());
    else if (!server.userInfo.isEmpty()) r.setRawHeader("Authorization", "Basic " + server.userInfo.toUtf8().toBase64());
    // Only to the same scheme, host and port: a redirect elsewhere would carry the key there.
    r.setAttribute(QNetworkRequest::RedirectPolicyAttribute, QNetworkRequest::SameOriginRedirectPolicy);
    r.setMaximumRedirectsAllowed(5);
    return r;
}

QString redirectProblem(const QNetworkReply* reply, const QString& where) {
    const auto error = reply->error();
    if (error != QNetworkReply::InsecureRedirectError && error != QNetworkReply::TooManyRedirectsError) return {};
    const QString target = redirectTarget(reply);
    // In RemoteSession's context, where these sentences were first written.
    if (target.isEmpty() || error == QNetworkReply::TooManyRedirectsError)
        return QCoreApplication::translate("RemoteSession", "%1 redirected the request too many times; it was given up.").arg(where);
    return QCoreApplication::translate("RemoteSession",
                                       "%1 redirected the request to another server (%2). Redirects are followed only on the same server, "
                                       "so that the API key stays with %1; connect to %2 directly if you trust it.")
        .arg(where, target);
}

}  // namespace inferscope
