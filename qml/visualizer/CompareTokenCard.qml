import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base
import Inferscope.Visualizer

// The selected token of a compared answer under both models, side by side: how far the two
// distributions are apart there, the leading tokens of each with their probability under both
// (raw, and as each model's sampler would have drawn them with the answer's settings), and B's
// sampler funnel beside the one above (A's, from the answer's own record). Every figure comes from
// CompareModel.tokenAt (core's compareTeacherForced with CompareDetail); none is computed here.
ColumnLayout {
    id: card
    objectName: "compareTokenCard"
    required property var comparison
    required property string modelA
    required property string modelB
    // Re-read when the result or the selected step changes.
    readonly property var token: comparison.hasResult && StepInspector.selection.hasStep
                                 ? comparison.tokenAt(StepInspector.selection.row, StepInspector.selection.step) : ({})
    readonly property bool shown: token.kl !== undefined
    readonly property var candidates: (token.candidates ?? []).map((c) => Object.assign({ token: StepInspector.tokenText(c.id) }, c))
    readonly property var b: token.b ?? ({})
    readonly property var funnelB: (b.candidates ?? []).map((c) => Object.assign({ token: StepInspector.tokenText(c.id) }, c))
    readonly property bool staged: funnelB.length > 0
    visible: shown
    spacing: 4

    function percent(v) { return v < 0 ? "—" : v === 0 ? "×" : (v * 100).toFixed(v < 0.01 ? 2 : 1) + "%" }
    function quoted(id) { return "“" + Units.isolate(StepInspector.tokenText(id)) + "”" }

    Label {
        text: qsTr("This token under both models")
        font.bold: true
    }
    Label {
        objectName: "compareTokenSummary"
        Layout.fillWidth: true
        Layout.preferredWidth: 100
        wrapMode: Text.Wrap
        textFormat: Text.PlainText
        font.pixelSize: Theme.fontSmall
        text: !card.shown ? ""
              : qsTr("%1: A %2, B %3 (Δp %4) · KL(A ‖ B) %5 nats")
                .arg(card.quoted(card.token.id)).arg(card.percent(card.token.pA)).arg(card.percent(card.token.pB))
                .arg((card.token.dp >= 0 ? "+" : "") + (card.token.dp * 100).toFixed(2) + "%").arg(card.token.kl.toFixed(4))
    }
    Label {
        objectName: "compareTokenFlip"
        visible: card.shown && card.token.flip
        Layout.fillWidth: true
        Layout.preferredWidth: 100
        wrapMode: Text.Wrap
        textFormat: Text.PlainText
        font.pixelSize: Theme.fontSmall
        color: Theme.warning
        text: visible ? qsTr("A flip: A ranks %1 first, B %2.").arg(card.quoted(card.token.topA)).arg(card.quoted(card.token.topB)) : ""
    }
    Label {
        Layout.fillWidth: true
        Layout.preferredWidth: 100
        wrapMode: Text.Wrap
        color: Theme.muted
        font.pixelSize: Theme.fontSmall
        text: qsTr("A is %1, B %2. “raw”: softmax at temperature 1; “sampled”: the distribution each model's sampler would have drawn from with this answer's settings (× a stage removed the token; — settings not stored with the answer).").arg(card.modelA).arg(card.modelB)
    }
    GridLayout {
        objectName: "compareTokenTable"
        Layout.fillWidth: true
        columns: 5
        columnSpacing: Theme.spacing * 2
        rowSpacing: 1
        Label { text: qsTr("token"); color: Theme.muted; font.pixelSize: Theme.fontSmall }
        Label { text: qsTr("A raw"); color: Theme.muted; font.pixelSize: Theme.fontSmall }
        Label { text: qsTr("B raw"); color: Theme.muted; font.pixelSize: Theme.fontSmall }
        Label { text: qsTr("A sampled"); color: Theme.muted; font.pixelSize: Theme.fontSmall }
        Label { text: qsTr("B sampled"); color: Theme.muted; font.pixelSize: Theme.fontSmall }
        Repeater {
            model: card.candidates
            delegate: Label {
                required property var modelData
                required property int index
                objectName: "compareCandidate_" + index
                Layout.row: index + 1
                Layout.column: 0
                text: modelData.token
                textFormat: Text.PlainText
                font.family: "monospace"
                font.bold: modelData.chosen
                color: modelData.chosen ? Theme.accent : Theme.text
            }
        }
        Repeater {
            model: card.candidates.length * 4
            delegate: Label {
                required property int index
                readonly property var row: card.candidates[Math.floor(index / 4)]
                readonly property string key: ["pA", "pB", "finalA", "finalB"][index % 4]
                Layout.row: Math.floor(index / 4) + 1
                Layout.column: index % 4 + 1
                font.family: "monospace"
                // B's figure bolder where B ranks the token above A's chance of it.
                font.bold: key === "pB" && row.pB > row.pA
                text: card.percent(row[key])
            }
        }
    }
    Label {
        visible: card.staged
        text: qsTr("What each sampler stage kept under B")
        font.pixelSize: Theme.fontSmall
        color: Theme.muted
    }
    FunnelGrid {
        objectName: "compareFunnelB"
        visible: card.staged
        Layout.fillWidth: true
        Layout.preferredWidth: 100
        candidates: card.funnelB
        survivors: card.b.survivors ?? []
        stages: StepInspector.answer.stages
    }
}
