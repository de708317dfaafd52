import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base
import Inferscope.Chat
import Inferscope.Visualizer

// Replay: the same answer's stored logits sampled again with other settings, without running the
// model: how many tokens would have changed, and what this step would have picked.
ColumnLayout {
    id: box
    spacing: 4
    readonly property var rc: StepInspector.replay.current

    RowLayout {
        Layout.fillWidth: true
        Layout.preferredWidth: 100
        Label { text: qsTr("Replay with other settings"); font.bold: true; Layout.fillWidth: true }
        Button {
            text: qsTr("Reset")
            flat: true
            enabled: StepInspector.replay.available
            onClicked: StepInspector.replay.resetToAnswer()
        }
    }
    Label {
        visible: !StepInspector.replay.available
        Layout.fillWidth: true
        Layout.preferredWidth: 100
        wrapMode: Text.Wrap
        color: Theme.muted
        font.pixelSize: Theme.fontSmall
        objectName: "replayNote"
        text: StepInspector.replay.note
    }
    GridLayout {
        visible: StepInspector.replay.available
        Layout.fillWidth: true
        Layout.preferredWidth: 100
        columns: 2
        ParamSlider {
            objectName: "replayTemperature"
            label: qsTr("Temperature"); from: 0; to: 2; step: 0.05; decimals: 2
            value: StepInspector.replay.temperature
            onMoved: (v) => StepInspector.replay.temperature = v
            hint: qsTr("Divides the logits before the draw: below 1 sharpens the distribution, above 1 flattens it; 0 is greedy.")
        }
        ParamSlider {
            label: qsTr("Top-k"); from: 0; to: 200; step: 1; decimals: 0
            value: StepInspector.replay.topK
            onMoved: (v) => StepInspector.replay.topK = Math.round(v)
            hint: qsTr("Keeps only the k most probable tokens (0 = off).")
        }
        ParamSlider {
            label: qsTr("Top-p"); from: 0.05; to: 1; step: 0.01; decimals: 2
            value: StepInspector.replay.topP
            onMoved: (v) => StepInspector.replay.topP = v
            hint: qsTr("Nucleus sampling: keeps the smallest set of tokens whose probabilities add up to p (1 = off).")
        }
        ParamSlider {
            label: qsTr("Min-p"); from: 0; to: 0.5; step: 0.01; decimals: 2
            value: StepInspector.replay.minP
            onMoved: (v) => StepInspector.replay.minP = v
            hint: qsTr("Drops tokens less probable than min-p times the most probable one (0 = off).")
        }
    }
    Label {
        objectName: "replaySummary"
        visible: StepInspector.replay.available
        Layout.fillWidth: true
        Layout.preferredWidth: 100
        wrapMode: Text.Wrap
        text: StepInspector.replay.error !== "" ? StepInspector.replay.error
              : qsTr("%1 of %2 tokens would change.").arg(StepInspector.replay.changedCount).arg(StepInspector.selection.stepCount)
        color: StepInspector.replay.changedCount > 0 ? Theme.decode : Theme.text
        font.bold: true
    }
    Label {
        visible: StepInspector.replay.available && box.rc.token !== undefined
        Layout.fillWidth: true
        Layout.preferredWidth: 100
        wrapMode: Text.Wrap
        font.pixelSize: Theme.fontSmall
        text: box.rc.token === undefined ? "" :
              (box.rc.changed ? qsTr("Here it would pick “%1” (%2%) instead.") : qsTr("Here it would pick the same “%1” (%2%)."))
                .arg(Units.isolate(box.rc.token)).arg((box.rc.pFinal * 100).toFixed(1))
    }
    Label {
        visible: StepInspector.replay.available
        Layout.fillWidth: true
        Layout.preferredWidth: 100
        wrapMode: Text.Wrap
        color: Theme.muted
        font.pixelSize: Theme.fontSmall
        text: StepInspector.replay.inexactCount === 0
              ? qsTr("Exact: the stored logits (%1% of the probability at the least covered step) decide every step.").arg((StepInspector.replay.minStoredMass * 100).toFixed(1))
              : qsTr("Approximate at %1 steps: these settings reach beyond the stored logits, which hold as little as %2% of a step's probability.")
                  .arg(StepInspector.replay.inexactCount).arg((StepInspector.replay.minStoredMass * 100).toFixed(1))
    }
    CheckBox {
        visible: StepInspector.replay.available
        text: qsTr("Mark the changed tokens in the text")
        checked: ChatController.messages.heatMode === "replay"
        onToggled: ChatController.messages.heatMode = checked ? "replay" : AppSettings.heatMode
    }
}
