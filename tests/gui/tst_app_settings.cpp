// AppSettings' first-run flag: saved once the welcome is closed; a session value, or any value while
// the settings are not persistent (--screenshot), never written, even when another setting is saved.
#include <QSettings>
#include <QSignalSpy>
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

    // The chat's tint choice is saved; a name this version does not know comes back as "off".
    void heatModeIsSaved() {
        {
            AppSettings s(nullptr);
            QCOMPARE(s.heatMode(), QStringLiteral("probability"));
            QSignalSpy spy(&s, &AppSettings::heatModeChanged);
            s.setHeatMode(QStringLiteral("surprisal"));
            QCOMPARE(spy.count(), 1);
            s.setWindowGeometry(QRect(1, 2, 300, 400));  // another setting: the tint is not re-announced
            QCOMPARE(spy.count(), 1);
        }
        {
            AppSettings again(nullptr);
            QCOMPARE(again.heatMode(), QStringLiteral("surprisal"));
        }
        QSettings().setValue("chat/heatMode", QStringLiteral("rainbow"));
        AppSettings garbled(nullptr);
        QCOMPARE(garbled.heatMode(), QStringLiteral("off"));
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
