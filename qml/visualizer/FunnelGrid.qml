import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope

// The same candidates after each sampler stage, left to right: raw softmax, penalty, top-k,
// top-p, min-p, temperature (the distribution actually sampled). A cell's bar is the token's
// probability at that stage; an empty cell means the stage removed it.
GridLayout {
    id: grid
    property var candidates: []
    property var survivors: []
    property var stages: []
    property int rows: 10
    columns: stages.length + 1
    columnSpacing: 3
    rowSpacing: 3

    readonly property var hints: ({
        "raw": qsTr("The model's logits through a softmax at temperature 1."),
        "penalty": qsTr("Repetition penalty: tokens seen recently made less likely."),
        "top-k": qsTr("Top-k: only the k most probable tokens stay."),
        "top-p": qsTr("Top-p (nucleus): the smallest set whose probabilities add up to p stays."),
        "min-p": qsTr("Min-p: tokens below min-p × the top probability go."),
        "temperature": qsTr("Temperature reshapes what is left; the token is drawn from this distribution.")
    })

    Label { text: qsTr("token"); color: Theme.muted; font.pixelSize: Theme.fontSmall }
    Repeater {
        model: grid.stages
        delegate: Label {
            required property string modelData
            required property int index
            // Columns are narrow: "temperature" ran into "min-p". The full name is in the tooltip.
            text: (modelData === "temperature" ? qsTr("temp.") : modelData) + "\n" + (grid.survivors.length > index ? grid.survivors[index] : "")
            horizontalAlignment: Text.AlignHCenter
            clip: true  // not elide: eliding two lines changes the height with the width (a polish loop)
            font.pixelSize: Theme.fontSmall - 1
            color: Theme.muted
            Layout.fillWidth: true
            Layout.preferredWidth: 10
            ToolTip.visible: stageMouse.containsMouse
            ToolTip.text: modelData + ": " + (grid.hints[modelData] ?? "") + "\n" + qsTr("%1 candidates left.").arg(grid.survivors.length > index ? grid.survivors[index] : "?")
            MouseArea { id: stageMouse; anchors.fill: parent; hoverEnabled: true }
        }
    }

    Repeater {
        model: Math.min(grid.rows, grid.candidates.length) * (grid.stages.length + 1)
        delegate: Item {
            required property int index
            readonly property int r: Math.floor(index / (grid.stages.length + 1))
            readonly property int c: index % (grid.stages.length + 1)
            readonly property var cand: grid.candidates[r]
            Layout.fillWidth: c > 0
            Layout.preferredWidth: c === 0 ? 70 : 10
            implicitHeight: 16
            Label {
                visible: parent.c === 0
                anchors.fill: parent
                text: parent.cand ? parent.cand.token : ""
                textFormat: Text.PlainText
                font.family: "monospace"
                font.pixelSize: Theme.fontSmall
                font.bold: parent.cand && parent.cand.chosen
                color: parent.cand && parent.cand.chosen ? Theme.accent : Theme.text
                elide: Text.ElideRight
            }
            Rectangle {
                visible: parent.c > 0
                anchors.fill: parent
                color: Theme.surfaceAlt
                radius: 2
                readonly property real p: parent.cand && parent.c > 0 ? parent.cand.p[parent.c - 1] : 0
                Rectangle {
                    width: parent.width * Math.min(1, parent.p)
                    height: parent.height
                    radius: 2
                    color: parent.parent.c === grid.stages.length ? Theme.decode : Theme.prefill
                    visible: parent.p > 0
                }
                Label {
                    anchors.centerIn: parent
                    text: parent.p > 0 ? (parent.p * 100).toFixed(parent.p < 0.1 ? 1 : 0) : "×"
                    font.pixelSize: 9
                    // Centred: over the bar once it reaches the middle.
                    color: parent.p <= 0 ? Theme.muted : parent.p < 0.5 ? Theme.text
                         : parent.parent.c === grid.stages.length ? Theme.textOnDecode : Theme.textOnPrefill
                }
            }
        }
    }
}
