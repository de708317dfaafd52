import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base
import Inferscope.Engine
import Inferscope

// Model, engine, context used, prefill and decode speed, kernel set, time to first token, memory.
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
        // What the labels that always show need side by side (the memory label at its shortest);
        // on a narrow window the kernel set, then the time to first token give way rather than
        // push the memory label past the window's edge.
        readonly property real essential: stateLabel.implicitWidth + (contextBar.visible ? contextBar.implicitWidth + spacing : 0)
                + (prefillRate.visible ? prefillRate.implicitWidth + spacing : 0) + (decodeRate.visible ? decodeRate.implicitWidth + spacing : 0)
                + (memory.visible ? shortMemory.advanceWidth + spacing : 0)
        readonly property bool roomForFirstToken: essential + firstTokenLabel.implicitWidth + spacing <= width
        readonly property bool roomForKernels: essential + firstTokenLabel.implicitWidth + kernelSetLabel.implicitWidth + 2 * spacing <= width
        TextMetrics { id: shortMemory; font.pixelSize: Theme.fontSmall; text: qsTr("memory %1").arg(memory.total) }

        Label {
            id: stateLabel
            objectName: "stateLabel"
            text: ["No model", "Loading", "Ready", "Prefilling", "Decoding", "Stopping"][EngineController.state]
            color: EngineController.state >= EngineController.Prefilling ? Theme.decode : Theme.muted
            font.bold: true
            font.pixelSize: Theme.fontSmall
        }
        // The model's name, engine and precision are in the top bar. Without a model there is no
        // context, speed or memory to show ("0 / 1 tokens", "memory 0 B" said nothing true).
        ContextBar {
            id: contextBar
            objectName: "contextBar"
            visible: EngineController.abilities.showsCache  // this machine's cache only
            implicitWidth: 150
            used: EngineController.figures.contextUsed
            size: Math.max(1, EngineController.loaded.contextLength)
        }
        Label {
            id: prefillRate
            objectName: "prefillRate"
            visible: EngineController.hasModel && !EngineController.abilities.overNetwork  // the engine's own timing only
            text: qsTr("prefill %1 tok/s").arg(Theme.rate(EngineController.figures.prefillTokensPerSecond))
            font.pixelSize: Theme.fontSmall
            color: Theme.prefill
            ToolTip.visible: prefillMouse.containsMouse
            ToolTip.text: qsTr("Prefill runs the whole prompt in one batched pass: compute-bound, so it is fast per token.")
            MouseArea { id: prefillMouse; anchors.fill: parent; hoverEnabled: true }
        }
        Label {
            id: decodeRate
            objectName: "decodeRate"
            visible: EngineController.hasModel
            text: qsTr("decode %1 tok/s").arg(Theme.rate(EngineController.figures.decodeTokensPerSecond))
            font.pixelSize: Theme.fontSmall
            color: Theme.decode
            ToolTip.visible: decodeMouse.containsMouse
            ToolTip.text: qsTr("Decode makes one token per pass, reading every weight each time: bound by memory bandwidth.")
            MouseArea { id: decodeMouse; anchors.fill: parent; hoverEnabled: true }
        }
        Label {
            id: kernelSetLabel
            objectName: "kernelSetLabel"
            visible: EngineController.abilities.runsExperiments && row.roomForKernels  // this machine's engine only
            text: qsTr("kernels %1").arg(EngineController.loaded.kernelSet)
            font.pixelSize: Theme.fontSmall
            color: Theme.muted
            ToolTip.visible: kernelMouse.containsMouse
            ToolTip.text: qsTr("The instruction set of the hand-written kernels, chosen for this CPU at start (INFERSCOPE_KERNELS=portable|avx2|avx512 forces one).")
            MouseArea { id: kernelMouse; anchors.fill: parent; hoverEnabled: true }
        }
        Label {
            id: firstTokenLabel
            objectName: "firstTokenLabel"
            visible: EngineController.hasModel && row.roomForFirstToken
            text: qsTr("first token %1").arg(Theme.ms(EngineController.figures.timeToFirstTokenMs))
            font.pixelSize: Theme.fontSmall
            color: Theme.muted
            ToolTip.visible: ttftMouse.containsMouse
            ToolTip.text: EngineController.abilities.overNetwork ? qsTr("Time to first token, measured by this app: the server's prefill and the network.")
                                                    : qsTr("Time to first token: the prompt's prefill plus the first sampling step, the wait before text appears.")
            MouseArea { id: ttftMouse; anchors.fill: parent; hoverEnabled: true }
        }
        // The memory, whole when there is room ("memory 3.62 MiB (weights 1.12 MiB + KV cache 2.5 MiB)"),
        // else the total alone, its parts in the tooltip: at 820 px the whole line was cut off at
        // the window's edge. It takes the room the labels before it leave.
        Item {
            id: memory
            Layout.fillWidth: true
            Layout.minimumWidth: memoryLabel.implicitWidth
            implicitHeight: memoryLabel.implicitHeight
            visible: EngineController.abilities.showsCache  // this machine's memory only
            readonly property string total: Theme.bytes(EngineController.loaded.weightBytes + EngineController.loaded.kvBytesReserved)
            readonly property string whole: qsTr("memory %1 (weights %2 + KV cache %3)").arg(total)
                    .arg(Theme.bytes(EngineController.loaded.weightBytes)).arg(Theme.bytes(EngineController.loaded.kvBytesReserved))
            TextMetrics { id: wholeMetrics; font: memoryLabel.font; text: memory.whole }
            Label {
                id: memoryLabel
                objectName: "memoryLabel"
                anchors.right: parent.right
                anchors.verticalCenter: parent.verticalCenter
                text: wholeMetrics.advanceWidth <= memory.width ? memory.whole : qsTr("memory %1").arg(memory.total)
                font.pixelSize: Theme.fontSmall
                color: Theme.muted
                ToolTip.visible: memoryMouse.containsMouse
                ToolTip.text: memory.whole + "\n" + qsTr("The model's weights plus the KV cache, which the engine reserves for the whole context when the model loads.")
                MouseArea { id: memoryMouse; anchors.fill: parent; hoverEnabled: true }
            }
        }
    }
}
