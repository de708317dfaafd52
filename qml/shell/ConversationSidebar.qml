import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base
import Inferscope.Store
import Inferscope.Chat
import Inferscope

// Saved conversations: full-text search over every message, open, rename, export, delete.
Rectangle {
    id: sidebar
    color: Theme.surface
    Rectangle { anchors.right: parent.right; width: 1; height: parent.height; color: Theme.border }

    property var exportId: 0
    property string exportFormat: "markdown"

    ConversationListModel {
        id: conversations
        store: ChatController.store
        filter: search.text
    }

    ColumnLayout {
        anchors.fill: parent
        anchors.margins: Theme.spacing
        anchors.rightMargin: Theme.spacing + 1
        spacing: Theme.spacing

        RowLayout {
            Layout.fillWidth: true
            // Elided rather than drawn under "+ New" in the smallest window's narrow sidebar.
            Label { text: qsTr("Conversations"); font.bold: true; elide: Text.ElideRight; Layout.fillWidth: true; Layout.preferredWidth: 40 }
            Button {
                text: qsTr("+ New")
                flat: true
                onClicked: ChatController.newConversation()
            }
        }
        TextField {
            id: search
            objectName: "searchField"
            Layout.fillWidth: true
            placeholderText: qsTr("Search all messages…")
            selectByMouse: true
        }
        Label {
            visible: conversations.count === 0
            Layout.fillWidth: true
            Layout.preferredWidth: 100
            wrapMode: Text.Wrap
            color: Theme.muted
            font.pixelSize: Theme.fontSmall
            text: search.text !== "" ? qsTr("Nothing matches “%1”.").arg(Units.isolate(search.text))
                  : ChatController.store && !ChatController.store.persistent ? qsTr("Conversations are not being saved this session.")
                  : qsTr("Your conversations are kept here.")
        }

        ListView {
            id: list
            objectName: "conversationList"
            Layout.fillWidth: true
            Layout.fillHeight: true
            clip: true
            model: conversations
            spacing: 2
            ScrollBar.vertical: ScrollBar {}
            // From the keyboard: one Tab stop, Up and Down choose a row (outlined), Enter or Space
            // opens it, the Menu key (or Shift+F10) opens its actions; Tab goes on to its ⋯ button.
            activeFocusOnTab: true
            keyNavigationEnabled: true
            Keys.onReturnPressed: openCurrent()
            Keys.onEnterPressed: openCurrent()
            Keys.onSpacePressed: openCurrent()
            Keys.onMenuPressed: if (currentItem) currentItem.showActions()
            Keys.onPressed: (event) => {
                if (event.key === Qt.Key_F10 && (event.modifiers & Qt.ShiftModifier) && currentItem) {
                    currentItem.showActions()
                    event.accepted = true
                }
            }
            function openCurrent() {
                if (currentItem && !currentItem.renaming) openRow(currentItem)
            }
            // A conversation, and when a search found the words only in another version of one
            // of its answers (regenerated or branched away), that version shown.
            function openRow(item) {
                if (!ChatController.openConversation(item.conversationId) || item.matchVersion < 0) return
                const at = ChatController.messages.rowOfStored(item.matchMessageId)
                if (at >= 0) ChatController.showVariant(at, item.matchVersion)
            }

            delegate: ItemDelegate {
                id: row
                required property var conversationId
                required property string title
                required property var updatedAt
                required property int messageCount
                required property string snippet
                required property var matchMessageId
                required property int matchVersion
                property bool renaming: false
                width: ListView.view.width
                highlighted: conversationId === ChatController.conversationId
                focusPolicy: Qt.NoFocus  // the list takes the focus, not each row
                onClicked: {
                    list.currentIndex = index
                    if (!renaming) list.openRow(row)
                }
                required property int index
                function showActions() { menu.popup(actions, 0, actions.height) }
                FocusRing { shown: row.ListView.isCurrentItem && list.activeFocus }

                contentItem: RowLayout {
                  spacing: 2
                  ColumnLayout {
                    spacing: 2
                    Layout.fillWidth: true
                    Label {
                        visible: !row.renaming
                        text: row.title !== "" ? row.title : qsTr("(untitled)")
                        elide: Text.ElideRight
                        Layout.fillWidth: true
                        font.bold: row.highlighted
                        color: row.highlighted ? palette.highlightedText : Theme.text
                    }
                    TextField {
                        id: renameField
                        visible: row.renaming
                        Layout.fillWidth: true
                        text: row.title
                        onAccepted: { ChatController.renameConversation(row.conversationId, text); row.renaming = false }
                        Keys.onEscapePressed: row.renaming = false
                    }
                    Label {
                        objectName: "searchSnippet"
                        visible: row.snippet !== ""
                        // Found in another version of an answer: which one (opening shows it).
                        text: row.matchVersion >= 0 ? qsTr("In version %1: %2").arg(row.matchVersion + 1).arg(row.snippet) : row.snippet
                        color: row.highlighted ? palette.highlightedText : Theme.muted
                        font.pixelSize: Theme.fontSmall
                        wrapMode: Text.Wrap
                        maximumLineCount: 2
                        elide: Text.ElideRight
                        Layout.fillWidth: true
                        Layout.preferredWidth: 100
                    }
                    Label {
                        text: (row.messageCount === 1 ? qsTr("1 message") : qsTr("%1 messages").arg(row.messageCount))
                              + " · " + Qt.formatDateTime(row.updatedAt, "yyyy-MM-dd hh:mm")
                        color: row.highlighted ? palette.highlightedText : Theme.muted
                        font.pixelSize: Theme.fontSmall
                        // The narrow sidebar of the smallest window cut the time off mid-digit.
                        elide: Text.ElideRight
                        Layout.fillWidth: true
                        Layout.preferredWidth: 40
                    }
                  }
                  // Rename, export and delete without a right-click (and from the keyboard).
                  ToolButton {
                      id: actions
                      objectName: "conversationActions"
                      text: "⋯"
                      palette.buttonText: row.highlighted ? row.palette.highlightedText : Theme.text
                      Accessible.name: qsTr("Actions for %1").arg(row.title)
                      ToolTip.text: qsTr("Rename, export or delete")
                      ToolTip.visible: hovered
                      ToolTip.delay: 500
                      Layout.alignment: Qt.AlignTop
                      focusPolicy: row.ListView.isCurrentItem ? Qt.StrongFocus : Qt.NoFocus
                      onClicked: row.showActions()
                      Keys.onReturnPressed: row.showActions()  // before the list's Enter, which opens the row
                      Keys.onEnterPressed: row.showActions()
                  }
                }

                TapHandler {
                    acceptedButtons: Qt.RightButton
                    onTapped: menu.popup()
                }
                Menu {
                    id: menu
                    objectName: "conversationMenu"
                    MenuItem { text: qsTr("Rename"); onTriggered: { row.renaming = true; renameField.forceActiveFocus() } }
                    MenuItem {
                        text: qsTr("Export as Markdown…")
                        onTriggered: { sidebar.exportId = row.conversationId; sidebar.exportFormat = "markdown"; exportDialog.suggestedName = row.title; exportDialog.open() }
                    }
                    MenuItem {
                        text: qsTr("Export as JSON (with token probabilities)…")
                        onTriggered: { sidebar.exportId = row.conversationId; sidebar.exportFormat = "json"; exportDialog.suggestedName = row.title; exportDialog.open() }
                    }
                    MenuSeparator {}
                    MenuItem {
                        text: qsTr("Delete")
                        onTriggered: { sidebar.exportId = row.conversationId; deleteDialog.open() }
                    }
                }
            }
        }
    }

    SaveAsDialog {
        id: exportDialog
        objectName: "exportDialog"
        title: qsTr("Export conversation")
        suffix: sidebar.exportFormat === "json" ? "json" : "md"
        onChosen: (path, fileUrl) => ChatController.exportConversation(sidebar.exportId, fileUrl, sidebar.exportFormat)
    }
    Dialog {
        id: deleteDialog
        anchors.centerIn: Overlay.overlay
        modal: true
        title: qsTr("Delete this conversation?")
        standardButtons: Dialog.Yes | Dialog.Cancel
        onAccepted: ChatController.deleteConversation(sidebar.exportId)
        Label { text: qsTr("Its messages and token records are removed for good.") }
    }
}
