#pragma once
// The desktop app's object graph as app/main.cpp builds it (same types, same order of
// construction and therefore of destruction), with the window loaded offscreen: what closing the
// window tears down, for the tests of faults while working.
#include <QElapsedTimer>
#include <QQmlApplicationEngine>
#include <QQuickItem>
#include <QQuickWindow>
#include <QSqlDatabase>
#include <QSqlQuery>
#include <QtQml/qqmlextensionplugin.h>
#include <memory>

#include "settings/app_settings.h"
#include "chat/chat_controller.h"
#include "store/chat_store.h"
#include "engine/engine_controller.h"
#include "settings/sampling_settings.h"
#include "visualizer/step_inspector.h"
#include "visualizer/timeline_model.h"

namespace inferscope::testing_app {

struct AppStack {
    // main(): store, settings, sampling, engine, chat, inspector, timeline, then the QML engine.
    ChatStore store;
    ChatStore::OpenReport openReport;
    std::unique_ptr<AppSettings> settings = std::make_unique<AppSettings>(nullptr);
    std::unique_ptr<SamplingSettings> sampling = std::make_unique<SamplingSettings>(nullptr);
    std::unique_ptr<EngineController> engine = std::make_unique<EngineController>(nullptr);
    std::unique_ptr<ChatController> chat = std::make_unique<ChatController>(engine.get(), sampling.get(), &store);
    std::unique_ptr<StepInspector> inspector = std::make_unique<StepInspector>(chat.get(), nullptr);
    std::unique_ptr<TimelineModel> timeline = std::make_unique<TimelineModel>(chat.get(), inspector.get(), nullptr);
    std::unique_ptr<QQmlApplicationEngine> qml;

    // dbPath: a file, or ":memory:". As main() does, the open report becomes the chat's notice.
    explicit AppStack(const QString& dbPath) {
        openReport = store.open(dbPath);
        settings->setPersistent(false);
        StepInspector::setInstance(inspector.get());
        TimelineModel::setInstance(timeline.get());
        AppSettings::setInstance(settings.get());
        SamplingSettings::setInstance(sampling.get());
        EngineController::setInstance(engine.get());
        ChatController::setInstance(chat.get());
        chat->setStoreMessage(openReport.message);
    }
    ~AppStack() { close(); }

    bool showWindow() {
        qml = std::make_unique<QQmlApplicationEngine>();
        qml->addImportPath(QStringLiteral("qrc:/"));
        qml->load(QUrl(QStringLiteral("qrc:/Inferscope/Main.qml")));
        return window() != nullptr;
    }
    QQuickWindow* window() const {
        return qml && !qml->rootObjects().isEmpty() ? qobject_cast<QQuickWindow*>(qml->rootObjects().first()) : nullptr;
    }
    template <typename T = QQuickItem>
    T* find(const QString& objectName) const {
        return window() ? window()->findChild<T*>(objectName) : nullptr;
    }

    // Closing the window: main() returns and its objects go in reverse order. Milliseconds taken.
    qint64 close() {
        QElapsedTimer t;
        t.start();
        qml.reset();
        timeline.reset();
        inspector.reset();
        chat.reset();
        engine.reset();
        return t.elapsed();
    }
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
