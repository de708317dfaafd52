import QtQuick
import QtQuick.Controls
import Inferscope

// Context used / context size as a bar: how much of the KV cache the conversation fills.
Item {
    id: bar
    property int used: 0
    property int size: 1
    readonly property real fraction: size > 0 ? Math.min(1, used / size) : 0
    implicitWidth: 180
    implicitHeight: 18

    Rectangle {
        anchors.fill: parent
        radius: 4
        color: Theme.surfaceAlt
        border.color: Theme.border
        Rectangle {
            width: parent.width * bar.fraction
            height: parent.height
            radius: 4
            color: bar.fraction > 0.9 ? Theme.danger : bar.fraction > 0.7 ? Theme.warning : Theme.accent
        }
    }
    Label {
        objectName: "contextLabel"
        anchors.centerIn: parent
        text: qsTr("%1 / %2 tokens").arg(Theme.count(bar.used)).arg(Theme.count(bar.size))
        font.pixelSize: Theme.fontSmall
        color: bar.fraction > 0.5 ? Theme.onAccent : Theme.text
    }
    ToolTip.visible: mouse.containsMouse
    ToolTip.text: qsTr("Context: %1 of %2 positions of the KV cache hold tokens of this conversation.").arg(bar.used).arg(bar.size)
    MouseArea { id: mouse; anchors.fill: parent; hoverEnabled: true; acceptedButtons: Qt.NoButton }
}
