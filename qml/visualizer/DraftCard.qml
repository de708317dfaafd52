import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base

// Speculative decoding, a drafted token: the drafter's q and the model's p side by side for the
// position's leading tokens, the rule that kept or rejected the draft, and on a rejection the
// residual distribution the replacement was drawn from. Only what the token's record holds
// (StepInspector.details.current.draft: chat/draft_summary.h); records stored before they kept the
// candidates show the rule alone.
ColumnLayout {
    id: card
    objectName: "draftCard"
    required property var draft
    readonly property var candidates: draft.candidates ?? []
    readonly property var residual: draft.residual ?? []
    readonly property bool drafted: (draft.rule ?? "") !== ""
    readonly property bool rejected: draft.fate === "corrected"
    visible: drafted
    spacing: 4

    function percent(v) { return (v * 100).toFixed(v > 0 && v < 0.01 ? 2 : 1) + "%" }

    Label {
        text: qsTr("The draft, checked by the model")
        font.bold: true
    }
    Label {
        Layout.fillWidth: true
        Layout.preferredWidth: 100
        wrapMode: Text.Wrap
        color: Theme.muted
        font.pixelSize: Theme.fontSmall
        text: qsTr("q: how likely the drafter found each token (prompt lookup is certain of the one it copies). p: how likely the model found it when it checked the draft, after the sampler's settings (the distribution tokens are drawn from; the bars below are before them). The drafted token is kept for sure when p ≥ q, otherwise with probability p / q. Greedy decoding: p is 100% for the model's top token, so a draft is kept only when it is that token.")
    }
    GridLayout {
        visible: card.candidates.length > 0
        Layout.fillWidth: true
        columns: 4
        columnSpacing: Theme.spacing * 2
        rowSpacing: 1
        Label { text: qsTr("token"); color: Theme.muted; font.pixelSize: Theme.fontSmall }
        Label { text: qsTr("drafter q"); color: Theme.muted; font.pixelSize: Theme.fontSmall }
        Label { text: qsTr("model p"); color: Theme.muted; font.pixelSize: Theme.fontSmall }
        Item { Layout.fillWidth: true; implicitHeight: 1 }
        Repeater {
            model: card.candidates
            delegate: Label {
                required property var modelData
                required property int index
                objectName: "draftCandidate_" + index
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
            model: card.candidates
            delegate: Label {
                required property var modelData
                required property int index
                Layout.row: index + 1
                Layout.column: 1
                font.family: "monospace"
                text: card.percent(modelData.q)
            }
        }
        Repeater {
            model: card.candidates
            delegate: Label {
                required property var modelData
                required property int index
                Layout.row: index + 1
                Layout.column: 2
                font.family: "monospace"
                text: card.percent(modelData.p)
            }
        }
        Repeater {
            model: card.candidates
            delegate: Label {
                required property var modelData
                required property int index
                Layout.row: index + 1
                Layout.column: 3
                Layout.fillWidth: true
                color: Theme.muted
                font.pixelSize: Theme.fontSmall
                text: modelData.drafted && modelData.chosen ? qsTr("drafted, kept")
                      : modelData.drafted ? qsTr("drafted, rejected")
                      : modelData.chosen ? qsTr("drawn instead") : ""
            }
        }
    }
    Label {
        objectName: "draftRule"
        Layout.fillWidth: true
        Layout.preferredWidth: 100
        wrapMode: Text.Wrap
        textFormat: Text.PlainText
        color: card.rejected ? Theme.warning : Theme.text
        text: !card.drafted ? ""
              : card.rejected ? qsTr("Kept with probability %1: rejected.").arg(card.draft.rule)
              : qsTr("Kept with probability %1: accepted.").arg(card.draft.rule)
    }
    Label {
        objectName: "draftResidualNote"
        visible: card.rejected && card.residual.length > 0
        Layout.fillWidth: true
        Layout.preferredWidth: 100
        wrapMode: Text.Wrap
        textFormat: Text.PlainText
        text: !visible ? ""
              : qsTr("The replacement was drawn from what the model wanted more than the drafter did, normalize(max(0, p − q)): %1 of the model's probability, rescaled to 100%. Its leading tokens:")
                    .arg(card.percent(card.draft.residualMass ?? 0))
    }
    Flow {
        visible: card.rejected && card.residual.length > 0
        Layout.fillWidth: true
        Layout.preferredWidth: 100
        spacing: Theme.spacing
        Repeater {
            model: card.residual
            delegate: Label {
                required property var modelData
                required property int index
                objectName: "draftResidual_" + index
                textFormat: Text.PlainText
                font.family: "monospace"
                font.bold: modelData.chosen
                color: modelData.chosen ? Theme.accent : Theme.text
                text: modelData.token + " " + card.percent(modelData.r)
            }
        }
    }
}
