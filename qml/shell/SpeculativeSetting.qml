import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import QtQuick.Dialogs
import Inferscope.Base
import Inferscope.Engine
import Inferscope.Chat

// Settings → Speculative decoding (SpeculativeSettings): off, prompt lookup (drafts copied from
// earlier in the text, no second model) or a draft model of the same vocabulary, and k, the most
// tokens drafted per round. The model verifies each round's drafts in one pass (a small prefill);
// the answer is exactly what plain decoding gives. Tint the answer by "drafts" to see each one's fate.
ColumnLayout {
    id: setting
    spacing: 6

    Rectangle { Layout.fillWidth: true; height: 1; color: Theme.border }
    Label { text: qsTr("Speculative decoding"); font.bold: true; font.pixelSize: Theme.fontLarge }
    ComboBox {
        objectName: "speculativeMode"
        Layout.fillWidth: true
        model: [qsTr("Off: one token per pass"), qsTr("Prompt lookup (n-gram drafts)"), qsTr("A draft model")]
        currentIndex: SpeculativeSettings.mode
        onActivated: (i) => SpeculativeSettings.mode = i
        enabled: !ChatController.generating
        Accessible.name: qsTr("Speculative decoding")
    }
    RowLayout {
        visible: SpeculativeSettings.mode !== SpeculativeSettings.Off
        Layout.fillWidth: true
        Label { text: qsTr("Draft up to"); color: Theme.muted }
        SpinBox {
            objectName: "speculativeK"
            from: 1
            to: 16
            value: SpeculativeSettings.maxDraft
            onValueModified: SpeculativeSettings.maxDraft = value
            enabled: !ChatController.generating
            Accessible.name: qsTr("Tokens drafted per round")
        }
        Label { text: qsTr("tokens per round"); color: Theme.muted; Layout.fillWidth: true }
    }
    RowLayout {
        visible: SpeculativeSettings.mode === SpeculativeSettings.DraftModel
        Layout.fillWidth: true
        TextField {
            objectName: "draftModelPath"
            Layout.fillWidth: true
            Layout.preferredWidth: 100
            text: SpeculativeSettings.draftModel
            placeholderText: qsTr("draft model (.gguf)")
            onEditingFinished: SpeculativeSettings.draftModel = text
            enabled: !ChatController.generating
            Accessible.name: qsTr("Draft model file")
        }
        Button {
            text: qsTr("Choose…")
            enabled: !ChatController.generating
            onClicked: {
                if (AppSettings.fileDialogProblem !== "")
                    EngineController.reportError(AppSettings.fileDialogProblem)
                else
                    draftDialogLoader.item.open()
            }
        }
    }
    Loader {
        id: draftDialogLoader
        active: AppSettings.fileDialogProblem === "" && SpeculativeSettings.mode === SpeculativeSettings.DraftModel
        sourceComponent: FileDialog {
            title: qsTr("Choose a draft model")
            nameFilters: [qsTr("GGUF models (*.gguf)"), qsTr("All files (*)")]
            onAccepted: SpeculativeSettings.draftModel = selectedFile
        }
    }
    Label {
        objectName: "speculativeProblem"
        Layout.fillWidth: true
        Layout.preferredWidth: 100
        visible: text !== ""
        text: SpeculativeSettings.problem
        color: Theme.danger
        wrapMode: Text.Wrap
        font.pixelSize: Theme.fontSmall
    }
    Label {
        Layout.fillWidth: true
        Layout.preferredWidth: 100
        wrapMode: Text.Wrap
        color: Theme.muted
        font.pixelSize: Theme.fontSmall
        text: SpeculativeSettings.mode === SpeculativeSettings.Off
              ? qsTr("Each token costs one pass over the weights. With drafts, the model checks several proposed tokens in one pass and keeps those it would have produced: the same answer, sooner when drafts are good.")
              : EngineController.hasModel && !EngineController.abilities.drafts
              ? qsTr("Runs on this machine's engine: a server's answers come without drafts.")
              : SpeculativeSettings.mode === SpeculativeSettings.PromptLookup
              ? qsTr("Drafts are the tokens that followed the last few tokens' most recent earlier occurrence in the text (q = 1). Good on repetitive text. Tint tokens by \"drafts\" to see each one's fate.")
              : qsTr("A smaller model of the same vocabulary drafts; the model keeps a drafted token with probability min(1, p/q). Tint tokens by \"drafts\" to see each one's fate.")
    }
}
