// AppSettings' first-run flag: saved once the welcome is closed; a session value, or any value while
// the settings are not persistent (--screenshot), never written, even when another setting is saved.
#include <QSettings>
#include <QStandardPaths>
#include <QTest>

#include "settings/app_settings.h"

using namespace inferscope;

class TestAppSettings : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QCoreApplication::setOrganizationName(QStringLiteral("InferscopeSettingsTests"));
        QCoreApplication::setApplicationName(QStringLiteral("tst_app_settings"));
    }
    void init() { QSettings().clear(); }

    void welcomeSeenIsSaved() {
        {
            AppSettings s(nullptr);
            QCOMPARE(s.welcomeSeen(), false);
            s.setWelcomeSeen(true);
        }
        AppSettings again(nullptr);
        QCOMPARE(again.welcomeSeen(), true);
    }

    // The bundled model is always in the model menu's list (after the recent ones), never twice.
    void bundledModelIsAlwaysAChoice() {
        AppSettings s(nullptr);
        s.setPersistent(false);
        s.setBundledModel(QStringLiteral("/opt/inferscope/models/stories260K.gguf"));
        QCOMPARE(s.modelChoices(), QStringList{QStringLiteral("/opt/inferscope/models/stories260K.gguf")});
        s.noteModelLoaded(QStringLiteral("/m/tiny.gguf"));
        QCOMPARE(s.modelChoices(), (QStringList{QStringLiteral("/m/tiny.gguf"), QStringLiteral("/opt/inferscope/models/stories260K.gguf")}));
    }

    void sessionValueIsNotSaved() {
        {
            AppSettings s(nullptr);
            s.setSessionWelcomeSeen(true);
            QCOMPARE(s.welcomeSeen(), true);
            s.setInspectorTab(QStringLiteral("timeline"));  // saves the other settings
        }
        AppSettings again(nullptr);
        QCOMPARE(again.welcomeSeen(), false);
        QCOMPARE(again.inspectorTab(), QStringLiteral("timeline"));
    }

    void notSavedWhenNotPersistent() {  // --screenshot: the user's settings are left alone
        {
            AppSettings s(nullptr);
            s.setPersistent(false);
            s.setWelcomeSeen(true);
            QCOMPARE(s.welcomeSeen(), true);
        }
        AppSettings again(nullptr);
        QCOMPARE(again.welcomeSeen(), false);
    }
};

QTEST_GUILESS_MAIN(TestAppSettings)
#include "tst_app_settings.moc"
