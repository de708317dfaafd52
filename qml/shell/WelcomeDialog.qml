import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base
import Inferscope.Library
import Inferscope

// The first-run welcome: what the panels show, which models work and where to find them, that
// nothing leaves the machine, and the keyboard shortcuts. Opens by itself until closed once
// (AppSettings.welcomeSeen; never in --screenshot runs); F1 and the model menu reopen it.
Dialog {
    id: dialog
    objectName: "welcomeDialog"
    title: qsTr("Welcome to Inferscope")
    modal: true
    anchors.centerIn: Overlay.overlay
    width: Math.min(640, parent ? parent.width - 4 * Theme.spacing : 640)
    height: Math.min(implicitHeight, parent ? parent.height - 4 * Theme.spacing : implicitHeight)
    padding: 2 * Theme.spacing

    // Shown in the shortcut table; Main.qml and the composer define the keys themselves.
    readonly property var shortcuts: [
        [qsTr("Enter"), qsTr("Send the message")],
        [qsTr("Shift+Enter"), qsTr("New line in the message")],
        [qsTr("Esc"), qsTr("Stop generating")],
        [qsTr("Ctrl+R"), qsTr("Regenerate the last answer")],
        [qsTr("Ctrl+N"), qsTr("New chat")],
        [qsTr("Ctrl+O"), qsTr("Open a GGUF model")],
        [qsTr("Ctrl+L"), qsTr("Models on this computer")],
        [qsTr("Ctrl+B"), qsTr("Show or hide the conversations")],
        [qsTr("Ctrl+I"), qsTr("Show or hide the inspector")],
        [qsTr("F1"), qsTr("This window")]
    ]

    signal libraryRequested()

    Component.onCompleted: if (!AppSettings.welcomeSeen) open()
    onClosed: AppSettings.welcomeSeen = true
    // The models this computer already has (Ollama's, LM Studio's, …): looked for while this is read.
    onOpened: if (ModelLibrary.count === 0 && !ModelLibrary.scanning) ModelLibrary.rescan()

    component Heading: Label {
        font.bold: true
        font.pixelSize: Theme.fontNormal + 1
        color: Theme.text
        Layout.topMargin: Theme.spacing
    }
    component Para: Label {
        wrapMode: Text.WordWrap
        textFormat: Text.StyledText
        color: Theme.text
        font.pixelSize: Theme.fontNormal
        Layout.fillWidth: true
    }

    contentItem: ScrollView {
        id: scroll
        clip: true
        contentWidth: availableWidth
        implicitHeight: body.implicitHeight
        ColumnLayout {
            id: body
            width: scroll.availableWidth
            spacing: Theme.spacing / 2

            Para {
                text: qsTr("Chat with a language model on this computer and watch it work: each answer is made one token at a time, and the inspector on the right shows how.")
            }

            Heading { text: qsTr("The inspector's panels") }
            Para {
                text: qsTr("<b>Probabilities</b> — for each token: the candidates the model considered, their probabilities after temperature, top-k, top-p and min-p, the entropy, and which one was picked. Click a word in an answer to see its step.")
            }
            Para {
                text: qsTr("<b>Timeline</b> — prefill (the whole prompt in one pass) and every decode step (one token per pass), with tokens per second against what this machine's memory and cores allow.")
            }
            Para {
                text: qsTr("<b>Layers</b> and <b>Attention</b> — inside the model for the selected token: what each layer would already have predicted (the logit lens), and which earlier tokens each attention head looked at.")
            }
            Para {
                text: qsTr("<b>KV cache</b> — the keys and values kept for every layer and position so earlier tokens are never recomputed, how many bytes that takes, and what a smaller cache type (q8_0, q4_0) costs in quality, measured.")
            }

            Heading { text: qsTr("Your own models") }
            Para {
                text: qsTr("A small story model is included. Open any GGUF file with Ctrl+O, the model menu or by dropping it on the window. Inferscope runs the <b>Llama</b> (1, 2, 3.x, TinyLlama, Mistral), <b>Qwen</b> 2/2.5/3, <b>Gemma</b> 2/3 and <b>Phi-3</b> families, with weights in F32, F16, BF16 or any format llama-quantize writes without an importance matrix — <b>Q4_K_M</b>, Q5_K_M, Q6_K, Q8_0 and the rest — for example the Llama 3.2 1B Instruct, Qwen2.5 1.5B Instruct or Gemma 3 1B GGUFs on Hugging Face. Other formats (IQ2, IQ3, …) and architectures are refused with a message that names them.")
            }

            RowLayout {
                Layout.fillWidth: true
                spacing: Theme.spacing
                Para {
                    objectName: "welcomeLibrary"
                    text: ModelLibrary.scanning ? qsTr("Looking for the models you already have (Ollama, LM Studio, GPT4All, Jan, the Hugging Face cache)…")
                                                : ModelLibrary.summary
                }
                Button {
                    text: qsTr("Show them  (Ctrl+L)")
                    enabled: ModelLibrary.count > 0
                    onClicked: { dialog.close(); dialog.libraryRequested() }
                }
            }

            Heading { text: qsTr("Private") }
            Para {
                text: qsTr("Everything runs here: nothing you type and nothing the model writes leaves this machine, unless you connect to a server yourself (model menu → Connect to a server…). Conversations are kept in your app-data folder.")
            }

            Heading { text: qsTr("Keyboard") }
            GridLayout {
                objectName: "shortcutTable"
                columns: 2
                columnSpacing: 2 * Theme.spacing
                rowSpacing: 2
                Layout.fillWidth: true
                Repeater {
                    model: dialog.shortcuts.length * 2
                    delegate: Label {
                        required property int index
                        readonly property bool isKey: index % 2 === 0
                        text: dialog.shortcuts[Math.floor(index / 2)][isKey ? 0 : 1]
                        font.family: isKey ? "monospace" : font.family
                        font.bold: isKey
                        color: isKey ? Theme.accent : Theme.text
                        Layout.fillWidth: !isKey
                    }
                }
            }
        }
    }

    footer: DialogButtonBox {
        Button {
            objectName: "welcomeStart"
            text: qsTr("Start")
            highlighted: true
            DialogButtonBox.buttonRole: DialogButtonBox.AcceptRole
        }
    }
}
