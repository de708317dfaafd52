#pragma once
// What every request of the app's remote client (RemoteSession, ServerSlots) carries and allows,
// in one place so that each of them treats the server alike: the API key (or the address's user
// info) as its Authorization, and redirects followed only to the same scheme, host and port, so
// that the key never leaves the server it was given for; a refused redirect said in words.

#include <QString>
#include <QUrl>

class QNetworkReply;
class QNetworkRequest;

namespace inferscope {

struct RemoteServer {
    QUrl base;        // scheme, host, port and any path before /v1 ("http://127.0.0.1:8080"), no user info
    QString apiKey;   // "" = none
    QString model;    // the id from /v1/models
    QString userInfo; // "user:password" given in the address: this run's HTTP credentials, never stored
};

// A request for `path` below the server's base ("/v1/models", "/slots") with its credentials and
// the same-origin redirect policy (at most 5 redirects).
QNetworkRequest remoteRequest(const RemoteServer& server, const QString& path);

// Why a reply that was redirected ended, for a person ("" when it was not a redirect): another
// server's address (scheme://host:port only, never its path), or too many redirects. `where` is
// the server's address as the app shows it.
QString redirectProblem(const QNetworkReply* reply, const QString& where);

}  // namespace inferscope
