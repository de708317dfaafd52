#pragma once
// Secrets the app keeps for the person: a server's API key (remote/server_keyring.h) and the
// Hugging Face token (library/model_downloads.h), in the system keyring (Secret Service, KWallet —
// through QtKeychain, service "Inferscope"), never in the settings file; or in memory for the
// tests and --screenshot runs.

#include <QString>
#include <functional>
#include <memory>
#include <optional>

namespace inferscope {

// Where secrets go: asynchronous, each callback called once on the GUI thread.
class SecretStore {
public:
    virtual ~SecretStore() = default;
    // found: the secret, or nullopt with error "" when there is none; error: why the store failed.
    virtual void read(const QString& account, std::function<void(std::optional<QString> found, QString error)> done) = 0;
    virtual void write(const QString& account, const QString& secret, std::function<void(QString error)> done) = 0;
    virtual void remove(const QString& account, std::function<void(QString error)> done) = 0;
};
// The system keyring through QtKeychain (service "Inferscope"; no plain-text fallback).
std::unique_ptr<SecretStore> systemKeyring();
// Secrets in this process's memory (the tests, --screenshot): gone when it ends.
std::unique_ptr<SecretStore> memoryKeyring();

}  // namespace inferscope
