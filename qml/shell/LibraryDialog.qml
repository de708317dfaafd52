import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base
import Inferscope.Engine
import Inferscope.Library
import Inferscope

// "Models on this computer" (Ctrl+L): every GGUF file Ollama, LM Studio, GPT4All, Jan, the Hugging
// Face and llama.cpp caches, our downloads and the person's own folders hold (ModelLibrary), with
// what each is and whether it fits in memory now. Open loads the file where it lies; nothing is
// copied or written into another tool's folder.
Dialog {
    id: dialog
    objectName: "libraryDialog"
    title: qsTr("Models on this computer")
    modal: true
    anchors.centerIn: Overlay.overlay
    width: Math.min(820, parent ? parent.width - 4 * Theme.spacing : 820)
    height: Math.min(640, parent ? parent.height - 4 * Theme.spacing : 640)
    padding: 2 * Theme.spacing
    standardButtons: Dialog.Close

    onOpened: {
        if (ModelLibrary.count === 0 && !ModelLibrary.scanning) ModelLibrary.rescan()
        else ModelLibrary.refit()  // memory changes: the fit is measured again
        list.forceActiveFocus()
    }

    // Loads the row's file with the context chosen for it (remembered for the next time).
    function openRow(row) {
        const item = list.itemAtIndex(row)
        if (!item || !item.canOpen) return
        ModelLibrary.rememberContext(item.path, item.chosenContext)
        EngineController.loadModel(item.path, item.chosenContext)
        dialog.close()
    }

    contentItem: ColumnLayout {
        spacing: Theme.spacing

        TabBar {
            id: tabs
            objectName: "libraryTabs"
            Layout.fillWidth: true
            TabButton { objectName: "localTab"; text: qsTr("On this computer") }
            TabButton { objectName: "hubTab"; text: qsTr("Get from Hugging Face") }
        }

        StackLayout {
            Layout.fillWidth: true
            Layout.fillHeight: true
            currentIndex: tabs.currentIndex

            ColumnLayout {
                spacing: Theme.spacing
                RowLayout {
                    Layout.fillWidth: true
                    spacing: Theme.spacing
                    BusyIndicator { running: ModelLibrary.scanning; visible: running; implicitWidth: 24; implicitHeight: 24 }
                    Label {
                        objectName: "librarySummary"
                        Layout.fillWidth: true
                        wrapMode: Text.Wrap
                        text: ModelLibrary.scanning
                              ? (ModelLibrary.headersTotal > 0 ? qsTr("Reading headers: %1 of %2…").arg(ModelLibrary.headersDone).arg(ModelLibrary.headersTotal)
                                                               : qsTr("Looking through the folders of Ollama, LM Studio, GPT4All, Jan and the model caches…"))
                              : ModelLibrary.summary
                    }
                    Label {
                        text: ModelLibrary.memoryNow
                        color: Theme.muted
                        font.pixelSize: Theme.fontSmall
                    }
                    Button {
                        objectName: "libraryRescan"
                        text: qsTr("Look again")
                        enabled: !ModelLibrary.scanning
                        onClicked: ModelLibrary.rescan()
                    }
                }

                ListView {
                    id: list
                    objectName: "libraryList"
                    Layout.fillWidth: true
                    Layout.fillHeight: true
                    clip: true
                    model: ModelLibrary
                    currentIndex: 0
                    keyNavigationEnabled: true
                    boundsBehavior: Flickable.StopAtBounds
                    ScrollBar.vertical: ScrollBar {}
                    Keys.onReturnPressed: dialog.openRow(currentIndex)
                    Keys.onEnterPressed: dialog.openRow(currentIndex)
                    Accessible.role: Accessible.List
                    Accessible.name: qsTr("Models found")

                    delegate: ItemDelegate {
                        id: row
                        required property int index
                        required property string name
                        required property string source
                        required property string architecture
                        required property double parameters
                        required property string quantization
                        required property double bytes
                        required property int context
                        required property string path
                        required property string folder
                        required property bool runnable
                        required property string fit
                        required property string fitText
                        // The context to open it with: the one remembered for it, else its trained length;
                        // the fit follows the choice (the current row shows the slider).
                        readonly property var choices: ModelLibrary.contextChoices(index)
                        property int chosenContext: {
                            const remembered = ModelLibrary.rememberedContext(path)
                            return remembered > 0 ? remembered : context
                        }
                        readonly property var chosenFit: { row.fitText; return ModelLibrary.fitAt(index, chosenContext) }  // again after a refit
                        readonly property bool canOpen: runnable && chosenFit.fit !== "no" && chosenFit.fit !== undefined
                        objectName: "libraryRow" + index
                        width: ListView.view.width
                        highlighted: ListView.isCurrentItem
                        onClicked: list.currentIndex = index
                        onDoubleClicked: dialog.openRow(index)
                        Accessible.name: name + ", " + source + ", " + fitText
                        // A soft highlight: the row's texts keep their colours (the fit's green, amber, red).
                        background: Rectangle {
                            color: row.highlighted ? Theme.accentSoft : row.hovered ? Theme.surfaceAlt : "transparent"
                            radius: 4
                        }

                        contentItem: RowLayout {
                            spacing: Theme.spacing
                            ColumnLayout {
                                Layout.fillWidth: true
                                spacing: 2
                                RowLayout {
                                    Layout.fillWidth: true
                                    Label {
                                        text: row.name
                                        color: Theme.text
                                        font.bold: true
                                        elide: Text.ElideMiddle
                                        Layout.fillWidth: true
                                    }
                                    Label {
                                        text: row.source
                                        color: Theme.muted
                                        font.pixelSize: Theme.fontSmall
                                    }
                                }
                                Label {
                                    objectName: "libraryFacts"
                                    color: Theme.text
                                    Layout.fillWidth: true
                                    elide: Text.ElideRight
                                    font.pixelSize: Theme.fontSmall
                                    text: row.architecture === ""
                                          ? Theme.bytes(row.bytes)
                                          : [row.architecture,
                                             qsTr("%1 parameters").arg(Theme.compactCount(row.parameters)),
                                             row.quantization,
                                             Theme.bytes(row.bytes),
                                             row.context > 0 ? qsTr("trained context %1").arg(Theme.count(row.context)) : qsTr("no trained context")].join(" · ")
                                }
                                RowLayout {
                                    Layout.fillWidth: true
                                    visible: row.highlighted && row.runnable && row.choices.length > 1
                                    spacing: Theme.spacing
                                    Label { text: qsTr("Context"); font.pixelSize: Theme.fontSmall }
                                    Slider {
                                        id: contextSlider
                                        objectName: "libraryContext"
                                        Layout.preferredWidth: 220
                                        from: 0
                                        to: Math.max(0, row.choices.length - 1)
                                        stepSize: 1
                                        snapMode: Slider.SnapAlways
                                        value: Math.max(0, row.choices.indexOf(row.chosenContext))
                                        onMoved: row.chosenContext = row.choices[Math.round(value)]
                                        Accessible.name: qsTr("Context length")
                                    }
                                    Label {
                                        text: qsTr("%1 tokens").arg(Theme.count(row.chosenContext))
                                        font.pixelSize: Theme.fontSmall
                                    }
                                }
                                Label {
                                    objectName: "libraryFit"
                                    Layout.fillWidth: true
                                    wrapMode: Text.Wrap
                                    font.pixelSize: Theme.fontSmall
                                    text: row.chosenFit.text ?? row.fitText
                                    readonly property string verdict: row.chosenFit.fit ?? row.fit
                                    color: verdict === "fits" ? Theme.success : verdict === "smaller" ? Theme.warning : verdict === "no" ? Theme.danger : Theme.muted
                                }
                                Label {
                                    Layout.fillWidth: true
                                    elide: Text.ElideMiddle
                                    font.pixelSize: Theme.fontSmall
                                    color: Theme.muted
                                    text: row.folder
                                }
                            }
                            Button {
                                objectName: "libraryOpen" + row.index
                                text: qsTr("Open")
                                enabled: row.canOpen && !EngineController.busy
                                onClicked: dialog.openRow(row.index)
                                ToolTip.visible: hovered
                                ToolTip.text: qsTr("Load this file where it lies (nothing is copied).")
                            }
                        }
                    }
                }

                // The person's own folders: looked through with the tools' ones.
                RowLayout {
                    Layout.fillWidth: true
                    spacing: Theme.spacing
                    Label { text: qsTr("Also look in") }
                    TextField {
                        id: folderField
                        objectName: "libraryFolderField"
                        Layout.fillWidth: true
                        placeholderText: qsTr("a folder with .gguf files, e.g. ~/models")
                        selectByMouse: true
                        Accessible.name: qsTr("Folder to add")
                        onAccepted: addButton.clicked()
                    }
                    Button {
                        id: addButton
                        objectName: "libraryAddFolder"
                        text: qsTr("Add")
                        enabled: folderField.text.trim() !== ""
                        onClicked: {
                            if (ModelLibrary.addFolder(folderField.text.trim())) {
                                folderField.text = ""
                                folderError.text = ""
                            } else {
                                folderError.text = qsTr("Not added: no such folder, or it is in the list already.")
                            }
                        }
                    }
                }
                Label {
                    id: folderError
                    objectName: "libraryFolderError"
                    visible: text !== ""
                    color: Theme.danger
                    font.pixelSize: Theme.fontSmall
                }
                Flow {
                    Layout.fillWidth: true
                    spacing: Theme.spacing / 2
                    visible: ModelLibrary.folders.length > 0
                    Repeater {
                        model: ModelLibrary.folders
                        delegate: Button {
                            required property string modelData
                            flat: true
                            font.pixelSize: Theme.fontSmall
                            text: modelData + "  ✕"
                            onClicked: ModelLibrary.removeFolder(modelData)
                            ToolTip.visible: hovered
                            ToolTip.text: qsTr("Stop looking in this folder")
                        }
                    }
                }
                Label {
                    objectName: "libraryNotes"
                    Layout.fillWidth: true
                    visible: ModelLibrary.notes.length > 0 && !ModelLibrary.scanning
                    wrapMode: Text.Wrap
                    color: Theme.muted
                    font.pixelSize: Theme.fontSmall
                    text: qsTr("Skipped: %1").arg(ModelLibrary.notes.join("; "))
                }
            }

            // The hub: a search, a repository's files with their fit, one download at a time.
            HubTab {
                onOpenFile: path => {
                    EngineController.loadModel(path, ModelLibrary.rememberedContext(path))
                    dialog.close()
                }
            }
        }
    }
}
