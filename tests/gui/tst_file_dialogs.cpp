// The file dialogs' run-time needs and "Save as" defaults (gui/app/file_dialogs.h): a missing QML
// module is named with its Debian package (Qt 6.4's FileDialog crashed on open without it), and
// the suggested file is named after the conversation in the Documents folder.
#include <QDir>
#include <QFileInfo>
#include <QQmlEngine>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include "app/file_dialogs.h"

using namespace inferscope;

class TestFileDialogs : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    // First: once a module is loaded, the process keeps it whatever the import path says.
    void aMissingModuleIsNamedWithItsPackage() {
        QTemporaryDir empty;
        QQmlEngine engine;
        engine.setImportPathList({empty.path()});  // no installed QML modules at all
        const QString message = missingFileDialogModules(engine);
        QVERIFY2(message.startsWith(QStringLiteral("File dialogs are unavailable: the QML module Qt.labs.folderlistmodel")),
                 qPrintable(message));
        QVERIFY2(message.contains(QStringLiteral("(Debian package qml6-module-qt-labs-folderlistmodel")), qPrintable(message));
    }

    void presentModulesGiveNoMessage() {
        QQmlEngine engine;
        QCOMPARE(missingFileDialogModules(engine), QString());
    }

    void suggestedPathIsNamedAfterTheTitle() {
        QString dir = QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation);
        if (dir.isEmpty() || !QDir(dir).exists()) dir = QDir::homePath();
        QCOMPARE(suggestedSavePath(QStringLiteral("Once upon a time"), QStringLiteral("md")),
                 QDir(dir).filePath(QStringLiteral("Once upon a time.md")));
        QCOMPARE(suggestedSavePath(QStringLiteral("a/b: c\\d"), QStringLiteral("json")), QDir(dir).filePath(QStringLiteral("a_b_ c_d.json")));
        QCOMPARE(suggestedSavePath(QStringLiteral("  "), QStringLiteral("csv")), QDir(dir).filePath(QStringLiteral("export.csv")));
        QCOMPARE(suggestedSavePath(QStringLiteral("..hidden"), QStringLiteral("png")), QDir(dir).filePath(QStringLiteral("hidden.png")));
        QCOMPARE(QFileInfo(suggestedSavePath(QString(200, QLatin1Char('x')), QStringLiteral("md"))).fileName().size(), 83);
    }
};

QTEST_MAIN(TestFileDialogs)
#include "tst_file_dialogs.moc"
