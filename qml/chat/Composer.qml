import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base
import Inferscope.Chat

// Where the user writes. Enter sends, Shift+Enter breaks the line; while the model answers the
// button stops it (Esc too).
Rectangle {
    id: composer
    color: Theme.surface
    implicitHeight: Math.min(layout.implicitHeight + 2 * Theme.spacing, 240)
    Rectangle { anchors.top: parent.top; width: parent.width; height: 1; color: Theme.border }

    function submit() {
        if (ChatController.send(input.text)) input.text = ""
    }

    RowLayout {
        id: layout
        anchors.fill: parent
        anchors.margins: Theme.spacing
        spacing: Theme.spacing

        ScrollView {
            Layout.fillWidth: true
            Layout.fillHeight: true
            Layout.minimumHeight: 40
            TextArea {
                id: input
                objectName: "composerInput"
                wrapMode: TextEdit.Wrap
                font.pixelSize: Theme.fontNormal
                placeholderText: ChatController.mode === ChatController.Completion
                                 ? qsTr("Write the beginning of a text; the model continues it…")
                                 : qsTr("Message the model…")
                // A paste that could never fit the context is refused before this field lays it
                // out (10 MB would take it about 10 s); the error banner says why.
                Keys.onPressed: (event) => {
                    if (event.matches(StandardKey.Paste) && !ChatController.pasteAllowed()) event.accepted = true
                }
                Keys.onReturnPressed: (event) => {
                    if (event.modifiers & Qt.ShiftModifier) { event.accepted = false; return }
                    composer.submit()
                }
                Keys.onEnterPressed: (event) => composer.submit()
                // Tab moves on (the sidebar, top bar and inspector are reachable from the keyboard);
                // a tab character is rarely wanted in a prompt.
                Keys.onTabPressed: (event) => input.nextItemInFocusChain(true).forceActiveFocus(Qt.TabFocusReason)
                Keys.onBacktabPressed: (event) => input.nextItemInFocusChain(false).forceActiveFocus(Qt.BacktabFocusReason)
                Accessible.name: qsTr("Message")
            }
        }
        Button {
            objectName: "sendButton"
            text: ChatController.generating ? qsTr("Stop") : qsTr("Send")
            highlighted: !ChatController.generating
            enabled: ChatController.generating || ChatController.canSend
            onClicked: ChatController.generating ? ChatController.stop() : composer.submit()
            ToolTip.visible: hovered
            ToolTip.text: ChatController.generating ? qsTr("Stop generating (Esc)")
                          : SamplingSettings.valid ? qsTr("Send (Enter)") : SamplingSettings.validationError
        }
    }
}
