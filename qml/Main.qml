import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import QtQuick.Dialogs
import Inferscope
import "chat"
import "controls"

ApplicationWindow {
    id: window
    width: 1320
    height: 860
    minimumWidth: 820
    minimumHeight: 520
    visible: true
    title: EngineController.hasModel ? "Inferscope — " + EngineController.modelName : "Inferscope"
    color: Theme.background

    palette {
        window: Theme.background
        windowText: Theme.text
        base: Theme.surface
        alternateBase: Theme.surfaceAlt
        text: Theme.text
        button: Theme.surfaceAlt
        buttonText: Theme.text
        highlight: Theme.accent
        highlightedText: "#ffffff"
        placeholderText: Theme.muted
        mid: Theme.border
        dark: Theme.border
        light: Theme.surface
        toolTipBase: Theme.surface
        toolTipText: Theme.text
    }

    Binding { target: ChatController.messages; property: "darkTheme"; value: Theme.dark }

    header: TopBar {
        onOpenModelRequested: modelDialog.open()
        onWelcomeRequested: welcome.open()
    }
    footer: StatusBar {}

    ColumnLayout {
        anchors.fill: parent
        spacing: 0

        LoadBanner { Layout.fillWidth: true }
        ErrorBanner { Layout.fillWidth: true }

        SplitView {
            Layout.fillWidth: true
            Layout.fillHeight: true
            orientation: Qt.Horizontal

            ConversationSidebar {
                visible: AppSettings.sidebarVisible
                SplitView.preferredWidth: 250
                SplitView.minimumWidth: 180
            }
            ChatView {
                SplitView.fillWidth: true
                SplitView.minimumWidth: 360
            }
            Inspector {
                visible: AppSettings.inspectorVisible
                SplitView.preferredWidth: 380
                SplitView.minimumWidth: 300
            }
        }
    }

    FileDialog {
        id: modelDialog
        title: qsTr("Open a GGUF model")
        nameFilters: [qsTr("GGUF models (*.gguf)"), qsTr("All files (*)")]
        onAccepted: EngineController.loadModel(selectedFile)
    }

    DropArea {
        anchors.fill: parent
        keys: ["text/uri-list"]
        onDropped: (drop) => {
            if (drop.hasUrls && drop.urls.length > 0) {
                EngineController.loadModel(drop.urls[0])
                drop.accept()
            }
        }
    }

    WelcomeDialog { id: welcome }

    Shortcut { sequence: StandardKey.Open; onActivated: modelDialog.open() }
    Shortcut { sequence: StandardKey.HelpContents; onActivated: welcome.open() }
    Shortcut { sequence: "Esc"; enabled: ChatController.generating; onActivated: ChatController.stop() }
    Shortcut { sequence: "Ctrl+N"; onActivated: ChatController.newConversation() }
    Shortcut { sequence: "Ctrl+R"; enabled: ChatController.canRegenerate; onActivated: ChatController.regenerate() }
    Shortcut { sequence: "Ctrl+B"; onActivated: AppSettings.sidebarVisible = !AppSettings.sidebarVisible }
    Shortcut { sequence: "Ctrl+I"; onActivated: AppSettings.inspectorVisible = !AppSettings.inspectorVisible }
}
