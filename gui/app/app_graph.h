#pragma once
// AppGraph: the one place the window's object graph is built — the chat store, the settings, the
// engine's controller, the chat controller and the inspector's objects, handed to QML as the
// Inferscope module's singletons — and torn down. app/main.cpp, every GUI test harness and the
// QML test runner build their objects here, so what a test drives is what the app runs.
//
//   ChatStore ──▶ ChatController ◀── SamplingSettings        AppSettings
//                   │      ▲
//   EngineController┘      └── StepInspector ◀── TimelineModel
//
// Threading: everything here lives on the GUI thread; EngineController owns the worker thread.
// Ownership: the graph owns every object; QML gets them with C++ ownership (their create()).
#include <QString>
#include <memory>

#include "app/pacer.h"
#include "chat/chat_controller.h"
#include "chat/structured_output.h"
#include "engine/engine_controller.h"
#include "library/model_downloads.h"
#include "library/model_library.h"
#include "remote/server_keyring.h"
#include "settings/app_settings.h"
#include "settings/sampling_settings.h"
#include "settings/speculative_settings.h"
#include "store/chat_store.h"
#include "visualizer/step_inspector.h"
#include "visualizer/timeline_model.h"

class QQmlApplicationEngine;
class QQmlEngine;
class QQuickWindow;

namespace inferscope {

class AppGraph {
public:
    struct Options {
        QString database = QStringLiteral(":memory:");  // a file (its folder is made), or ":memory:"
        bool persistentSettings = false;  // AppSettings written back (the app; not --screenshot or tests)
        bool measureMachine = false;      // the engine measures memory bandwidth after a load (the app)
        bool systemKeyring = false;       // remembered API keys in the system keyring (the app), else in memory
        // The clock of the chat's and the inspector's paces (a test's, advanced by hand), else the
        // app's (PacerClock::app(): Qt's timers). The KV cache panel's view, made by QML, keeps the app's.
        PacerClock* pacerClock = nullptr;
    };

    // Opens the store first (the chat controller reads it when built), then builds the rest in
    // dependency order and makes them the QML module's singletons. The store's open report
    // (a damaged file moved aside…) becomes the chat's notice, as the window shows it.
    explicit AppGraph(const Options& options);
    // Destroys in reverse order of construction: see shutDown().
    ~AppGraph();
    AppGraph(const AppGraph&) = delete;
    AppGraph& operator=(const AppGraph&) = delete;

    // The window, as the app shows it: Main.qml from the module's resources. Before loading, the
    // QML modules only the file dialogs import are checked (AppSettings::fileDialogProblem says
    // what to install instead of the dialog crashing). Null when the QML failed to load.
    QQuickWindow* loadWindow();
    QQuickWindow* window() const;
    // What every QML engine showing the module needs (the runner of tests/qml makes its own).
    static void prepareQmlEngine(QQmlEngine& engine);

    // The model the window opens at start: `requested` (the command line's), else the last one
    // used when `preferLast` and it still exists, else the bundled stories260K; "" when none of
    // them is found. Tells the settings which file is the bundled one.
    QString chooseStartupModel(const QString& requested, bool preferLast);
    // Every model loaded from now on (except the bundled one) goes to the settings' recent list.
    void rememberLoadedModels();

    // What closing the window tears down, in reverse order of construction: the window, the
    // timeline, the inspector, the chat (which keeps a running answer as stopped) and the engine
    // (which cancels its worker and joins it). The store and settings stay readable. Idempotent.
    void shutDown();

    // Built in this order (the constructor's); reset only by shutDown().
    ChatStore store;
    ChatStore::OpenReport openReport;
    std::unique_ptr<AppSettings> settings;
    std::unique_ptr<SamplingSettings> sampling;
    std::unique_ptr<EngineController> engine;
    std::unique_ptr<StructuredOutput> structured;
    std::unique_ptr<SpeculativeSettings> speculative;
    std::unique_ptr<ChatController> chat;
    std::unique_ptr<StepInspector> inspector;
    std::unique_ptr<TimelineModel> timeline;
    std::unique_ptr<ServerKeyring> keyring;
    std::unique_ptr<ModelLibrary> library;
    std::unique_ptr<ModelDownloads> downloads;
    std::unique_ptr<QQmlApplicationEngine> qml;
};

}  // namespace inferscope
