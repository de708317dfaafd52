import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base
import Inferscope.Visualizer

// The same candidates after each sampler stage, left to right: raw softmax, penalty, grammar, top-k,
// top-p, min-p, temperature (the distribution actually sampled). A cell's bar is the token's
// probability at that stage; "×" means the stage removed it. The header (each stage and how many
// candidates it kept, its explanation on hover) is QML; the cells are one painted FunnelChart.
ColumnLayout {
    id: grid
    property var candidates: []
    property var survivors: []
    property var stages: []
    property int rows: 10
    readonly property alias chart: chart
    spacing: 3

    readonly property var hints: ({
        "raw": qsTr("The model's logits through a softmax at temperature 1."),
        "penalty": qsTr("Bias and penalties: a logit bias asked for, then tokens seen recently made less likely (repetition, frequency and presence penalties)."),
        "grammar": qsTr("Grammar: only the tokens the structured-output grammar allows next stay."),
        "top-k": qsTr("Top-k: only the k most probable tokens stay."),
        "top-p": qsTr("Top-p (nucleus): the smallest set whose probabilities add up to p stays."),
        "min-p": qsTr("Min-p: tokens below min-p × the top probability go."),
        "temperature": qsTr("Temperature reshapes what is left; the token is drawn from this distribution.")
    })

    Row {
        spacing: chart.spacing
        Label { text: qsTr("token"); color: Theme.muted; font.pixelSize: Theme.fontSmall; width: chart.tokenWidth }
        Repeater {
            model: grid.stages
            delegate: Label {
                required property string modelData
                required property int index
                width: chart.cellWidth  // the chart's own columns
                // Columns are narrow: "temperature" ran into "min-p", "grammar" was cut to "rramma".
                // The full name is in the tooltip.
                text: (modelData === "temperature" ? qsTr("temp.") : modelData === "grammar" ? qsTr("gramm.") : modelData) + "\n" + (grid.survivors.length > index ? grid.survivors[index] : "")
                horizontalAlignment: Text.AlignHCenter
                clip: true  // not elide: eliding two lines changes the height with the width (a polish loop)
                font.pixelSize: Theme.fontSmall - 1
                color: Theme.muted
                ToolTip.visible: stageMouse.containsMouse
                ToolTip.text: modelData + ": " + (grid.hints[modelData] ?? "") + "\n" + qsTr("%1 candidates left.").arg(grid.survivors.length > index ? grid.survivors[index] : "?")
                MouseArea { id: stageMouse; anchors.fill: parent; hoverEnabled: true }
            }
        }
    }

    FunnelChart {
        id: chart
        objectName: "funnelChart"
        Layout.fillWidth: true
        Layout.preferredHeight: implicitHeight
        candidates: grid.candidates
        stageCount: grid.stages.length
        rows: grid.rows
        tokenWidth: 70
        spacing: 3
        rowHeight: 16
        textColor: Theme.text
        mutedColor: Theme.muted
        accentColor: Theme.accent
        cellColor: Theme.surfaceAlt
        barColor: Theme.prefill
        lastBarColor: Theme.decode
        textOnBarColor: Theme.textOnPrefill
        textOnLastBarColor: Theme.textOnDecode
        tokenFont.family: "monospace"
        tokenFont.pixelSize: Theme.fontSmall
        valueFont.pixelSize: 9
    }
}
