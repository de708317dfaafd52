#include "app/file_dialogs.h"

#include <QDir>
#include <QQmlComponent>
#include <QQmlEngine>
#include <QStandardPaths>

namespace inferscope {

QString missingFileDialogModules(QQmlEngine& engine) {
    struct Needed {
        const char* module;
        const char* package;
    };
    // The non-native FileDialog's own imports beyond what Main.qml already needs to load at all.
    static constexpr Needed kNeeded[] = {{"Qt.labs.folderlistmodel", "qml6-module-qt-labs-folderlistmodel"},
                                         {"QtQuick.Dialogs", "qml6-module-qtquick-dialogs"}};
    QStringList missing;
    QStringList packages;
    for (const Needed& n : kNeeded) {
        QQmlComponent probe(&engine);
        probe.setData(QStringLiteral("import %1\nimport QtQml\nQtObject {}\n").arg(QLatin1String(n.module)).toUtf8(),
                      QUrl(QStringLiteral("qrc:/inferscope-module-probe.qml")));
        if (probe.isError()) {
            missing << QLatin1String(n.module);
            packages << QLatin1String(n.package);
        }
    }
    if (missing.isEmpty()) return {};
    return QObject::tr("File dialogs are unavailable: the QML module %1 is not installed (Debian package %2). "
                       "Install it and restart Inferscope to open models or export conversations.")
        .arg(missing.join(QStringLiteral(", ")), packages.join(QStringLiteral(", ")));
}

QString suggestedSavePath(const QString& title, const QString& suffix) {
    QString dir = QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation);
    if (dir.isEmpty() || !QDir(dir).exists()) dir = QDir::homePath();
    QString name;
    for (const QChar c : title.trimmed()) {
        const bool bad = c == QLatin1Char('/') || c == QLatin1Char('\\') || c == QLatin1Char(':') || c.category() == QChar::Other_Control;
        name += bad ? QLatin1Char('_') : c;
    }
    name = name.left(80).trimmed();
    while (name.startsWith(QLatin1Char('.'))) name.remove(0, 1);  // no hidden files
    if (name.isEmpty()) name = QStringLiteral("export");
    return QDir(dir).filePath(name + QLatin1Char('.') + suffix);
}

}  // namespace inferscope
