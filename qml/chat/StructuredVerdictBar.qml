import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base

// Under an answer that was asked to be structured (Settings → Structured output, kept with the
// answer): whether it is what it was asked to be, and valid JSON shown formatted on demand.
// `verdict` is ChatModel's `structured` role (gui/chat/structured_verdict.h); {} hides it.
ColumnLayout {
    id: root
    property var verdict: ({})
    property bool expanded: false
    visible: (verdict.kind ?? "") !== ""
    spacing: 2

    RowLayout {
        Layout.fillWidth: true
        Label {
            objectName: "structuredVerdict"
            text: root.verdict.summary ?? ""
            color: root.verdict.verdict === "valid" ? Theme.muted : Theme.warning
            font.pixelSize: Theme.fontSmall
            wrapMode: Text.Wrap
            Layout.fillWidth: true
        }
        ToolButton {
            objectName: "formattedJsonToggle"
            visible: (root.verdict.formatted ?? "") !== ""
            text: root.expanded ? qsTr("Hide formatted") : qsTr("Show formatted")
            font.pixelSize: Theme.fontSmall
            onClicked: root.expanded = !root.expanded
        }
    }
    TextEdit {
        objectName: "formattedJson"
        visible: root.expanded && (root.verdict.formatted ?? "") !== ""
        Layout.fillWidth: true
        text: visible ? root.verdict.formatted : ""
        textFormat: TextEdit.PlainText
        wrapMode: TextEdit.Wrap
        readOnly: true
        selectByMouse: true
        // Read-only text keeps copy and select-all; every other key combination is the window's.
        Keys.onShortcutOverride: (event) => event.accepted = event.matches(StandardKey.Copy) || event.matches(StandardKey.SelectAll)
        font.family: "monospace"
        font.pixelSize: Theme.fontSmall
        color: Theme.text
        selectionColor: Theme.accent
    }
}
