#pragma once
// What the app's file dialogs need at run time, and where a save goes unless the user says otherwise.
//
// Qt 6.4's non-native FileDialog (every file dialog on a Linux desktop without a platform dialog)
// imports Qt.labs.folderlistmodel only when it is first opened, and crashes when that module is
// missing. The app checks at start-up and shows a message instead of opening the dialog.
#include <QString>

class QQmlEngine;

namespace inferscope {

// "" when every QML module the file dialogs load at run time is found by `engine`; else one
// sentence naming the missing module and the Debian package that provides it.
QString missingFileDialogModules(QQmlEngine& engine);

// Where "Save as" starts: the user's Documents folder (home when there is none), the file named
// after `title` (characters a file name cannot hold replaced by '_', at most 80 characters;
// "export" when nothing is left) with `suffix` ("md", "json", "csv", "png").
QString suggestedSavePath(const QString& title, const QString& suffix);

}  // namespace inferscope
