#include "settings/secret_store.h"

#include <QHash>
#include <QObject>
#include <qt6keychain/keychain.h>

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

}  // namespace

std::unique_ptr<SecretStore> systemKeyring() { return std::make_unique<QtKeychainStore>(); }
std::unique_ptr<SecretStore> memoryKeyring() { return std::make_unique<MemoryStore>(); }

}  // namespace inferscope
