import QtQuick
import Inferscope.Base

// The keyboard focus, outlined: Fusion draws no focus on tabs and list rows, and a faint one on
// buttons. Put inside the focusable item; shown while it has focus from the keyboard.
Rectangle {
    objectName: "focusRing"
    property bool shown: false
    anchors.fill: parent
    anchors.margins: 1
    visible: shown
    z: 10
    color: "transparent"
    border.color: Theme.accent
    border.width: 2
    radius: 3
}
