// inferscope: the desktop app. Reads the command line, chooses the renderer, has AppGraph
// (gui/app/) build the window's objects and open the conversation database, loads the model (the
// command line's, the last one used, or the bundled stories260K) and shows the QML window.
// `--screenshot FILE.png [--prompt TEXT] [--model FILE]` renders one answer to a PNG.
#include <QCommandLineParser>
#include <QGuiApplication>
#include <QQuickStyle>
#include <QQuickWindow>
#include <QStandardPaths>
#include <QtQml/qqmlextensionplugin.h>
#include <cstdio>
#include <memory>

#include "app/app_graph.h"
#include "app/scene_graph_backend.h"
#include "app/screenshot_driver.h"
#include "common/kernel_set.h"
#include "kv_cache/kv_cache.h"

#include "app/qml_modules.h"  // Q_IMPORT_QML_PLUGIN of each module

using namespace inferscope;

int main(int argc, char** argv) {
    // A forced kernel set this CPU cannot run is refused before any window (common/kernel_set.h).
    if (auto kernels = kernelSetFromEnvironment(); !kernels || !selectKernelSet(*kernels)) {
        std::fprintf(stderr, "inferscope: %s\n", kernels ? "the kernel set could not be selected" : kernels.error().message.c_str());
        return 1;
    }
    QGuiApplication app(argc, argv);
    QGuiApplication::setOrganizationName(QStringLiteral("Inferscope"));
    QGuiApplication::setApplicationName(QStringLiteral("Inferscope"));
    QGuiApplication::setApplicationDisplayName(QStringLiteral("Inferscope"));
    QGuiApplication::setApplicationVersion(QStringLiteral(INFERSCOPE_VERSION));
    QGuiApplication::setDesktopFileName(QStringLiteral("io.github.inferscope.Inferscope"));  // installer/: desktop file, icon

    QCommandLineParser cli;
    cli.setApplicationDescription(QStringLiteral("Chat with a local language model while watching inference happen."));
    cli.addHelpOption();
    cli.addVersionOption();
    cli.addPositionalArgument(QStringLiteral("model"), QStringLiteral("GGUF model to open"), QStringLiteral("[model.gguf]"));
    QCommandLineOption modelOpt(QStringLiteral("model"), QStringLiteral("GGUF model to open."), QStringLiteral("file"));
    QCommandLineOption shotOpt(QStringLiteral("screenshot"), QStringLiteral("Run --prompt (greedily unless --temperature), save the window as a PNG and quit."), QStringLiteral("file.png"));
    QCommandLineOption promptOpt(QStringLiteral("prompt"), QStringLiteral("Prompt for --screenshot."), QStringLiteral("text"), QStringLiteral("Once upon a time"));
    QCommandLineOption sizeOpt(QStringLiteral("size"), QStringLiteral("Window size for --screenshot (WxH)."), QStringLiteral("WxH"), QStringLiteral("1400x900"));
    QCommandLineOption themeOpt(QStringLiteral("theme"), QStringLiteral("light or dark (this run only)."), QStringLiteral("theme"));
    QCommandLineOption panelOpt(QStringLiteral("panel"),
                                QStringLiteral("Inspector panel to show: probabilities, layers, attention, timeline, kv, settings, model, or none (hidden)."),
                                QStringLiteral("name"));
    QCommandLineOption dialogOpt(QStringLiteral("open-dialog"), QStringLiteral("With --screenshot: open the model's file dialog after the answer and capture it open."));
    QCommandLineOption compareOpt(QStringLiteral("compare"),
                                  QStringLiteral("With --screenshot: compare the answer with this GGUF (the Probabilities panel's \"Compare with…\") and capture the result."),
                                  QStringLiteral("file.gguf"));
    QCommandLineOption againOpt(QStringLiteral("answer-again"),
                                QStringLiteral("With --screenshot: once the answer is in (and compared, with --compare), regenerate it once and capture after that."));
    QCommandLineOption temperatureOpt(QStringLiteral("temperature"), QStringLiteral("With --screenshot: sample at this temperature instead of greedily."),
                                      QStringLiteral("t"));
    QCommandLineOption seedOpt(QStringLiteral("seed"), QStringLiteral("With --temperature: the sampler's seed."), QStringLiteral("n"), QStringLiteral("0"));
    QCommandLineOption rejectedOpt(QStringLiteral("show-rejected-draft"),
                                   QStringLiteral("With --screenshot and speculative decoding on: show the answer's rejected draft that came closest to being kept in the Probabilities panel."));
    QCommandLineOption maxTokensOpt(QStringLiteral("max-tokens"), QStringLiteral("Answer length for --screenshot."), QStringLiteral("n"));
    QCommandLineOption dataOpt(QStringLiteral("data-dir"),
                               QStringLiteral("Keep conversations in this folder (default: the user's app-data folder; --screenshot keeps none unless given)."),
                               QStringLiteral("dir"));
    QCommandLineOption rendererOpt(QStringLiteral("renderer"),
                                   QStringLiteral("auto (software rendering when OpenGL is a CPU rasterizer), software or hardware."),
                                   QStringLiteral("how"), QStringLiteral("auto"));
    QCommandLineOption tintOpt(QStringLiteral("tint"),
                               QStringLiteral("Tint answers by: probability, surprisal, entropy, draft (speculative decoding) or off (with --screenshot: this run only)."),
                               QStringLiteral("mode"));
    QStringList kvNames;  // core's, as Settings lists them
    for (KvType type : allKvTypes()) kvNames << QString::fromLatin1(kvTypeName(type));
    QCommandLineOption kvOpt(QStringLiteral("kv"),
                             QStringLiteral("KV cache type: %1 or %2, as Settings → KV cache (with --screenshot: this run only).")
                                 .arg(kvNames.mid(0, kvNames.size() - 1).join(QStringLiteral(", ")), kvNames.last()),
                             QStringLiteral("type"));
    QCommandLineOption noMmapOpt(QStringLiteral("no-mmap"),
                                 QStringLiteral("Copy the weights into this process's memory at load instead of reading them through the shared page cache."));
    QCommandLineOption connectOpt(QStringLiteral("connect"),
                                  QStringLiteral("Chat with a model on an OpenAI-compatible server at this address instead of a file (as Connect to a server…)."),
                                  QStringLiteral("url"));
    QCommandLineOption remoteModelOpt(QStringLiteral("remote-model"), QStringLiteral("With --connect: the server's model id (default: the first it lists)."),
                                      QStringLiteral("id"));
    QCommandLineOption apiKeyOpt(QStringLiteral("api-key"), QStringLiteral("With --connect: the server's API key (this run only; also INFERSCOPE_API_KEY)."),
                                 QStringLiteral("key"));
    QCommandLineOption schemaOpt(QStringLiteral("json-schema"),
                                 QStringLiteral("Structured output for this run: answers are JSON matching this schema (its text)."), QStringLiteral("schema"));
    cli.addOptions({connectOpt, remoteModelOpt, apiKeyOpt, schemaOpt});
    cli.addOptions({modelOpt, shotOpt, promptOpt, sizeOpt, themeOpt, panelOpt, dataOpt, maxTokensOpt, rendererOpt, dialogOpt, tintOpt, kvOpt, noMmapOpt, compareOpt, againOpt, temperatureOpt, seedOpt, rejectedOpt});
    cli.process(app);
    const bool screenshot = cli.isSet(shotOpt);

    const QString rendererName = cli.value(rendererOpt);
    RendererChoice renderer = RendererChoice::Auto;
    if (rendererName == QLatin1String("software"))
        renderer = RendererChoice::Software;
    else if (rendererName == QLatin1String("hardware"))
        renderer = RendererChoice::Hardware;
    else if (rendererName != QLatin1String("auto")) {
        std::fprintf(stderr, "inferscope: --renderer must be auto, software or hardware, got \"%s\"\n", qPrintable(rendererName));
        return 1;
    }
    const QString rendering = chooseSceneGraphBackend(renderer);
    if (screenshot) std::fprintf(stderr, "inferscope: %s\n", qPrintable(rendering));

    QQuickStyle::setStyle(QStringLiteral("Fusion"));

    // Conversations live in the app-data folder (or --data-dir); --screenshot alone keeps them in memory.
    AppGraph::Options options;
    if (!screenshot || cli.isSet(dataOpt)) {
        const QString dir = cli.isSet(dataOpt) ? cli.value(dataOpt) : QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
        options.database = dir + QStringLiteral("/conversations.db");
    }
    options.persistentSettings = !screenshot;
    options.measureMachine = true;
    options.systemKeyring = !screenshot;
    AppGraph graph(options);
    // Also for whoever reads the terminal or the session log: the window's banner can be dismissed.
    if (!graph.openReport.message.isEmpty()) std::fprintf(stderr, "inferscope: %s\n", qPrintable(graph.openReport.message));

    // This run's choices, never saved.
    AppSettings& settings = *graph.settings;
    if (cli.isSet(themeOpt)) settings.setSessionTheme(cli.value(themeOpt));
    if (cli.isSet(panelOpt)) {
        if (cli.value(panelOpt) == QLatin1String("none"))
            settings.setInspectorVisible(false);
        else {
            settings.setInspectorVisible(true);
            settings.setInspectorTab(cli.value(panelOpt));
        }
    }
    if (cli.isSet(tintOpt)) settings.setHeatMode(cli.value(tintOpt));
    if (cli.isSet(kvOpt)) settings.setKvType(cli.value(kvOpt));
    if (cli.isSet(maxTokensOpt)) graph.chat->setMaxTokensOverride(cli.value(maxTokensOpt).toInt());
    if (cli.isSet(schemaOpt)) {
        graph.structured->setKind(StructuredOutput::Kind::JsonSchema);
        graph.structured->setText(cli.value(schemaOpt));
        if (!graph.structured->error().isEmpty()) std::fprintf(stderr, "inferscope: --json-schema: %s\n", qPrintable(graph.structured->error()));
    }
    graph.engine->setPrivateWeights(cli.isSet(noMmapOpt));
    if (screenshot) settings.setSessionWelcomeSeen(true);

    QString requested = cli.value(modelOpt);
    if (requested.isEmpty() && !cli.positionalArguments().isEmpty()) requested = cli.positionalArguments().first();
    const QString modelPath = graph.chooseStartupModel(requested, /*preferLast=*/!screenshot);
    if (!screenshot) graph.rememberLoadedModels();

    QQuickWindow* window = graph.loadWindow();
    if (!settings.fileDialogProblem().isEmpty()) std::fprintf(stderr, "inferscope: %s\n", qPrintable(settings.fileDialogProblem()));
    if (!window) {
        std::fprintf(stderr, "inferscope: the user interface failed to load\n");
        return 1;
    }

    std::unique_ptr<ScreenshotDriver> driver;  // declared after the graph: gone before it
    if (screenshot) {
        const QStringList wh = cli.value(sizeOpt).split('x');
        if (wh.size() == 2) window->resize(wh[0].toInt(), wh[1].toInt());
        driver = std::make_unique<ScreenshotDriver>(graph.engine.get(), graph.chat.get(), cli.value(shotOpt), cli.value(promptOpt));
        driver->setWindow(window);
        driver->setOpenDialog(cli.isSet(dialogOpt));
        if (cli.isSet(compareOpt)) driver->setCompareWith(cli.value(compareOpt));
        driver->setAnswerAgain(cli.isSet(againOpt));
        if (cli.isSet(temperatureOpt)) driver->setSampling(cli.value(temperatureOpt).toFloat(), cli.value(seedOpt).toULongLong());
        if (cli.isSet(rejectedOpt)) driver->setShowRejectedDraft(graph.inspector.get());
        QObject::connect(driver.get(), &ScreenshotDriver::finished, &app, [](int code) { QCoreApplication::exit(code); });
    }
    if (cli.isSet(connectOpt)) {
        const QString url = cli.value(connectOpt);
        const QString key = cli.isSet(apiKeyOpt) ? cli.value(apiKeyOpt) : qEnvironmentVariable("INFERSCOPE_API_KEY");
        EngineController* engine = graph.engine.get();
        if (cli.isSet(remoteModelOpt)) {
            engine->connectToServer(url, key, cli.value(remoteModelOpt));
        } else {  // the first model the server lists
            auto once = std::make_shared<QMetaObject::Connection>();
            *once = QObject::connect(engine, &EngineController::serverModelsChanged, engine, [engine, url, key, once] {
                if (engine->listingModels()) return;
                QObject::disconnect(*once);
                if (engine->serverModels().isEmpty()) engine->reportError(engine->serverError());
                if (engine->serverModels().isEmpty()) emit engine->loadFailed(engine->serverError());
                else engine->connectToServer(url, key, engine->serverModels().first());
            });
            engine->listServerModels(url, key);
        }
        return app.exec();
    }
    if (modelPath.isEmpty() && screenshot) {
        std::fprintf(stderr, "inferscope: --screenshot: no --model given and the bundled model was not found\n");
        return 1;
    }
    if (modelPath.isEmpty()) {
        graph.engine->reportError(QObject::tr("No model given and the bundled model was not found: open a GGUF file."));
    } else {
        graph.engine->loadModel(modelPath);
    }
    return app.exec();
}
