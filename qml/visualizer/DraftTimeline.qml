import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base
import Inferscope.Engine
import Inferscope.Visualizer

// A speculative answer on the Timeline (TimelineModel.speculative): each round's drafting and its
// verify batch, what verify batches cost by their size (a verify of k drafts is a small prefill of
// k + 1 tokens), the acceptance rate by draft position, and the speed-up against plain decoding on
// the same model, measured, never estimated.
ColumnLayout {
    id: card
    objectName: "draftTimeline"
    readonly property var sp: TimelineModel.speculative
    readonly property var rounds: sp.rounds ?? []
    readonly property real totalMs: (sp.draftMs ?? 0) + (sp.verifyMs ?? 0)
    visible: rounds.length > 0
    spacing: 4

    // Three significant digits: a small model's verify takes a fraction of a millisecond.
    function msText(m) { return m > 0 ? qsTr("%1 ms").arg(Number(m.toPrecision(3))) : "–" }

    Rectangle { Layout.fillWidth: true; height: 1; color: Theme.border }
    Label { text: qsTr("Speculative decoding: draft, then verify"); font.bold: true }
    Label {
        objectName: "draftRoundsText"
        Layout.fillWidth: true
        Layout.preferredWidth: 100
        wrapMode: Text.Wrap
        text: card.sp.roundsText ?? ""
    }
    // Each round as two blocks in time: drafting, then the verify batch (in prefill's colour: it
    // runs several tokens through the model in one pass).
    Flow {
        Layout.fillWidth: true
        Layout.preferredWidth: 100
        spacing: 1
        Repeater {
            model: card.rounds.length <= 400 ? card.rounds : []
            delegate: Row {
                id: round
                required property var modelData
                readonly property real pxPerMs: card.totalMs > 0 ? Math.max(60, card.width) * 3 / card.totalMs : 0
                height: 16
                // At most a line each: a round slowed by a busy machine stays one block, not off the edge.
                Rectangle { id: drafting; width: Math.min(card.width / 2, Math.max(1, round.modelData.draftMs * round.pxPerMs)); height: 16; color: Theme.decode; opacity: 0.8 }
                Rectangle {
                    width: Math.min(card.width - drafting.width - 2, Math.max(2, round.modelData.verifyMs * round.pxPerMs))
                    height: 16
                    color: round.modelData.outcome === "corrected" ? Theme.danger : Theme.prefill
                    ToolTip.visible: roundMouse.containsMouse
                    ToolTip.text: qsTr("token %1: drafting %2 ms, then one pass verified %3 tokens in %4 ms; %5 of %6 drafts accepted")
                                  .arg(round.modelData.step + 1).arg(round.modelData.draftMs.toFixed(3)).arg(round.modelData.rows)
                                  .arg(round.modelData.verifyMs.toFixed(3)).arg(round.modelData.accepted).arg(round.modelData.drafted)
                    MouseArea { id: roundMouse; anchors.fill: parent; hoverEnabled: true }
                }
            }
        }
    }
    Label {
        Layout.fillWidth: true
        Layout.preferredWidth: 100
        wrapMode: Text.Wrap
        font.pixelSize: Theme.fontSmall
        color: Theme.muted
        text: qsTr("Orange: drafting (%1 in all). Blue: a verify batch (%2 in all), red when it rejected a draft. A verify runs the pending token and the k drafts through the model in one pass, a small prefill: the weights are read once for all of them, which is why, where decode is bound by memory bandwidth, it costs about one decode step. What it cost here, by size:")
              .arg(card.msText(card.sp.draftMs ?? 0)).arg(card.msText(card.sp.verifyMs ?? 0))
    }
    // What a verify batch cost by its size, measured in this answer.
    Label {
        objectName: "draftBatchesText"
        Layout.fillWidth: true
        Layout.preferredWidth: 100
        wrapMode: Text.Wrap
        text: qsTr("Verify passes by size: ") + (card.sp.batches ?? []).map(b => qsTr("%1 %2: median %3 (%4×)")
                                          .arg(b.rows).arg(b.rows === 1 ? qsTr("token (a plain step)") : qsTr("tokens"))
                                          .arg(card.msText(b.medianMs)).arg(b.count)).join(" · ")
    }
    Label { text: qsTr("Acceptance by draft position"); color: Theme.muted; font.pixelSize: Theme.fontSmall }
    Row {
        spacing: Theme.spacing
        Repeater {
            model: card.sp.byPosition ?? []
            delegate: Column {
                id: pos
                required property var modelData
                spacing: 2
                Rectangle {
                    width: 36
                    height: 40
                    color: Theme.surfaceAlt
                    Rectangle { anchors.bottom: parent.bottom; width: parent.width; height: parent.height * pos.modelData.rate; color: Theme.success }
                }
                Label {
                    objectName: "draftPosition_" + pos.modelData.position
                    font.pixelSize: Theme.fontSmall
                    text: qsTr("%1: %2/%3").arg(pos.modelData.position).arg(pos.modelData.accepted).arg(pos.modelData.drafted)
                }
            }
        }
    }
    RowLayout {
        Layout.fillWidth: true
        Layout.preferredWidth: 100
        Label {
            objectName: "draftSpeedup"
            Layout.fillWidth: true
            Layout.preferredWidth: 10
            wrapMode: Text.Wrap
            text: card.sp.speedup !== undefined
                  ? qsTr("Speed-up %1×: this answer %2 tok/s, plain decoding %3 tok/s (%4).")
                        .arg(card.sp.speedup.toFixed(2)).arg(Theme.rate(card.sp.tokensPerSecond)).arg(Theme.rate(card.sp.baseline.tokensPerSecond))
                        .arg(card.sp.baseline.source)
                  : qsTr("This answer: %1 tok/s. Plain decoding on this model: not measured yet.").arg(Theme.rate(card.sp.tokensPerSecond ?? 0))
        }
        Button {
            objectName: "plainDecodeButton"
            visible: EngineController.abilities.runsExperiments
            text: qsTr("Measure plain decoding")
            enabled: !TimelineModel.busy && EngineController.state === EngineController.Ready
            onClicked: TimelineModel.runWithoutDrafts()
            ToolTip.visible: hovered
            ToolTip.text: qsTr("Decodes the same prompt for as many tokens without drafts, with the answer's sampler: the rate the speed-up is measured against.")
        }
    }
}
