#include "remote/server_keyring.h"

#include <QHash>
#include <QPointer>

#include "remote/remote_session.h"

namespace inferscope {
namespace {

QString baseOf(const QString& url) {
    const QUrl base = RemoteSession::normalizeBase(url);
    return base.isValid() ? base.toString() : QString();
}

}  // namespace

ServerKeyring::ServerKeyring(QObject* parent, std::unique_ptr<SecretStore> store) : QObject(parent), store_(std::move(store)) {}

void ServerKeyring::setProblem(const QString& error) {
    const QString p = error.isEmpty() ? QString() : tr("The system keyring could not be used (%1): the key is kept for this run only.").arg(error.left(200));
    if (p == problem_) return;
    problem_ = p;
    emit problemChanged();
}

void ServerKeyring::lookUp(const QString& url) {
    const QString base = baseOf(url);
    if (base.isEmpty()) return;
    QPointer<ServerKeyring> self(this);
    store_->read(base, [self, base](std::optional<QString> found, QString error) {
        if (!self) return;
        // A failed read is not worth a warning unless the person asks to remember (keep()).
        if (found && !found->isEmpty()) emit self->keyFound(base, *found);
        (void)error;
    });
}

void ServerKeyring::connectingWith(const QString& url, const QString& key, bool remember) {
    const QString base = baseOf(url);
    if (base.isEmpty()) return pending_.reset();
    pending_ = Pending{base, key, remember && !key.isEmpty()};
}

void ServerKeyring::connected(const QString& base) {
    if (!pending_ || pending_->base != base) return;
    const Pending p = *std::exchange(pending_, std::nullopt);
    QPointer<ServerKeyring> self(this);
    auto done = [self, base](QString error) {
        if (!self) return;
        self->setProblem(error);
        if (error.isEmpty()) emit self->saved(base);
    };
    if (p.remember) store_->write(base, p.key, done);
    else  // forgetting is quiet: a keyring that cannot be reached holds nothing of ours
        store_->remove(base, [self, base](QString error) {
            if (self && error.isEmpty()) emit self->saved(base);
        });
}

}  // namespace inferscope
