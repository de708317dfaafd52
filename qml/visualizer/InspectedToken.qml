import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base
import Inferscope.Visualizer

// The head of the Layers and Attention panels: which token is looked inside (the Probabilities
// panel's selection, moved with ◀ ▶ or by following the stream), the pass that chose it, and why
// nothing is shown when the engine cannot run that pass again.
ColumnLayout {
    id: head
    required property PositionInspector inspector
    spacing: 4

    RowLayout {
        Layout.fillWidth: true
        // ◀, the label and ▶ placed by their own widths (as in the Probabilities panel).
        Row {
            Layout.alignment: Qt.AlignVCenter
            ToolButton {
                text: "◀"
                enabled: StepInspector.selection.hasStep && StepInspector.selection.step > 0
                onClicked: StepInspector.stepBy(-1)
                ToolTip.visible: hovered; ToolTip.delay: 500; ToolTip.text: qsTr("The previous token of this answer.")
            }
            Label {
                objectName: "inspectedStepLabel"
                anchors.verticalCenter: parent.verticalCenter
                text: StepInspector.selection.hasStep ? qsTr("Token %1 of %2").arg(StepInspector.selection.step + 1).arg(StepInspector.selection.stepCount) : qsTr("No token yet")
                font.bold: true
                ToolTip.visible: stepMouse.containsMouse
                ToolTip.text: qsTr("The token selected in the answer (the same one as in the Probabilities tab). Click any token of an answer to look inside it.")
                MouseArea { id: stepMouse; anchors.fill: parent; hoverEnabled: true }
            }
            ToolButton {
                objectName: "inspectedNextButton"
                text: "▶"
                enabled: StepInspector.selection.hasStep && StepInspector.selection.step + 1 < StepInspector.selection.stepCount
                onClicked: StepInspector.stepBy(1)
                ToolTip.visible: hovered; ToolTip.delay: 500; ToolTip.text: qsTr("The next token of this answer.")
            }
        }
        Item { Layout.fillWidth: true }
        CheckBox {
            text: qsTr("Follow")
            checked: StepInspector.following
            onToggled: StepInspector.following = checked
            ToolTip.visible: hovered
            ToolTip.text: qsTr("Look inside the newest token as the answer streams (as often as decoding can spare: at most %1% of its time).").arg(5)
        }
    }
    Label {
        objectName: "inspectedPass"
        visible: head.inspector.hasResult
        Layout.fillWidth: true
        Layout.preferredWidth: 100
        wrapMode: Text.Wrap
        textFormat: Text.PlainText
        text: qsTr("“%1” was chosen by the pass that ran “%2” at position %3, looking back at %4 cached tokens.")
                  .arg(Units.isolate(head.inspector.chosenToken)).arg(Units.isolate(head.inspector.inputToken)).arg(head.inspector.position).arg(head.inspector.position + 1)
        ToolTip.visible: passMouse.containsMouse
        ToolTip.text: qsTr("Each token is chosen from the logits of the forward pass over the token before it. That pass is run again here over the KV cache, with every layer's state recorded; the cache is left unchanged. It took %1 ms.").arg(head.inspector.computeMs.toFixed(1))
        MouseArea { id: passMouse; anchors.fill: parent; hoverEnabled: true }
    }
    Label {
        objectName: "inspectedShownStep"
        visible: head.inspector.hasResult && head.inspector.step !== StepInspector.selection.step
        Layout.fillWidth: true
        Layout.preferredWidth: 100
        wrapMode: Text.Wrap
        color: Theme.muted
        font.pixelSize: Theme.fontSmall
        text: qsTr("Showing token %1 until token %2 is looked inside.").arg(head.inspector.step + 1).arg(StepInspector.selection.step + 1)
    }
    Label {
        objectName: "inspectedStatus"
        visible: head.inspector.status !== "ready" && head.inspector.message !== ""
        Layout.fillWidth: true
        Layout.preferredWidth: 100
        wrapMode: Text.Wrap
        color: head.inspector.status === "notCached" || head.inspector.status === "error" ? Theme.warning : Theme.muted
        text: head.inspector.message
    }
    Label {
        visible: head.inspector.rerunAfterPrefill
        Layout.fillWidth: true
        Layout.preferredWidth: 100
        wrapMode: Text.Wrap
        color: Theme.muted
        font.pixelSize: Theme.fontSmall
        text: qsTr("The first token came from the prompt's batched prefill; run again alone, its matrix products round differently, so the last digits here may differ from the Probabilities tab.")
    }
}
