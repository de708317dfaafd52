import QtQuick
import QtQuick.Controls
import Inferscope.Base
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
            width: bar.fillWidth
            height: parent.height
            radius: 4
            color: bar.fraction > 0.9 ? Theme.danger : bar.fraction > 0.7 ? Theme.warning : Theme.accent
        }
    }
    // The count is drawn twice, each clipped to its part of the bar: dark over the empty part,
    // light over the fill, so every digit stays readable wherever the fill ends.
    readonly property real fillWidth: width * fraction
    Item {
        id: emptyPart
        x: bar.fillWidth
        width: bar.width - x
        height: bar.height
        clip: true
        Label {
            id: label
            objectName: "contextLabel"
            x: (bar.width - width) / 2 - emptyPart.x
            y: (bar.height - height) / 2
            text: qsTr("%1 / %2 tokens").arg(Theme.count(bar.used)).arg(Theme.count(bar.size))
            font.pixelSize: Theme.fontSmall
            color: Theme.text
        }
    }
    Item {
        width: bar.fillWidth
        height: bar.height
        clip: true
        Label {
            x: (bar.width - width) / 2
            y: (bar.height - height) / 2
            text: label.text
            font: label.font
            color: Theme.textOnAccent
        }
    }
    ToolTip.visible: mouse.containsMouse
    ToolTip.text: qsTr("Context: %1 of %2 positions of the KV cache hold tokens of this conversation.").arg(bar.used).arg(bar.size)
    MouseArea { id: mouse; anchors.fill: parent; hoverEnabled: true; acceptedButtons: Qt.NoButton }
}
