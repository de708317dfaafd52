import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base

// "Save as": one path field, filled with AppSettings.suggestedSavePath (the Documents folder and a
// name from the title) and the name selected, so typing replaces it; Enter saves.
// Qt 6.4's non-native FileDialog in save mode doubled the folder of a typed name
// ("DIR//DIR/name.md") and could not suggest a name for a file that does not exist yet.
Dialog {
    id: dialog
    property string suggestedName: ""   // the conversation's title, say
    property string suffix: "md"
    // path as typed; fileUrl the same as a file:// URL (each part percent-encoded: '#', '?', '%').
    signal chosen(string path, url fileUrl)

    parent: Overlay.overlay
    anchors.centerIn: parent
    width: Math.min(560, parent ? parent.width - 4 * Theme.spacing : 560)
    modal: true
    title: qsTr("Save as")
    standardButtons: Dialog.Save | Dialog.Cancel

    onAboutToShow: {
        pathField.text = AppSettings.suggestedSavePath(suggestedName, suffix)
        const slash = pathField.text.lastIndexOf("/") + 1
        const dot = pathField.text.lastIndexOf(".")
        pathField.select(slash, dot > slash ? dot : pathField.text.length)
        pathField.forceActiveFocus()
    }
    onAccepted: {
        const path = pathField.text.trim()
        if (path !== "") dialog.chosen(path, "file://" + path.split("/").map(encodeURIComponent).join("/"))
    }

    ColumnLayout {
        anchors.fill: parent
        spacing: Theme.spacing
        Label { text: qsTr("File"); color: Theme.muted; font.pixelSize: Theme.fontSmall }
        TextField {
            id: pathField
            objectName: "savePathField"
            Layout.fillWidth: true
            selectByMouse: true
            Accessible.name: qsTr("File to save")
            onAccepted: dialog.accept()
        }
    }
}
