import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import QtQuick.Dialogs
import Inferscope.Base
import Inferscope.Engine
import Inferscope.Chat
import Inferscope.Visualizer
import Inferscope

ApplicationWindow {
    id: window
    width: 1320
    height: 860
    minimumWidth: 820
    minimumHeight: 520
    visible: true
    // The platform appends " — Inferscope" (the application's display name) on its own.
    title: EngineController.hasModel ? EngineController.loaded.name : "Inferscope"
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
        highlightedText: Theme.textOnAccent
        placeholderText: Theme.muted
        mid: Theme.border
        dark: Theme.border
        light: Theme.surface
        toolTipBase: Theme.surface
        toolTipText: Theme.text
    }

    Binding { target: ChatController.messages; property: "darkTheme"; value: Theme.dark }

    KeyActivation { id: keyActivation }
    header: TopBar {
        Keys.onReturnPressed: (event) => keyActivation.activate(window.activeFocusItem, event)
        Keys.onEnterPressed: (event) => keyActivation.activate(window.activeFocusItem, event)
        onOpenModelRequested: window.openModelDialog()
        onWelcomeRequested: welcome.open()
        onConnectRequested: connectDialog.open()
        onLibraryRequested: library.open()
        onSideBySideRequested: sideBySide.open()
    }
    footer: StatusBar {}

    ColumnLayout {
        anchors.fill: parent
        spacing: 0
        Keys.onReturnPressed: (event) => keyActivation.activate(window.activeFocusItem, event)
        Keys.onEnterPressed: (event) => keyActivation.activate(window.activeFocusItem, event)

        LoadBanner { Layout.fillWidth: true }
        ErrorBanner { Layout.fillWidth: true }

        SplitView {
            Layout.fillWidth: true
            Layout.fillHeight: true
            orientation: Qt.Horizontal

            // The three fit the smallest window (820): 164 + 300 + 340 and the handles. Fixed
            // preferred widths (250 + 360 + 380) pushed the inspector's last tabs off the right edge.
            id: split
            ConversationSidebar {
                visible: AppSettings.sidebarVisible
                SplitView.preferredWidth: Math.max(160, Math.min(250, split.width * 0.2))
                SplitView.minimumWidth: 160
            }
            ChatView {
                SplitView.fillWidth: true
                SplitView.minimumWidth: 300
                // The step the Probabilities tab shows, outlined in its answer; a click on a token selects it.
                selectedRow: StepInspector.following ? -1 : StepInspector.selection.row
                selectedStep: StepInspector.following ? -1 : StepInspector.selection.step
                describeToken: (row, position) => StepInspector.describeAt(row, position)
                onTokenPicked: (row, step) => StepInspector.select(row, step)
            }
            Inspector {
                objectName: "inspector"
                visible: AppSettings.inspectorVisible
                SplitView.preferredWidth: Math.max(340, Math.min(380, split.width * 0.3))
                SplitView.minimumWidth: 340
            }
        }
    }

    // Qt 6.4's FileDialog crashes on open when a QML module it needs is missing: then it is never
    // made, and opening it says what to install (AppSettings.fileDialogProblem, set at start-up).
    function openModelDialog() {
        if (AppSettings.fileDialogProblem !== "")
            EngineController.reportError(AppSettings.fileDialogProblem)
        else
            modelDialogLoader.item.open()
    }
    Loader {
        id: modelDialogLoader
        active: AppSettings.fileDialogProblem === ""
        sourceComponent: FileDialog {
            objectName: "modelDialog"
            title: qsTr("Open a GGUF model")
            nameFilters: [qsTr("GGUF models (*.gguf)"), qsTr("All files (*)")]
            onAccepted: EngineController.loadModel(selectedFile)
        }
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

    WelcomeDialog { id: welcome; onLibraryRequested: library.open() }
    ConnectDialog { id: connectDialog }
    LibraryDialog { id: library }
    SideBySideDialog { id: sideBySide }

    Shortcut { sequence: StandardKey.Open; onActivated: window.openModelDialog() }
    Shortcut { sequence: StandardKey.HelpContents; onActivated: welcome.open() }
    Shortcut { sequence: "Ctrl+L"; onActivated: library.open() }
    Shortcut { sequence: "Esc"; enabled: ChatController.generating; onActivated: ChatController.stop() }
    Shortcut { sequence: "Ctrl+N"; onActivated: ChatController.newConversation() }
    Shortcut { sequence: "Ctrl+R"; enabled: ChatController.canRegenerate; onActivated: ChatController.regenerate() }
    Shortcut { sequence: "Ctrl+B"; onActivated: AppSettings.sidebarVisible = !AppSettings.sidebarVisible }
    Shortcut { sequence: "Ctrl+I"; onActivated: AppSettings.inspectorVisible = !AppSettings.inspectorVisible }
}
