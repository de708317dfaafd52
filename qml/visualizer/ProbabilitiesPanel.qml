import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base
import Inferscope.Chat
import Inferscope.Visualizer

// One generation step of an answer: the top candidates and what each sampler stage did to them,
// the pick, its rank and the step's entropy; a replay of the whole answer with other settings;
// branching from any candidate. Follows the newest token while an answer streams.
ScrollView {
    id: panel
    contentWidth: availableWidth
    clip: true
    ScrollBar.vertical.policy: ScrollBar.AlwaysOn
    ScrollBar.horizontal.policy: ScrollBar.AlwaysOff
    Binding { target: StepInspector; property: "detailsShown"; value: panel.visible }

    readonly property var cur: StepInspector.details.current
    // Speculative decoding: the token's draft record ({} without one).
    readonly property var draft: cur && cur.draft ? cur.draft : ({})
    // Read once per refresh for the bars and the funnel (each read builds the list anew).
    readonly property var candidates: StepInspector.details.candidates
    readonly property var stages: StepInspector.details.stages

    ColumnLayout {
        id: content
        objectName: "probabilitiesContent"
        // Clear of the scroll bar; never below what its widest fixed row needs: while the tab is
        // hidden the view has no width, and wrapping labels at a negative width never settled
        // (QML's "Polish loop detected").
        width: Math.max(240, panel.availableWidth - 2 * Theme.spacing - 10)
        x: Theme.spacing
        spacing: Theme.spacing

        // ---- which step -------------------------------------------------------------------------
        RowLayout {
            Layout.fillWidth: true
            Layout.preferredWidth: 100
            Layout.topMargin: Theme.spacing
            // The step the panel shows (while an answer streams, refreshed four times a second).
            // A Row places ◀, the label and ▶ by their own widths: in the layout, the label kept the
            // width of its first text and "Token 16 of 16" ran under the ▶.
            Row {
                Layout.alignment: Qt.AlignVCenter
                ToolButton { text: "◀"; enabled: StepInspector.selection.hasStep && StepInspector.details.step > 0; onClicked: StepInspector.stepBy(-1) }
                Label {
                    objectName: "stepLabel"
                    anchors.verticalCenter: parent.verticalCenter
                    text: StepInspector.selection.hasStep ? qsTr("Token %1 of %2").arg(StepInspector.details.step + 1).arg(StepInspector.selection.stepCount)
                                                : qsTr("No token yet")
                    font.bold: true
                }
                // Off while the panel follows a streaming answer: there is no next token to step to
                // yet (it flickered on and off with every batch, restyling the button each time).
                ToolButton {
                    objectName: "nextStepButton"
                    text: "▶"
                    enabled: StepInspector.selection.hasStep && StepInspector.details.step + 1 < StepInspector.selection.stepCount && !(StepInspector.following && ChatController.generating)
                    onClicked: StepInspector.stepBy(1)
                }
            }
            Item { Layout.fillWidth: true }
            CheckBox {
                text: qsTr("Follow")
                checked: StepInspector.following
                onToggled: StepInspector.following = checked
                ToolTip.visible: hovered
                ToolTip.text: qsTr("Show the newest token as the answer streams. Click a token in the text to inspect it.")
            }
        }

        Label {
            visible: !StepInspector.selection.hasStep
            Layout.fillWidth: true
            Layout.preferredWidth: 100
            wrapMode: Text.Wrap
            color: Theme.muted
            text: qsTr("Send a prompt: each generated token's probability distribution appears here, live. Click any token of an answer to come back to it.")
        }

        // ---- the whole answer: surprisal and entropy per token ----------------------------------
        SurprisalStrip {
            objectName: "surprisalStrip"
            visible: StepInspector.selection.hasStep
            Layout.fillWidth: true
            Layout.preferredWidth: 100
            surprisal: StepInspector.profile.surprisal
            entropy: StepInspector.profile.entropy
            selected: StepInspector.details.step
            describe: (step) => StepInspector.describe(StepInspector.selection.row, step)
            onStepClicked: (step) => StepInspector.select(StepInspector.selection.row, step)
        }

        // ---- the pick ---------------------------------------------------------------------------
        GridLayout {
            visible: StepInspector.selection.hasStep
            Layout.fillWidth: true
            Layout.preferredWidth: 100
            columns: 4
            columnSpacing: Theme.spacing * 2
            rowSpacing: 2
            Label { text: qsTr("picked"); color: Theme.muted; ToolTip.visible: pickMouse.containsMouse; ToolTip.text: qsTr("The token the sampler drew at this step and appended to the answer; the next step starts from it."); MouseArea { id: pickMouse; anchors.fill: parent; hoverEnabled: true } }
            Label { objectName: "pickedToken"; text: panel.cur.token ?? ""; textFormat: Text.PlainText; font.family: "monospace"; font.bold: true; color: Theme.accent }
            Label { text: qsTr("rank"); color: Theme.muted }
            Label { text: panel.cur.rank ?? ""; ToolTip.visible: rankMouse.containsMouse; ToolTip.text: qsTr("1 = the most probable token at temperature 1."); MouseArea { id: rankMouse; anchors.fill: parent; hoverEnabled: true } }
            Label { text: qsTr("probability"); color: Theme.muted; ToolTip.visible: probMouse.containsMouse; ToolTip.text: qsTr("The token's probability in the model's softmax at temperature 1, before any sampler stage."); MouseArea { id: probMouse; anchors.fill: parent; hoverEnabled: true } }
            Label { text: panel.cur.pRaw !== undefined ? (panel.cur.pRaw * 100).toFixed(2) + "%" : "" }
            Label { text: qsTr("sampled from"); color: Theme.muted; ToolTip.visible: finalMouse.containsMouse; ToolTip.text: qsTr("Its probability in the distribution actually drawn from, after the penalty, the grammar (structured output), top-k, top-p, min-p and temperature."); MouseArea { id: finalMouse; anchors.fill: parent; hoverEnabled: true } }
            // A branch's token was chosen by the user, not drawn: there is no "sampled from".
            Label {
                text: panel.cur.pFinal === undefined ? ""
                      : panel.cur.pFinal > 0 ? (panel.cur.pFinal * 100).toFixed(2) + "%" : qsTr("not drawn: chosen for a branch")
            }
            Label {
                text: qsTr("entropy"); color: Theme.muted
                ToolTip.visible: entMouse.containsMouse
                ToolTip.text: qsTr("How unsure the model was, in bits: 0 = certain, 1 = a coin flip, 3 = eight equally likely tokens.")
                MouseArea { id: entMouse; anchors.fill: parent; hoverEnabled: true }
            }
            Label { text: panel.cur.entropyBits !== undefined ? panel.cur.entropyBits.toFixed(2) + " bits" : "" }
            Label {
                text: qsTr("surprisal"); color: Theme.muted
                ToolTip.visible: surpMouse.containsMouse
                ToolTip.text: qsTr("How unexpected the pick was, in bits: −log₂ of its probability. 1 bit = a coin flip's outcome; 2 bits = p 0.25; well above the entropy = the model did not see it coming.")
                MouseArea { id: surpMouse; anchors.fill: parent; hoverEnabled: true }
            }
            Label { objectName: "surprisalValue"; text: panel.cur.surprisalBits !== undefined ? panel.cur.surprisalBits + " bits" : "" }
            Label { text: qsTr("time"); color: Theme.muted; ToolTip.visible: timeMouse.containsMouse; ToolTip.text: qsTr("The forward pass that produced these logits (one decode step, or the prefill for the first token), then the sampling."); MouseArea { id: timeMouse; anchors.fill: parent; hoverEnabled: true } }
            Label { Layout.fillWidth: true; Layout.preferredWidth: 10; wrapMode: Text.Wrap; text: panel.cur.forwardMs !== undefined && StepInspector.answer.remote ? (panel.cur.forwardMs > 0 ? qsTr("%1 ms after the previous token (network)").arg(panel.cur.forwardMs.toFixed(2)) : qsTr("the first token (time to first token in the Timeline)")) : panel.cur.forwardMs !== undefined && panel.draft.fate !== undefined ? (panel.draft.verifyRows > 0 ? qsTr("%1 ms: one pass verified %2 tokens").arg(panel.draft.verifyMs.toFixed(2)).arg(panel.draft.verifyRows) : qsTr("in its round's pass (timed on its first token)")) : panel.cur.forwardMs !== undefined ? (panel.cur.forwardMs > 0 ? qsTr("%1 ms pass + %2 ms sampling").arg(panel.cur.forwardMs.toFixed(2)).arg(panel.cur.sampleMs.toFixed(2)) : qsTr("from prefill + %1 ms sampling").arg(panel.cur.sampleMs.toFixed(2))) : "" }
        }

        // ---- the grammar stage (structured output) ----------------------------------------------
        Label {
            objectName: "grammarNote"
            visible: StepInspector.selection.hasStep && panel.cur.constrained === true
            Layout.fillWidth: true
            Layout.preferredWidth: 100
            wrapMode: Text.Wrap
            font.pixelSize: Theme.fontSmall
            // A low probability before the mask: the model wanted something the grammar forbids.
            color: panel.cur.forced ? Theme.muted : panel.cur.pBeforeGrammar < 0.1 ? Theme.warning : Theme.text
            text: !visible ? ""
                  : panel.cur.forced
                  ? qsTr("Grammar: forced, the only token it allowed (%1% of the model's probability had gone to tokens it forbids).")
                        .arg((panel.cur.grammarMassRemoved * 100).toFixed(1))
                  : qsTr("Grammar: removed %1% of the probability (tokens it forbids), %2 candidates left; the model gave this token %3% before the mask.")
                        .arg((panel.cur.grammarMassRemoved * 100).toFixed(1)).arg(Theme.count(panel.cur.grammarKept))
                        .arg((panel.cur.pBeforeGrammar * 100).toFixed(2))
        }

        // ---- speculative decoding: the token's draft and its fate ---------------------------------
        RowLayout {
            visible: StepInspector.selection.hasStep && (panel.draft.fate ?? "") !== ""
            Layout.fillWidth: true
            Layout.preferredWidth: 100
            spacing: Theme.spacing
            Rectangle {
                // The colour the "draft" tint gives this token in the answer (none when undrafted).
                Layout.alignment: Qt.AlignTop
                Layout.topMargin: 3
                implicitWidth: 10
                implicitHeight: 10
                color: ChatController.messages.draftColor(panel.draft.fate ?? "")
                border.color: Theme.muted
                border.width: 1
            }
            Label {
                objectName: "draftNote"
                Layout.fillWidth: true
                Layout.preferredWidth: 100
                wrapMode: Text.Wrap
                textFormat: Text.PlainText
                font.pixelSize: Theme.fontSmall
                color: panel.draft.fate === "corrected" ? Theme.warning : Theme.text
                text: parent.visible ? qsTr("Speculative: %1").arg(panel.draft.text) : ""
                ToolTip.visible: draftMouse.containsMouse
                ToolTip.text: qsTr("Speculative decoding: a drafter (prompt lookup or a small model) proposed tokens with probability q; the model verified them in one pass and gave them probability p. A drafted token is kept with probability min(1, p/q); on a rejection the token is drawn from max(0, p − q) instead, so the answer follows the model's own distribution exactly.")
                MouseArea { id: draftMouse; anchors.fill: parent; hoverEnabled: true; acceptedButtons: Qt.NoButton }
            }
        }

        // The drafter's q against the model's p, the rule, and a rejection's residual.
        DraftCard {
            Layout.fillWidth: true
            Layout.preferredWidth: 100
            draft: panel.draft
        }

        // ---- candidates as bars -----------------------------------------------------------------
        Label {
            visible: StepInspector.selection.hasStep
            text: StepInspector.answer.remote
                  ? qsTr("The %1 most likely tokens the server reported (exp of its log-probabilities)").arg(StepInspector.candidateModel.count)
                  : qsTr("Top candidates (softmax at temperature 1) — click one to continue the answer with it")
            color: Theme.muted
            font.pixelSize: Theme.fontSmall
            Layout.fillWidth: true
            Layout.preferredWidth: 100
            wrapMode: Text.Wrap
        }
        // The rows: an ItemDelegate each for the click (branch), hover, focus and the accessible
        // name, with nothing of its own drawn; CandidateBars over them draws the tokens, bars and
        // percentages in one painted item.
        Item {
            objectName: "candidateRows"
            Layout.fillWidth: true
            Layout.preferredWidth: 100
            implicitHeight: rowsColumn.implicitHeight
            Column {
                id: rowsColumn
                width: parent.width
                Repeater {
                    model: StepInspector.candidateModel
                    delegate: ItemDelegate {
                        id: bar
                        objectName: "candidate_" + index
                        required property int tokenId
                        required property string token
                        required property real pRaw
                        required property bool chosen
                        required property int index
                        width: rowsColumn.width
                        height: 22
                        padding: 0
                        text: bar.token + " " + (bar.pRaw * 100).toFixed(bar.pRaw < 0.01 ? 2 : 1) + "%"
                        contentItem: Item {}
                        enabled: !ChatController.generating && !bar.chosen
                        onClicked: StepInspector.branch(bar.tokenId)
                        ToolTip.visible: hovered && enabled
                        ToolTip.text: !hovered ? ""
                                      : StepInspector.answer.remote
                                      ? qsTr("Branch: the server continues this answer with “%1” here (the answer so far is sent back as the assistant's message).").arg(Units.isolate(bar.token))
                                      : qsTr("Branch: continue this answer with “%1” here (the KV cache is truncated to this position; nothing before it is recomputed).").arg(Units.isolate(bar.token))
                    }
                }
            }
            CandidateBars {
                objectName: "candidateBars"
                anchors.fill: parent
                z: 1
                candidates: panel.candidates
                rowHeight: 22
                tokenWidth: 90
                percentWidth: 52
                spacing: 6
                barHeight: 14
                textColor: Theme.text
                accentColor: Theme.accent
                trackColor: Theme.surfaceAlt
                barColor: Theme.prefill
                tokenFont.family: "monospace"
                tokenFont.pixelSize: Theme.fontNormal
                percentFont.family: "monospace"
                percentFont.pixelSize: Theme.fontSmall
            }
        }

        // ---- the funnel: each stage's distribution ----------------------------------------------
        Rectangle { visible: StepInspector.selection.hasStep; Layout.fillWidth: true; height: 1; color: Theme.border }
        Label {
            visible: StepInspector.selection.hasStep
            text: qsTr("What each sampler stage kept")
            font.bold: true
        }
        Label {
            objectName: "stagesNote"
            visible: StepInspector.selection.hasStep && StepInspector.answer.remote
            text: StepInspector.answer.stages.length > 1
                  ? qsTr("As the server's own sampler recorded them (Inferscope's extension to the OpenAI answer).")
                  : qsTr("This server reports its raw log-probabilities only: what its sampler stages kept is not known.")
            color: Theme.muted
            font.pixelSize: Theme.fontSmall
            wrapMode: Text.Wrap
            Layout.fillWidth: true
            Layout.preferredWidth: 100
        }
        FunnelGrid {
            visible: StepInspector.selection.hasStep
            Layout.fillWidth: true
            Layout.preferredWidth: 100
            candidates: panel.candidates
            survivors: StepInspector.details.survivors
            stages: StepInspector.answer.stages
        }

        // ---- replay -----------------------------------------------------------------------------
        Rectangle { Layout.fillWidth: true; height: 1; color: Theme.border }
        ReplayBox { Layout.fillWidth: true; Layout.preferredWidth: 100 }

        // ---- compare with a second model -------------------------------------------------------
        Rectangle { Layout.fillWidth: true; height: 1; color: Theme.border }
        CompareCard { Layout.fillWidth: true; Layout.preferredWidth: 100 }

        // ---- export -----------------------------------------------------------------------------
        RowLayout {
            Layout.fillWidth: true
            Layout.preferredWidth: 100
            Layout.bottomMargin: Theme.spacing
            visible: StepInspector.selection.hasStep
            // Wraps in the room the three buttons leave (unwrapped it pushed PNG past the panel's edge).
            Label {
                text: qsTr("Export this answer's tokens:")
                color: Theme.muted
                font.pixelSize: Theme.fontSmall
                wrapMode: Text.Wrap
                Layout.fillWidth: true
                Layout.preferredWidth: 40
            }
            Button { text: "JSON"; onClicked: { exportDialog.format = "json"; exportDialog.open() } }
            Button { text: "CSV"; onClicked: { exportDialog.format = "csv"; exportDialog.open() } }
            Button { text: "PNG"; onClicked: { exportDialog.format = "png"; exportDialog.open() } }
        }
    }

    SaveAsDialog {
        id: exportDialog
        objectName: "tokenExportDialog"
        property string format: "json"
        title: qsTr("Export this answer's tokens")
        suffix: format
        suggestedName: ChatController.title !== "" ? ChatController.title + " tokens" : "tokens"
        onChosen: (path, fileUrl) => {
            if (format === "png")
                content.grabToImage((result) => result.saveToFile(path))
            else
                StepInspector.exportRecords(fileUrl, format)
        }
    }
}
