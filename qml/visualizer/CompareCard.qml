import QtQml
import QtQuick
import QtQuick.Controls
import QtQuick.Dialogs
import QtQuick.Layouts
import Inferscope.Base
import Inferscope.Engine
import Inferscope.Chat
import Inferscope.Visualizer

// "Compare with…": the selected answer (or the latest) read by a second GGUF beside the model that
// wrote it (CompareModel: core's compareTeacherForced on the worker). Per token KL(P_A ‖ P_B) and
// the flips tint the answer; the statistics are llama-perplexity's, with their ± errors. A model of
// another vocabulary is compared on the answer's text instead: bits of surprisal per byte, and the
// words where the two differ most.
ColumnLayout {
    id: card
    spacing: 6

    CompareModel {
        id: compare
        objectName: "compareModel"
        chat: ChatController
        row: StepInspector.selection.row
    }

    function kl(v) { return v < 0.0001 && v > 0 ? v.toExponential(2) : v.toFixed(4) }
    function pct(v) { return (100 * v).toFixed(2) + "%" }
    function signedPct(v) { return (v >= 0 ? "+" : "") + (100 * v).toFixed(2) + "%" }
    readonly property var s: compare.summary
    readonly property bool local: !EngineController.hasModel || EngineController.abilities.comparesModels
    // The local files of the recent list (a server's entry is an address).
    readonly property var recentFiles: AppSettings.recentModels.filter((m) => !m.startsWith("http://") && !m.startsWith("https://"))

    KvCacheTerm {
        objectName: "compareTitle"
        text: qsTr("Compare with another model")
        font.bold: true
        explanation: qsTr("Another quantization of this model (or any model with the same vocabulary) reads this answer's own tokens, teacher-forced, beside the model that wrote it. For each token: how far the two distributions are apart (KL divergence, nats), whether they rank another token first (a flip), and how the chosen token's probability moved (Δp). A model with another vocabulary reads the answer's text with its own tokens instead; the two are then compared word by word, in bits of surprisal.")
    }
    Label {
        visible: !card.local
        Layout.fillWidth: true
        Layout.preferredWidth: 100
        wrapMode: Text.Wrap
        font.pixelSize: Theme.fontSmall
        color: Theme.muted
        text: qsTr("%1 runs on a server: a second model reads an answer beside a model loaded from a file on this computer.").arg(EngineController.loaded.name)
    }
    RowLayout {
        visible: card.local
        Layout.fillWidth: true
        Label {
            Layout.fillWidth: true
            Layout.preferredWidth: 60
            wrapMode: Text.Wrap
            font.pixelSize: Theme.fontSmall
            color: Theme.muted
            text: compare.row >= 0 ? qsTr("The selected answer") : qsTr("The latest answer")
        }
        Button {
            id: chooseButton
            objectName: "compareChoose"
            text: compare.running ? qsTr("Cancel") : qsTr("Compare with…")
            enabled: compare.running || compare.canRun
            onClicked: compare.running ? compare.cancel() : chooser.popup(chooseButton, 0, chooseButton.height)
            ToolTip.visible: hovered
            ToolTip.delay: 500
            ToolTip.text: qsTr("Choose the second model: its file is loaded beside this one (the conversation's model stays), then both read the answer's tokens on the engine's thread, batched like a prefill.")
        }
    }
    Menu {
        id: chooser
        objectName: "compareChooser"
        Instantiator {
            model: card.recentFiles
            delegate: MenuItem {
                required property string modelData
                text: modelData.split("/").pop()
                onTriggered: compare.run(modelData)
            }
            onObjectAdded: (index, object) => chooser.insertItem(index, object)
            onObjectRemoved: (index, object) => chooser.removeItem(object)
        }
        MenuSeparator { visible: card.recentFiles.length > 0 }
        MenuItem {
            objectName: "compareChooseFile"
            text: qsTr("Choose a GGUF file…")
            onTriggered: {
                if (AppSettings.fileDialogProblem !== "")
                    EngineController.reportError(AppSettings.fileDialogProblem)
                else
                    dialogLoader.item.open()
            }
        }
    }
    // Qt 6.4's FileDialog crashes on open when a QML module it needs is missing: made only when
    // AppSettings found them all (as Main.qml's model dialog).
    Loader {
        id: dialogLoader
        active: AppSettings.fileDialogProblem === ""
        sourceComponent: FileDialog {
            title: qsTr("Compare the answer with a GGUF model")
            nameFilters: [qsTr("GGUF models (*.gguf)"), qsTr("All files (*)")]
            onAccepted: compare.run(selectedFile)
        }
    }
    Label {
        objectName: "compareStatus"
        visible: text !== ""
        Layout.fillWidth: true
        Layout.preferredWidth: 100
        wrapMode: Text.Wrap
        font.pixelSize: Theme.fontSmall
        color: compare.running ? Theme.muted : Theme.warning
        text: compare.status
    }

    // ---- the result: what it describes, then the figures ----------------------------------------
    Label {
        objectName: "compareCaption"
        visible: compare.hasResult
        Layout.fillWidth: true
        Layout.preferredWidth: 100
        wrapMode: Text.Wrap
        font.pixelSize: Theme.fontSmall
        color: Theme.muted
        text: card.s.onText
              ? qsTr("%1: compared on the text, each model reading it with its own tokens. Message %2 (version %3), written by %4 (A), read by %5 (B) in %6 ms.")
                  .arg(card.s.why.charAt(0).toUpperCase() + card.s.why.slice(1)).arg(card.s.row + 1).arg(card.s.version).arg(card.s.modelA).arg(card.s.modelB)
                  .arg(card.s.compareMs.toFixed(0))
              : qsTr("%1 tokens of the answer in message %2 (version %3), written by %4 (A), read by %5 (B) in %6 ms.")
                  .arg(card.s.tokens).arg(card.s.row + 1).arg(card.s.version).arg(card.s.modelA).arg(card.s.modelB)
                  .arg(card.s.compareMs.toFixed(0))
    }
    // ---- vocabularies that differ: the text, word by word -----------------------------------------
    GridLayout {
        objectName: "compareTextResult"
        visible: compare.hasResult && card.s.onText
        Layout.fillWidth: true
        columns: 2
        rowSpacing: 2
        KvCacheTerm {
            Layout.fillWidth: true
            text: qsTr("Bits per byte, A / B")
            explanation: qsTr("Each model's surprisal of the answer's text (−log₂ p of its own tokens, spread over their bytes), per byte: lower reads the text as more likely. Per byte, not per token, because the two tokenizers cut the text differently.")
            font.pixelSize: Theme.fontSmall + 1
        }
        Label {
            objectName: "compare_bitsPerByte"
            Layout.alignment: Qt.AlignRight
            font.family: "monospace"
            font.pixelSize: Theme.fontSmall + 1
            text: card.s.bitsPerByteA.toFixed(3) + " / " + card.s.bitsPerByteB.toFixed(3)
        }
        KvCacheTerm {
            Layout.fillWidth: true
            text: qsTr("Words / bytes")
            explanation: qsTr("The answer's words (a word with the whitespace before it) and bytes: what the two models are compared on.")
            font.pixelSize: Theme.fontSmall + 1
        }
        Label {
            objectName: "compare_textSize"
            Layout.alignment: Qt.AlignRight
            font.family: "monospace"
            font.pixelSize: Theme.fontSmall + 1
            text: card.s.words + " / " + card.s.bytes
        }
        KvCacheTerm {
            Layout.fillWidth: true
            text: qsTr("Tokens, A / B")
            explanation: qsTr("How many tokens each model's tokenizer makes of the answer's text.")
            font.pixelSize: Theme.fontSmall + 1
        }
        Label {
            objectName: "compare_textTokens"
            Layout.alignment: Qt.AlignRight
            font.family: "monospace"
            font.pixelSize: Theme.fontSmall + 1
            text: card.s.tokensA + " / " + card.s.tokensB
        }
        KvCacheTerm {
            Layout.columnSpan: 2
            text: qsTr("Where they differ most (bits, A / B)")
            explanation: qsTr("The answer's words whose surprisal differs most between the two models, most first.")
            font.pixelSize: Theme.fontSmall + 1
        }
        Repeater {
            model: card.s.onText ? card.s.gaps : []
            delegate: RowLayout {
                id: gapRow
                required property var modelData
                required property int index
                Layout.columnSpan: 2
                Layout.fillWidth: true
                Label {
                    Layout.fillWidth: true
                    Layout.preferredWidth: 60
                    elide: Text.ElideRight
                    font.pixelSize: Theme.fontSmall + 1
                    text: "“" + gapRow.modelData.text + "”"
                }
                Label {
                    objectName: "compareGap_" + gapRow.index
                    font.family: "monospace"
                    font.pixelSize: Theme.fontSmall + 1
                    text: gapRow.modelData.bitsA.toFixed(2) + " / " + gapRow.modelData.bitsB.toFixed(2)
                }
            }
        }
    }
    GridLayout {
        objectName: "compareResult"
        visible: compare.hasResult && !card.s.onText
        Layout.fillWidth: true
        columns: 2
        rowSpacing: 2
        Repeater {
            model: [
                {key: "meanKl", label: qsTr("Mean KL(A ‖ B)"), tip: qsTr("The KL divergence of B's distribution from A's, averaged over the answer's tokens, in nats, ± its standard error.")},
                {key: "medianKl", label: qsTr("Median KL"), tip: qsTr("Half the tokens moved less than this.")},
                {key: "p99Kl", label: qsTr("p99 KL"), tip: qsTr("99% of the tokens moved less than this: the rare large shifts.")},
                {key: "maxKl", label: qsTr("Max KL"), tip: qsTr("The token whose distribution moved most.")},
                {key: "top1", label: qsTr("Same top token"), tip: qsTr("How often both models rank the same token first, ± its error; the rest are flips (marked violet in the answer): there greedy decoding would take another path.")},
                {key: "meanDp", label: qsTr("Mean Δp"), tip: qsTr("p_B − p_A of the answer's own token, averaged, ± its error: negative when B finds the answer less likely.")},
                {key: "rmsDp", label: qsTr("RMS Δp"), tip: qsTr("The root mean square of Δp, ± its error: how far the token's probability typically moved, either way.")},
                {key: "dpTails", label: qsTr("Δp p1 / p5 / median"), tip: qsTr("Percentiles of Δp: the tokens B lowered most.")},
                {key: "dpHeads", label: qsTr("Δp p95 / p99"), tip: qsTr("Percentiles of Δp: the tokens B raised most.")},
                {key: "pplA", label: qsTr("Perplexity, A"), tip: qsTr("exp of the mean surprisal (nats) of the answer's tokens under A, ± its error.")},
                {key: "pplB", label: qsTr("Perplexity, B"), tip: qsTr("The same under B.")}
            ]
            delegate: RowLayout {
                id: figure
                required property var modelData
                Layout.columnSpan: 2
                Layout.fillWidth: true
                KvCacheTerm { text: figure.modelData.label; explanation: figure.modelData.tip; font.pixelSize: Theme.fontSmall + 1 }
                Item { Layout.fillWidth: true }
                Label {
                    objectName: "compare_" + figure.modelData.key
                    font.family: "monospace"
                    font.pixelSize: Theme.fontSmall + 1
                    readonly property var s: card.s
                    text: {
                        switch (figure.modelData.key) {
                        case "meanKl": return card.kl(s.meanKl) + " ± " + card.kl(s.meanKlError)
                        case "medianKl": return card.kl(s.medianKl)
                        case "p99Kl": return card.kl(s.p99Kl)
                        case "maxKl": return card.kl(s.maxKl)
                        case "top1": return qsTr("%1 of %2 (%3 ± %4)").arg(s.sameTop1).arg(s.tokens).arg(card.pct(s.top1Agreement)).arg(card.pct(s.top1AgreementError))
                        case "meanDp": return card.signedPct(s.meanDp) + " ± " + card.pct(s.meanDpError)
                        case "rmsDp": return card.pct(s.rmsDp) + " ± " + card.pct(s.rmsDpError)
                        case "dpTails": return card.signedPct(s.dpP1) + " / " + card.signedPct(s.dpP5) + " / " + card.signedPct(s.dpMedian)
                        case "dpHeads": return card.signedPct(s.dpP95) + " / " + card.signedPct(s.dpP99)
                        case "pplA": return s.perplexityA.toFixed(4) + " ± " + s.perplexityAError.toFixed(4)
                        case "pplB": return s.perplexityB.toFixed(4) + " ± " + s.perplexityBError.toFixed(4)
                        }
                        return ""
                    }
                }
            }
        }
    }
    RowLayout {
        visible: compare.hasResult
        Layout.fillWidth: true
        Button {
            objectName: "compareBranch"
            visible: !card.s.onText
            text: card.s.firstFlip >= 0 ? qsTr("Branch at the first flip (token %1)").arg(card.s.firstFlip + 1) : qsTr("No flip")
            enabled: card.s.firstFlip >= 0 && ChatController.canSend
            onClicked: compare.branchAtFirstFlip()
            ToolTip.visible: hovered
            ToolTip.delay: 500
            ToolTip.text: qsTr("A new version of the answer: the tokens before the first flip kept, B's first choice there, then the loaded model (A) goes on.")
        }
        Button {
            objectName: "compareContinueB"
            text: qsTr("B goes on")
            visible: card.s.firstFlip >= 0 && !card.s.onText
            enabled: ChatController.canSend
            onClicked: compare.continueWithB()
            ToolTip.visible: hovered
            ToolTip.delay: 500
            ToolTip.text: qsTr("The same branch, but the second model (B) writes the rest: what it would have said from where the two parted. The new version is B's answer, kept with B's name, and A stays loaded.")
        }
        Item { Layout.fillWidth: true }
        CheckBox {
            objectName: "compareTint"
            text: qsTr("Tint")
            checked: ChatController.messages.heatMode === "compare"
            onToggled: ChatController.messages.heatMode = checked ? "compare" : AppSettings.heatMode
            ToolTip.visible: hovered
            ToolTip.delay: 500
            ToolTip.text: card.s.onText
                          ? qsTr("Tints each word of the answer by how much more one model is surprised by it than the other: clear where both agree, red at 8 bits (256 times less likely) and above.")
                          : qsTr("Tints each token of the answer by its KL: clear where both models agree, red at 0.5 nats and above; a flip in violet.")
        }
    }

    // ---- the selected token under both models ----------------------------------------------------
    CompareTokenCard {
        Layout.fillWidth: true
        Layout.preferredWidth: 100
        Layout.topMargin: Theme.spacing
        comparison: compare
        modelA: card.s.modelA ?? ""
        modelB: card.s.modelB ?? ""
    }
}
