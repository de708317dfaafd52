import QtQml
import QtQuick
import QtQuick.Controls
import QtQuick.Dialogs
import QtQuick.Layouts
import Inferscope.Base
import Inferscope.Engine
import Inferscope.Chat
import Inferscope.Visualizer

// Side by side (issue 30): one prompt to the loaded model and to a second GGUF at once, two columns
// streaming with their own figures; once both have ended, each answer is read by the other model
// and tinted where the two part (SideBySide, side_by_side.h). Every figure comes from the engine.
Dialog {
    id: dialog
    objectName: "sideBySideDialog"
    title: qsTr("Side by side")
    modal: true
    anchors.centerIn: Overlay.overlay
    width: parent ? parent.width - 4 * Theme.spacing : 1000
    height: parent ? parent.height - 4 * Theme.spacing : 700
    padding: 2 * Theme.spacing
    standardButtons: Dialog.Close
    onOpened: {
        if (modelField.text === "" && recentFiles.length > 0)
            modelField.text = recentFiles.find((m) => m !== EngineController.loaded.path) ?? ""
        promptField.forceActiveFocus()
    }

    // The local files of the recent list (a server's entry is an address).
    readonly property var recentFiles: AppSettings.recentModels.filter((m) => !m.startsWith("http://") && !m.startsWith("https://"))
    property alias sideBySide: pair

    SideBySide {
        id: pair
        objectName: "sideBySide"
        chat: ChatController
    }

    function kl(v) { return v < 0.0001 && v > 0 ? v.toExponential(2) : v.toFixed(4) }
    function pct(v) { return (100 * v).toFixed(1) + "%" }

    contentItem: ColumnLayout {
        spacing: Theme.spacing
        Label {
            Layout.fillWidth: true
            wrapMode: Text.WordWrap
            color: Theme.muted
            text: qsTr("The same prompt to %1 and to a second model loaded beside it, both answering at once on half of the cores each. Then each answer is read by the other model: tinted where the two models' distributions part (KL, as Compare with… shows it).")
                      .arg(EngineController.hasModel ? EngineController.loaded.name : qsTr("the loaded model"))
        }
        RowLayout {
            Layout.fillWidth: true
            Label { text: qsTr("Second model") }
            TextField {
                id: modelField
                objectName: "sideBySideModel"
                Layout.fillWidth: true
                placeholderText: qsTr("path of a GGUF file")
                selectByMouse: true
            }
            Button {
                text: qsTr("Choose…")
                onClicked: {
                    if (AppSettings.fileDialogProblem !== "")
                        EngineController.reportError(AppSettings.fileDialogProblem)
                    else
                        fileLoader.item.open()
                }
            }
        }
        RowLayout {
            Layout.fillWidth: true
            TextField {
                id: promptField
                objectName: "sideBySidePrompt"
                Layout.fillWidth: true
                placeholderText: qsTr("A prompt for both models")
                selectByMouse: true
                onAccepted: runButton.clicked()
            }
            Button {
                id: runButton
                objectName: "sideBySideRun"
                text: pair.running ? qsTr("Stop") : qsTr("Run both")
                enabled: pair.running || pair.canRun
                onClicked: pair.running ? pair.cancel() : pair.run(promptField.text, modelField.text)
            }
        }
        Label {
            objectName: "sideBySideStatus"
            visible: text !== ""
            Layout.fillWidth: true
            wrapMode: Text.WordWrap
            font.pixelSize: Theme.fontSmall
            color: pair.running ? Theme.muted : Theme.warning
            text: pair.status
        }
        RowLayout {
            Layout.fillWidth: true
            Layout.fillHeight: true
            spacing: Theme.spacing
            Repeater {
                model: 2
                delegate: ColumnLayout {
                    id: column
                    required property int index
                    readonly property var c: index === 0 ? pair.columnA : pair.columnB
                    readonly property var other: index === 0 ? pair.columnB : pair.columnA
                    readonly property var cmp: c.compared ?? ({})
                    objectName: "sideBySideColumn" + index
                    Layout.fillWidth: true
                    Layout.fillHeight: true
                    Layout.preferredWidth: 100
                    spacing: 4

                    Label {
                        objectName: "columnTitle" + column.index
                        Layout.fillWidth: true
                        elide: Text.ElideMiddle
                        font.bold: true
                        text: (column.index === 0 ? "A · " : "B · ") + (column.c.name ?? "")
                    }
                    Label {
                        objectName: "columnFigures" + column.index
                        Layout.fillWidth: true
                        wrapMode: Text.WordWrap
                        font.pixelSize: Theme.fontSmall
                        color: Theme.muted
                        visible: (column.c.tokens ?? 0) > 0 || (column.c.prefillMs ?? -1) >= 0
                        text: ((column.c.loadMs ?? 0) > 0 ? qsTr("loaded in %1 · ").arg(Theme.ms(column.c.loadMs)) : "")
                              + qsTr("first token %1 · prefill %2 (%3) · decode %4 tok/s · %5 · weights %6 + KV cache %7 · %8")
                                  .arg(Theme.ms(column.c.firstTokenMs)).arg(Theme.ms(column.c.prefillMs)).arg(Theme.tokens(column.c.prefillTokens))
                                  .arg(Theme.rate(column.c.decodeTps)).arg(Theme.tokens(column.c.tokens))
                                  .arg(Theme.bytes(column.c.weightBytes)).arg(Theme.bytes(column.c.kvBytes))
                                  .arg(column.c.threads === 1 ? qsTr("1 thread") : qsTr("%1 threads").arg(column.c.threads ?? 0))
                    }
                    Frame {
                        Layout.fillWidth: true
                        Layout.fillHeight: true
                        padding: 6
                        ScrollView {
                            id: scroll
                            anchors.fill: parent
                            clip: true
                            TextEdit {
                                objectName: "columnText" + column.index
                                width: scroll.availableWidth
                                readOnly: true
                                selectByMouse: true
                                wrapMode: TextEdit.Wrap
                                textFormat: TextEdit.RichText
                                color: Theme.text
                                text: column.c.html ?? ""
                            }
                        }
                    }
                    Label {
                        objectName: "columnEnd" + column.index
                        Layout.fillWidth: true
                        wrapMode: Text.WordWrap
                        font.pixelSize: Theme.fontSmall
                        color: (column.c.error ?? "") !== "" ? Theme.warning : Theme.muted
                        visible: text !== ""
                        text: (column.c.error ?? "") !== "" ? column.c.error
                              : (column.c.streaming ?? false) ? qsTr("streaming…")
                              : (column.c.finish ?? "") !== "" ? qsTr("Ended: %1.").arg(column.c.finish) : ""
                    }
                    Label {
                        objectName: "columnCompared" + column.index
                        Layout.fillWidth: true
                        wrapMode: Text.WordWrap
                        font.pixelSize: Theme.fontSmall
                        visible: text !== ""
                        color: column.cmp.valid ? Theme.text : Theme.warning
                        text: column.cmp.valid
                              ? (column.cmp.onText
                                 ? qsTr("Read by %1 on the text (%2): %3 bits per byte under its own model, %4 under the other.")
                                       .arg(column.other.name).arg(column.cmp.why).arg(column.cmp.bitsPerByteOwn.toFixed(3)).arg(column.cmp.bitsPerByteOther.toFixed(3))
                                 : qsTr("Read by %1: mean KL %2 ± %3 nats (median %4, p99 %5, max %6), same top token %7 ± %8, perplexity %9 under its own model, %10 under the other.")
                                       .arg(column.other.name).arg(dialog.kl(column.cmp.meanKl)).arg(dialog.kl(column.cmp.meanKlError))
                                       .arg(dialog.kl(column.cmp.medianKl)).arg(dialog.kl(column.cmp.p99Kl)).arg(dialog.kl(column.cmp.maxKl))
                                       .arg(dialog.pct(column.cmp.top1Agreement)).arg(dialog.pct(column.cmp.top1AgreementError))
                                       .arg(column.cmp.perplexityOwn.toFixed(3)).arg(column.cmp.perplexityOther.toFixed(3)))
                              : (column.cmp.error ?? "") !== "" ? qsTr("Not compared: %1.").arg(column.cmp.error) : ""
                    }
                }
            }
        }
    }

    // Qt 6.4's FileDialog crashes on open when a QML module it needs is missing (as Main.qml's).
    Loader {
        id: fileLoader
        active: AppSettings.fileDialogProblem === ""
        sourceComponent: FileDialog {
            title: qsTr("The second model: a GGUF file")
            nameFilters: [qsTr("GGUF models (*.gguf)"), qsTr("All files (*)")]
            onAccepted: modelField.text = decodeURIComponent(selectedFile.toString().replace(/^file:\/\//, ""))
        }
    }
}
