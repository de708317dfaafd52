#include "app/app_graph.h"

#include <QDir>
#include <QFileInfo>
#include <QQmlApplicationEngine>
#include <QQuickWindow>

#include "app/file_dialogs.h"
#include "engine/bundled_model.h"

namespace inferscope {

AppGraph::AppGraph(const Options& options) {
    if (options.database != QLatin1String(":memory:")) QDir().mkpath(QFileInfo(options.database).absolutePath());
    openReport = store.open(options.database);

    settings = std::make_unique<AppSettings>(nullptr);
    settings->setPersistent(options.persistentSettings);
    sampling = std::make_unique<SamplingSettings>(nullptr);
    engine = std::make_unique<EngineController>(nullptr);
    engine->setAutoMeasureMachine(options.measureMachine);
    structured = std::make_unique<StructuredOutput>(nullptr);
    chat = std::make_unique<ChatController>(engine.get(), sampling.get(), &store);
    chat->setStructuredOutput(structured.get());
    speculative = std::make_unique<SpeculativeSettings>(nullptr);
    chat->setSpeculative(speculative.get());
    inspector = std::make_unique<StepInspector>(chat.get(), nullptr);
    timeline = std::make_unique<TimelineModel>(chat.get(), inspector.get(), nullptr);
    if (options.pacerClock) {
        chat->messages()->setPacerClock(*options.pacerClock);
        inspector->setPacerClock(*options.pacerClock);
    }
    keyring = std::make_unique<ServerKeyring>(nullptr, options.systemKeyring ? systemKeyring() : memoryKeyring());
    library = std::make_unique<ModelLibrary>(nullptr);
    library->setPersistent(options.persistentSettings);
    downloads = std::make_unique<ModelDownloads>(library.get(), nullptr, options.systemKeyring ? systemKeyring() : memoryKeyring());

    // Qt 6.4's QML_SINGLETON without a default constructor: each type's create() hands QML these.
    AppSettings::setInstance(settings.get());
    SamplingSettings::setInstance(sampling.get());
    StructuredOutput::setInstance(structured.get());
    SpeculativeSettings::setInstance(speculative.get());
    EngineController::setInstance(engine.get());
    ChatController::setInstance(chat.get());
    StepInspector::setInstance(inspector.get());
    TimelineModel::setInstance(timeline.get());
    ServerKeyring::setInstance(keyring.get());
    ModelLibrary::setInstance(library.get());
    ModelDownloads::setInstance(downloads.get());

    chat->setStoreMessage(openReport.message);
    // The saved tint choice is the chat's; the replay box may switch the chat to "replay" for a
    // while without saving it.
    chat->messages()->setHeatMode(settings->heatMode());
    QObject::connect(settings.get(), &AppSettings::heatModeChanged, chat->messages(), [this] {
        if (chat) chat->messages()->setHeatMode(settings->heatMode());
    });
    // The KV cache type: every load uses the setting; a change applies to the loaded model, and a
    // refused one (a head dimension a block type cannot use, an answer streaming) puts the
    // setting back to the type in use.
    // The library's fit is for the same type.
    auto preferredKv = [this] {
        const KvType type = settings->kvTypeValue();
        engine->setPreferredKvType(type);
        library->setKvType(type);
    };
    preferredKv();
    QObject::connect(settings.get(), &AppSettings::kvTypeChanged, engine.get(), [this, preferredKv] {
        preferredKv();
        engine->applyKvType(settings->kvType());
    });
    QObject::connect(engine.get(), &EngineController::kvTypeRefused, settings.get(), [this] {
        if (engine->hasModel()) settings->setKvType(engine->kvType());
    });
    // A key the person asked to remember is written once its server accepted it.
    QObject::connect(engine.get(), &EngineController::modelChanged, keyring.get(), [this] {
        if (const QString url = engine->serverUrl(); !url.isEmpty()) keyring->connected(url);
    });
    // A server's deadlines: the next request uses the settings' values.
    auto timeouts = [this] {
        engine->setRemoteTimeouts({settings->connectTimeout() * 1000, settings->firstByteTimeout() * 1000, settings->idleTimeout() * 1000});
    };
    timeouts();
    QObject::connect(settings.get(), &AppSettings::remoteTimeoutsChanged, engine.get(), timeouts);
}

AppGraph::~AppGraph() { shutDown(); }

void AppGraph::prepareQmlEngine(QQmlEngine& engine) {
    engine.addImportPath(QStringLiteral("qrc:/"));  // each module's qmldir is at qrc:/<URI as a path>/ (qrc:/Inferscope/Chat/)
}

QQuickWindow* AppGraph::loadWindow() {
    qml = std::make_unique<QQmlApplicationEngine>();
    prepareQmlEngine(*qml);
    // Before the window exists: without a module the file dialogs load when opened, the window
    // makes none and says what to install instead of crashing.
    if (const QString problem = missingFileDialogModules(*qml); !problem.isEmpty()) settings->setFileDialogProblem(problem);
    qml->load(QUrl(QStringLiteral("qrc:/Inferscope/Main.qml")));
    return window();
}

QQuickWindow* AppGraph::window() const {
    return qml && !qml->rootObjects().isEmpty() ? qobject_cast<QQuickWindow*>(qml->rootObjects().first()) : nullptr;
}

QString AppGraph::chooseStartupModel(const QString& requested, bool preferLast) {
    const auto bundled = findBundledModel();
    const QString bundledPath = bundled ? QString::fromStdString(bundled->string()) : QString();
    settings->setBundledModel(bundledPath);
    if (!requested.isEmpty()) return requested;
    if (preferLast && QFileInfo::exists(settings->lastModel())) return settings->lastModel();
    return bundledPath;
}

void AppGraph::rememberLoadedModels() {
    QObject::connect(engine.get(), &EngineController::modelChanged, settings.get(), [this] {
        if (engine->modelPath() != settings->bundledModel()) settings->noteModelLoaded(engine->modelPath());
    });
}

void AppGraph::shutDown() {
    qml.reset();
    downloads.reset();  // a transfer under way stops (a download keeps its partial file)
    library.reset();    // a scan under way stops between two files
    keyring.reset();
    timeline.reset();
    inspector.reset();
    chat.reset();
    engine.reset();
}

}  // namespace inferscope
