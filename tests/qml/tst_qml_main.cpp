// QtQuickTest runner for tests/qml/tst_*.qml: creates the app's singletons (QML's Inferscope
// module uses them) with no model loaded, so each component is tested on synthetic data.
#include <QGuiApplication>
#include <QQmlEngine>
#include <QStandardPaths>
#include <QtQml/qqmlextensionplugin.h>
#include <QtQuickTest>

#include "settings/app_settings.h"
#include "chat/chat_controller.h"
#include "store/chat_store.h"
#include "engine/engine_controller.h"
#include "settings/sampling_settings.h"
#include "visualizer/step_inspector.h"
#include "visualizer/timeline_model.h"

Q_IMPORT_QML_PLUGIN(InferscopePlugin)

using namespace inferscope;

class Setup : public QObject {
    Q_OBJECT
public slots:
    void applicationAvailable() {
        QStandardPaths::setTestModeEnabled(true);
        QCoreApplication::setOrganizationName(QStringLiteral("InferscopeTests"));
        settings_ = std::make_unique<AppSettings>(nullptr);
        sampling_ = std::make_unique<SamplingSettings>(nullptr);
        engine_ = std::make_unique<EngineController>(nullptr);
        store_.open(QStringLiteral(":memory:"));
        chat_ = std::make_unique<ChatController>(engine_.get(), sampling_.get(), &store_);
        AppSettings::setInstance(settings_.get());
        SamplingSettings::setInstance(sampling_.get());
        EngineController::setInstance(engine_.get());
        ChatController::setInstance(chat_.get());
        inspector_ = std::make_unique<StepInspector>(chat_.get(), nullptr);
        StepInspector::setInstance(inspector_.get());
        timeline_ = std::make_unique<TimelineModel>(chat_.get(), inspector_.get(), nullptr);
        TimelineModel::setInstance(timeline_.get());
    }
    void qmlEngineAvailable(QQmlEngine* engine) { engine->addImportPath(QStringLiteral("qrc:/")); }
    void cleanupTestCase() {
        timeline_.reset();
        inspector_.reset();
        chat_.reset();
        engine_.reset();
    }

private:
    std::unique_ptr<AppSettings> settings_;
    std::unique_ptr<SamplingSettings> sampling_;
    std::unique_ptr<EngineController> engine_;
    ChatStore store_;
    std::unique_ptr<ChatController> chat_;
    std::unique_ptr<StepInspector> inspector_;
    std::unique_ptr<TimelineModel> timeline_;
};

QUICK_TEST_MAIN_WITH_SETUP(inferscope_qml, Setup)
#include "tst_qml_main.moc"
