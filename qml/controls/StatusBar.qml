import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope

// Model, engine, context used, prefill and decode speed, time to first token, memory.
Rectangle {
    implicitHeight: row.implicitHeight + 10
    color: Theme.surface
    Rectangle { anchors.top: parent.top; width: parent.width; height: 1; color: Theme.border }

    RowLayout {
        id: row
        anchors.fill: parent
        anchors.leftMargin: Theme.spacing * 1.5
        anchors.rightMargin: Theme.spacing * 1.5
        spacing: Theme.spacing * 2

        Label {
            objectName: "stateLabel"
            text: ["No model", "Loading", "Ready", "Prefilling", "Decoding", "Stopping"][EngineController.state]
            color: EngineController.state >= EngineController.Prefilling ? Theme.decode : Theme.muted
            font.bold: true
            font.pixelSize: Theme.fontSmall
        }
        Label {
            text: EngineController.hasModel ? EngineController.modelName : ""
            font.pixelSize: Theme.fontSmall
            color: Theme.text
            elide: Text.ElideRight
            Layout.maximumWidth: 200
        }
        Label {
            text: EngineController.deviceDescription
            font.pixelSize: Theme.fontSmall
            color: Theme.muted
        }
        ContextBar {
            objectName: "contextBar"
            used: EngineController.contextUsed
            size: Math.max(1, EngineController.contextLength)
        }
        Label {
            objectName: "prefillRate"
            text: qsTr("prefill %1 tok/s").arg(Theme.rate(EngineController.prefillTokensPerSecond))
            font.pixelSize: Theme.fontSmall
            color: Theme.prefill
            ToolTip.visible: prefillMouse.containsMouse
            ToolTip.text: qsTr("Prefill runs the whole prompt in one batched pass: compute-bound, so it is fast per token.")
            MouseArea { id: prefillMouse; anchors.fill: parent; hoverEnabled: true }
        }
        Label {
            objectName: "decodeRate"
            text: qsTr("decode %1 tok/s").arg(Theme.rate(EngineController.decodeTokensPerSecond))
            font.pixelSize: Theme.fontSmall
            color: Theme.decode
            ToolTip.visible: decodeMouse.containsMouse
            ToolTip.text: qsTr("Decode makes one token per pass, reading every weight each time: bound by memory bandwidth.")
            MouseArea { id: decodeMouse; anchors.fill: parent; hoverEnabled: true }
        }
        Label {
            text: qsTr("first token %1").arg(Theme.ms(EngineController.timeToFirstTokenMs))
            font.pixelSize: Theme.fontSmall
            color: Theme.muted
            ToolTip.visible: ttftMouse.containsMouse
            ToolTip.text: qsTr("Time to first token: the prompt's prefill plus the first sampling step, the wait before text appears.")
            MouseArea { id: ttftMouse; anchors.fill: parent; hoverEnabled: true }
        }
        Item { Layout.fillWidth: true }
        Label {
            objectName: "memoryLabel"
            text: qsTr("memory %1 (weights %2 + KV cache %3)")
                    .arg(Theme.bytes(EngineController.weightBytes + EngineController.kvBytesReserved))
                    .arg(Theme.bytes(EngineController.weightBytes))
                    .arg(Theme.bytes(EngineController.kvBytesReserved))
            font.pixelSize: Theme.fontSmall
            color: Theme.muted
            ToolTip.visible: memoryMouse.containsMouse
            ToolTip.text: qsTr("The model's weights plus the KV cache, which the engine reserves for the whole context when the model loads.")
            MouseArea { id: memoryMouse; anchors.fill: parent; hoverEnabled: true }
        }
    }
}
