import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base
import Inferscope.Library
import Inferscope

// One GGUF file of a hub repository (a row of ModelDownloads.files): its size, shape and fit, what
// of it is here already, and its one action — Download, Resume (a part is kept), or Open.
ItemDelegate {
    id: fileRow
    required property var modelData
    required property int index
    objectName: "hubFile" + index

    signal openFile(string path)

    readonly property bool here: modelData.downloaded === true
    readonly property real kept: modelData.kept ?? 0
    readonly property string room: modelData.room ?? ""

    background: Rectangle { color: fileRow.hovered ? Theme.surfaceAlt : "transparent"; radius: 4 }
    contentItem: RowLayout {
        spacing: Theme.spacing
        ColumnLayout {
            Layout.fillWidth: true
            spacing: 2
            Label { text: fileRow.modelData.path; color: Theme.text; font.bold: true; elide: Text.ElideMiddle; Layout.fillWidth: true }
            Label {
                objectName: "hubFileFit"
                Layout.fillWidth: true
                wrapMode: Text.Wrap
                font.pixelSize: Theme.fontSmall
                text: Theme.bytes(fileRow.modelData.bytes) + " · " + fileRow.modelData.fitText
                color: fileRow.modelData.fit === "fits" ? Theme.success : fileRow.modelData.fit === "smaller" ? Theme.warning
                     : fileRow.modelData.fit === "no" ? Theme.danger : Theme.muted
            }
            Label {
                objectName: "hubFileLocal"
                Layout.fillWidth: true
                visible: text !== ""
                wrapMode: Text.Wrap
                font.pixelSize: Theme.fontSmall
                color: fileRow.room !== "" ? Theme.danger : Theme.muted
                text: fileRow.room !== "" ? fileRow.room
                      : fileRow.here ? qsTr("Downloaded: in your models folder")
                      : fileRow.kept > 0 ? qsTr("%1 of %2 downloaded before: the download goes on from there")
                                               .arg(Theme.bytes(fileRow.kept)).arg(Theme.bytes(fileRow.modelData.bytes))
                      : ""
            }
        }
        Button {
            objectName: "hubDownload" + fileRow.index
            text: fileRow.here ? qsTr("Open") : fileRow.kept > 0 ? qsTr("Resume") : qsTr("Download")
            enabled: fileRow.here || (!ModelDownloads.downloading && fileRow.room === "")
            onClicked: fileRow.here ? fileRow.openFile(fileRow.modelData.localPath) : ModelDownloads.download(fileRow.modelData.path)
        }
    }
}
