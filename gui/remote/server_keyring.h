#pragma once
// ServerKeyring: a server's API key kept in the system keyring (Secret Service, KWallet — through
// QtKeychain) when the person asks for it, never in the settings. The Connect dialog asks for a
// remembered key when an address is typed (lookUp → keyFound) and says, with the connection, whether
// to remember the key it used (connectingWith); the key is written only once that server accepted
// it and listed the model (connected), and a key the person chose not to remember is deleted.
// Without a usable keyring (no Secret Service on the session bus) nothing is written anywhere and
// `problem` says why: the key then lasts for this run only, as it always does without the box.
// Account names are the server's address without user info ("http://host:8080").

#include <QObject>
#include <QQmlEngine>
#include <functional>
#include <memory>
#include <optional>

#include "app/qml_singleton.h"
#include "settings/secret_store.h"

namespace inferscope {

class ServerKeyring : public QObject, public QmlSingleton<ServerKeyring> {
    Q_OBJECT
    QML_ELEMENT
    QML_SINGLETON
    // Why the last keyring operation failed ("" when it worked), in words for the dialog.
    Q_PROPERTY(QString problem READ problem NOTIFY problemChanged)

public:
    ServerKeyring(QObject* parent, std::unique_ptr<SecretStore> store);

    // keyFound(base, key) when a key is remembered for the server at `url` (base = its normalized
    // address); nothing when none is.
    Q_INVOKABLE void lookUp(const QString& url);
    // The dialog connects to `url` with `key`: once that server is connected (connected()), the
    // key is remembered if `remember`, else any remembered one is forgotten.
    Q_INVOKABLE void connectingWith(const QString& url, const QString& key, bool remember);
    // The engine connected to the server at `base` (EngineController::serverUrl()).
    void connected(const QString& base);
    QString problem() const { return problem_; }

signals:
    void keyFound(const QString& base, const QString& key);
    void problemChanged();
    void saved(const QString& base);  // written (remember) or removed (not): for the tests

private:
    void setProblem(const QString& error);

    std::unique_ptr<SecretStore> store_;
    QString problem_;
    struct Pending {
        QString base, key;
        bool remember = false;
    };
    std::optional<Pending> pending_;
};

}  // namespace inferscope
