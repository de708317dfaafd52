import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base
import Inferscope.Engine
import Inferscope

// Shown while a model loads on the worker thread: which file, how far, what is being prepared.
Rectangle {
    visible: EngineController.state === EngineController.Loading
    implicitHeight: visible ? layout.implicitHeight + 2 * Theme.spacing : 0
    color: Theme.accentSoft

    RowLayout {
        id: layout
        anchors.fill: parent
        anchors.margins: Theme.spacing
        spacing: Theme.spacing * 2
        Label {
            text: qsTr("Loading %1").arg(EngineController.loading.path)
            color: Theme.text
            font.bold: true
        }
        ProgressBar {
            objectName: "loadProgress"
            Layout.fillWidth: true
            from: 0
            to: 1
            value: EngineController.loading.progress
        }
        Label {
            text: Math.round(EngineController.loading.progress * 100) + "% · " + EngineController.loading.stage
            color: Theme.muted
            font.pixelSize: Theme.fontSmall
            Layout.preferredWidth: 260
            elide: Text.ElideMiddle
        }
    }
}
