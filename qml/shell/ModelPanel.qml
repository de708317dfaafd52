import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base
import Inferscope.Engine
import Inferscope

// The loaded model: shapes from its GGUF header, tensor types, what it costs in memory.
ScrollView {
    id: panel
    contentWidth: availableWidth
    clip: true
    // A scroll bar that comes and goes would change the width, the wrapping and the height in a loop.
    ScrollBar.vertical.policy: ScrollBar.AlwaysOn
    ScrollBar.horizontal.policy: ScrollBar.AlwaysOff
    readonly property var d: EngineController.loaded.details  // a ModelDetails (gui/engine/model_details.h)

    GridLayout {
        width: panel.availableWidth - 2 * Theme.spacing
        x: Theme.spacing * 1.5
        columns: 2
        rowSpacing: 4
        columnSpacing: Theme.spacing * 2

        Label { text: EngineController.loaded.name; font.bold: true; font.pixelSize: Theme.fontLarge; Layout.columnSpan: 2; Layout.topMargin: Theme.spacing }
        Label { text: EngineController.loaded.path; color: Theme.muted; font.pixelSize: Theme.fontSmall; Layout.columnSpan: 2; wrapMode: Text.WrapAnywhere; Layout.fillWidth: true; Layout.preferredWidth: 100 }

        Repeater {
            model: !panel.d.valid || !EngineController.abilities.showsCache ? [] : [
                [qsTr("Architecture"), panel.d.architecture],
                [qsTr("Parameters"), Theme.count(panel.d.parameters)],
                [qsTr("Layers"), panel.d.layers, qsTr("Transformer blocks each token passes through in turn; each keeps its own KV cache.")],
                [qsTr("Embedding"), panel.d.embedding],
                [qsTr("Feed-forward"), panel.d.feedForward],
                [qsTr("Heads"), qsTr("%1 query, %2 KV (%3)").arg(panel.d.heads).arg(panel.d.kvHeads)
                                  .arg(panel.d.kvHeads === panel.d.heads ? "MHA" : panel.d.kvHeads === 1 ? "MQA" : "GQA"),
                 qsTr("Fewer key/value heads than query heads is grouped-query attention (GQA): query heads share K and V, and the KV cache shrinks by that ratio.")],
                [qsTr("Head dim"), panel.d.headDim, qsTr("Elements in each head's query, key and value vectors.")],
                [qsTr("Vocabulary"), Theme.count(panel.d.vocabSize) + qsTr(" tokens")],
                [qsTr("Tokenizer"), panel.d.tokenizer === "bpe"
                                    ? qsTr("byte-level BPE, pre-tokenizer %1").arg(panel.d.preTokenizer || "default")
                                    : qsTr("SentencePiece"),
                 qsTr("How text becomes tokens: SentencePiece (Llama 2, Mistral, Phi-3, Gemma) or byte-level BPE (Llama 3, Qwen, GPT-2), whose pre-tokenizer first splits the text into words, numbers and punctuation.")],
                [qsTr("Trained context"), Theme.count(panel.d.trainedContext)],
                [qsTr("Context here"), Theme.count(EngineController.loaded.contextLength)],
                [qsTr("RoPE base"), panel.d.ropeFreqBase],
                [qsTr("Precision"), EngineController.loaded.precision],
                [qsTr("Bits per weight"), Number(panel.d.bitsPerWeight).toFixed(2), qsTr("Bytes of all weights as stored × 8 ÷ number of weights.")],
                [qsTr("File"), Theme.bytes(panel.d.fileBytes)],
                [qsTr("Weights in memory"), Theme.bytes(EngineController.loaded.weightBytes)],
                [qsTr("Weights read per token"), Theme.bytes(panel.d.weightBytesPerToken), qsTr("Every decode step reads all of these bytes, so memory bandwidth divided by this bounds decode speed.")],
                [qsTr("KV cache per token"), Theme.bytes(panel.d.kvBytesPerToken), qsTr("2 (K and V) × layers × KV heads × head dim × bytes per element.")],
                [qsTr("KV cache reserved"), Theme.bytes(EngineController.loaded.kvBytesReserved), qsTr("Allocated when the model loads, for every position of the context.")],
                [qsTr("Loaded in"), Theme.ms(panel.d.loadMs)],
                [qsTr("Engine"), EngineController.loaded.device],
            ]
            delegate: RowLayout {
                required property var modelData
                Layout.columnSpan: 2
                Layout.fillWidth: true
                Label { text: modelData[0]; color: Theme.muted; Layout.preferredWidth: 150; ToolTip.visible: rowMouse.containsMouse && modelData.length > 2; ToolTip.text: modelData[2] ?? ""; MouseArea { id: rowMouse; anchors.fill: parent; hoverEnabled: true } }
                // Long words (the engine's kernel and ISA names) break anywhere rather than overflow.
                Label { text: String(modelData[1]); Layout.fillWidth: true; Layout.preferredWidth: 100; wrapMode: Text.WrapAtWordBoundaryOrAnywhere }
            }
        }
        Label {
            objectName: "remoteModelNote"
            Layout.columnSpan: 2
            Layout.rightMargin: Theme.spacing
            visible: EngineController.abilities.overNetwork
            text: qsTr("Served by %1 through its OpenAI-compatible API. A server tells its clients the model's name only: its layers, heads, weights and memory are not known here.").arg(EngineController.loaded.serverUrl)
            color: Theme.muted
            wrapMode: Text.Wrap
            Layout.preferredWidth: 100
            Layout.fillWidth: true
        }
        // What a block of this file's main quantized type holds, and why it speeds decode up.
        Label {
            objectName: "formatNote"
            Layout.columnSpan: 2
            Layout.topMargin: Theme.spacing / 2
            Layout.rightMargin: Theme.spacing  // clear of the scroll bar
            visible: text.length > 0
            text: panel.d.formatNote
            color: Theme.muted
            wrapMode: Text.Wrap
            Layout.preferredWidth: 100  // fills the row; its unwrapped width must not drive the layout
            Layout.fillWidth: true
        }
        Label {
            Layout.columnSpan: 2
            visible: EngineController.notices.length > 0
            text: EngineController.notices.join("\n")
            color: Theme.warning
            wrapMode: Text.Wrap
            Layout.preferredWidth: 100  // fills the row; its unwrapped width must not drive the layout
            Layout.fillWidth: true
        }
    }
}
