#pragma once
// The desktop app's object graph as app/main.cpp has it built (AppGraph: same types, same order
// of construction and therefore of destruction), with the window loaded offscreen: what closing
// the window tears down, for the tests of faults while working.
#include <QQuickItem>
#include <QQuickWindow>
#include <QSqlDatabase>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QtQml/qqmlextensionplugin.h>  // the tests import the module's static plugin

#include "app/app_graph.h"

namespace inferscope::testing_app {

struct AppStack : AppGraph {
    // dbPath: a file, or ":memory:". Settings are not written back, as with --screenshot. The
    // model library looks in an empty home (never the user's folders or caches) unless a test
    // gives it another.
    explicit AppStack(const QString& dbPath) : AppGraph(Options{.database = dbPath}) {
        catalog::Environment env;
        env.home = libraryHome_.path().toStdString();
        env.systemOllamaModels = env.home + "/system-ollama";
        library->setEnvironment(env);
    }

    bool showWindow() { return loadWindow() != nullptr; }
    template <typename T = QQuickItem>
    T* find(const QString& objectName) const {
        return window() ? window()->findChild<T*>(objectName) : nullptr;
    }
    // Closing the window: main() returns and its objects go in reverse order.
    void close() { shutDown(); }

private:
    QTemporaryDir libraryHome_;
};

// The store's own SQLite connection (a test runs one store at a time): for PRAGMAs that
// simulate a full disk.
inline QSqlDatabase storeConnection() {
    for (const QString& name : QSqlDatabase::connectionNames())
        if (name.startsWith(QLatin1String("inferscope-chat-store-")) && !name.endsWith(QLatin1String("-source")))
            return QSqlDatabase::database(name, false);
    return {};
}

inline QVariant pragma(const QSqlDatabase& db, const QString& sql) {
    QSqlQuery q(db);
    return q.exec(sql) && q.next() ? q.value(0) : QVariant();
}

}  // namespace inferscope::testing_app
