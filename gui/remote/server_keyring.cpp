#include "remote/server_keyring.h"

#include <QHash>
#include <QPointer>
#include <qt6keychain/keychain.h>

#include "remote/remote_session.h"

namespace inferscope {
namespace {

const QString kService = QStringLiteral("Inferscope");

class QtKeychainStore : public SecretStore {
public:
    void read(const QString& account, std::function<void(std::optional<QString>, QString)> done) override {
        auto* job = new QKeychain::ReadPasswordJob(kService);
        job->setAutoDelete(true);
        job->setInsecureFallback(false);
        job->setKey(account);
        QObject::connect(job, &QKeychain::Job::finished, job, [done = std::move(done)](QKeychain::Job* j) {
            auto* r = static_cast<QKeychain::ReadPasswordJob*>(j);
            if (r->error() == QKeychain::NoError) return done(r->textData(), QString());
            if (r->error() == QKeychain::EntryNotFound) return done(std::nullopt, QString());
            done(std::nullopt, r->errorString());
        });
        job->start();
    }
    void write(const QString& account, const QString& secret, std::function<void(QString)> done) override {
        auto* job = new QKeychain::WritePasswordJob(kService);
        job->setAutoDelete(true);
        job->setInsecureFallback(false);
        job->setKey(account);
        job->setTextData(secret);
        QObject::connect(job, &QKeychain::Job::finished, job, [done = std::move(done)](QKeychain::Job* j) {
            done(j->error() == QKeychain::NoError ? QString() : j->errorString());
        });
        job->start();
    }
    void remove(const QString& account, std::function<void(QString)> done) override {
        auto* job = new QKeychain::DeletePasswordJob(kService);
        job->setAutoDelete(true);
        job->setInsecureFallback(false);
        job->setKey(account);
        QObject::connect(job, &QKeychain::Job::finished, job, [done = std::move(done)](QKeychain::Job* j) {
            done(j->error() == QKeychain::NoError || j->error() == QKeychain::EntryNotFound ? QString() : j->errorString());
        });
        job->start();
    }
};

class MemoryStore : public SecretStore {
public:
    void read(const QString& account, std::function<void(std::optional<QString>, QString)> done) override {
        const auto it = secrets_.constFind(account);
        done(it == secrets_.cend() ? std::nullopt : std::optional<QString>(*it), QString());
    }
    void write(const QString& account, const QString& secret, std::function<void(QString)> done) override {
        secrets_.insert(account, secret);
        done(QString());
    }
    void remove(const QString& account, std::function<void(QString)> done) override {
        secrets_.remove(account);
        done(QString());
    }

private:
    QHash<QString, QString> secrets_;
};

QString baseOf(const QString& url) {
    const QUrl base = RemoteSession::normalizeBase(url);
    return base.isValid() ? base.toString() : QString();
}

}  // namespace

std::unique_ptr<SecretStore> systemKeyring() { return std::make_unique<QtKeychainStore>(); }
std::unique_ptr<SecretStore> memoryKeyring() { return std::make_unique<MemoryStore>(); }

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
