import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope

// Saved conversations: search (full text over every message), open, rename, export, delete.
Rectangle {
    color: Theme.surface
    Rectangle { anchors.right: parent.right; width: 1; height: parent.height; color: Theme.border }

    ColumnLayout {
        anchors.fill: parent
        anchors.margins: Theme.spacing
        spacing: Theme.spacing
        Label { text: qsTr("Conversations"); font.bold: true }
        Label { text: qsTr("(saved conversations appear here)"); color: Theme.muted; font.pixelSize: Theme.fontSmall }
        Item { Layout.fillHeight: true }
    }
}
