import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base
import Inferscope.Engine
import Inferscope.Library
import Inferscope.Chat
import Inferscope

// The window's toolbar: panels, the model (open, recent), chat or completion mode and template.
ToolBar {
    id: bar
    signal openModelRequested()
    signal connectRequested()
    signal welcomeRequested()
    signal libraryRequested()
    signal sideBySideRequested()

    background: Rectangle {
        color: Theme.surface
        Rectangle { anchors.bottom: parent.bottom; width: parent.width; height: 1; color: Theme.border }
    }

    RowLayout {
        anchors.fill: parent
        anchors.leftMargin: Theme.spacing
        anchors.rightMargin: Theme.spacing
        spacing: Theme.spacing

        ToolButton {
            text: "☰"
            checkable: true
            checked: AppSettings.sidebarVisible
            onToggled: AppSettings.sidebarVisible = checked
            ToolTip.visible: hovered
            ToolTip.text: qsTr("Conversations (Ctrl+B)")
        }

        Button {
            id: modelButton
            objectName: "modelButton"
            flat: true
            Layout.maximumWidth: 360
            text: EngineController.hasModel ? (EngineController.abilities.overNetwork ? EngineController.entryLabel(EngineController.loaded.path) : EngineController.loaded.name) + "  ▾" : qsTr("Open a model…  ▾")
            font.bold: true
            onClicked: modelMenu.popup(modelButton, 0, modelButton.height)
            ToolTip.visible: hovered && EngineController.hasModel
            ToolTip.text: EngineController.loaded.path
            Menu {
                id: modelMenu
                // As wide as its longest entry (the style's 200 px cut two servers' labels alike),
                // within the window.
                width: {
                    let widest = 200;
                    for (let i = 0; i < count; ++i) {
                        const item = itemAt(i);
                        if (item) widest = Math.max(widest, item.implicitWidth);
                    }
                    return Math.min(widest + leftPadding + rightPadding, bar.width - 16);
                }
                MenuItem { objectName: "libraryItem"; text: qsTr("Models on this computer…  (Ctrl+L)"); onTriggered: bar.libraryRequested() }
                MenuItem { text: qsTr("Open GGUF file…  (Ctrl+O)"); onTriggered: bar.openModelRequested() }
                MenuItem { objectName: "connectItem"; text: qsTr("Connect to a server…"); onTriggered: bar.connectRequested() }
                MenuItem { text: qsTr("Which models work, shortcuts…  (F1)"); onTriggered: bar.welcomeRequested() }
                MenuSeparator { visible: AppSettings.modelChoices.length > 0 }
                Repeater {
                    id: choices
                    model: AppSettings.modelChoices
                    // Distinct labels for distinct entries: two servers with the same model, two
                    // files of the same name in different folders (EngineController::entryLabels).
                    readonly property var labels: EngineController.entryLabels(AppSettings.modelChoices)
                    delegate: MenuItem {
                        required property string modelData
                        required property int index
                        objectName: "recentModel" + index
                        // (The list and its labels follow the same change; until both have, the entry's own label.)
                        readonly property string label: choices.labels[index] ?? EngineController.entryLabel(modelData)
                        text: modelData === AppSettings.bundledModel ? qsTr("%1 (bundled)").arg(label) : label
                        onTriggered: EngineController.loadModel(modelData, ModelLibrary.rememberedContext(modelData))
                    }
                }
            }
        }

        Label {
            text: EngineController.hasModel ? EngineController.loaded.device + " · " + EngineController.loaded.precision : ""
            color: Theme.muted
            font.pixelSize: Theme.fontSmall
            elide: Text.ElideRight
            Layout.fillWidth: true
        }

        ComboBox {
            id: modeBox
            objectName: "modeBox"
            model: [qsTr("Chat"), qsTr("Completion")]
            currentIndex: ChatController.mode === ChatController.Chat ? 0 : 1
            onActivated: (i) => ChatController.mode = (i === 0 ? ChatController.Chat : ChatController.Completion)
            enabled: !ChatController.generating && !EngineController.abilities.ownTemplate
            ToolTip.visible: hovered
            ToolTip.text: EngineController.abilities.ownTemplate ? qsTr("A model on a server answers in chat mode: the server applies its own template.")
                                                                  : qsTr("Chat wraps each turn in the model's chat template; completion continues your text as written.")
        }
        ComboBox {
            visible: ChatController.mode === ChatController.Chat && !EngineController.abilities.ownTemplate  // the server's own template
            model: ChatController.templateNames
            currentIndex: Math.max(0, ChatController.templateNames.indexOf(ChatController.templateChoice))
            displayText: ChatController.templateChoice === "auto" ? qsTr("auto (%1)").arg(ChatController.effectiveTemplate) : currentText
            onActivated: (i) => ChatController.templateChoice = ChatController.templateNames[i]
            enabled: !ChatController.generating
            ToolTip.visible: hovered
            ToolTip.text: qsTr("Chat template: auto follows the model's metadata.")
        }

        ToolButton {
            objectName: "sideBySideButton"
            text: qsTr("Side by side")
            enabled: EngineController.hasModel && EngineController.abilities.comparesModels && !ChatController.generating
            onClicked: bar.sideBySideRequested()
            ToolTip.visible: hovered
            ToolTip.text: qsTr("One prompt to this model and a second one at once, in two columns")
        }
        ToolButton {
            text: qsTr("New chat")
            onClicked: ChatController.newConversation()
            ToolTip.visible: hovered
            ToolTip.text: qsTr("Start a new conversation (Ctrl+N)")
        }
        ToolButton {
            text: Theme.dark ? "☀" : "☾"
            onClicked: AppSettings.theme = Theme.dark ? "light" : "dark"
            ToolTip.visible: hovered
            ToolTip.text: qsTr("Light or dark theme")
        }
        ToolButton {
            text: "◨"
            checkable: true
            checked: AppSettings.inspectorVisible
            onToggled: AppSettings.inspectorVisible = checked
            ToolTip.visible: hovered
            ToolTip.text: qsTr("Inspector (Ctrl+I)")
        }
    }
}
