// QtQuickTest runner for tests/qml/tst_*.qml: the app's object graph (AppGraph; the QML modules'
// singletons) with no model loaded, so each component is tested on synthetic data.
#include <QGuiApplication>
#include <QQmlEngine>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtQml/qqmlextensionplugin.h>
#include <QtQuickTest>
#include <memory>

#include "app/app_graph.h"

#include "app/qml_modules.h"  // Q_IMPORT_QML_PLUGIN of each module

using namespace inferscope;

class Setup : public QObject {
    Q_OBJECT
public slots:
    void applicationAvailable() {
        QStandardPaths::setTestModeEnabled(true);
        QCoreApplication::setOrganizationName(QStringLiteral("InferscopeTests"));
        graph_ = std::make_unique<AppGraph>(AppGraph::Options{});
        // The welcome looks for models: in an empty home, never the user's folders or caches.
        catalog::Environment env;
        env.home = libraryHome_.path().toStdString();
        env.systemOllamaModels = env.home + "/system-ollama";
        graph_->library->setEnvironment(env);
    }
    void qmlEngineAvailable(QQmlEngine* engine) { AppGraph::prepareQmlEngine(*engine); }
    void cleanupTestCase() { graph_->shutDown(); }

private:
    QTemporaryDir libraryHome_;
    std::unique_ptr<AppGraph> graph_;
};

QUICK_TEST_MAIN_WITH_SETUP(inferscope_qml, Setup)
#include "tst_qml_main.moc"
