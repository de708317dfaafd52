import QtQuick
import QtQuick.Controls
import QtQuick.Shapes
import Inferscope.Base
import Inferscope.Visualizer

// A term of the KV-cache panel with its one-sentence explanation on hover (underlined when it has one).
Label {
    id: term
    property string explanation
    color: Theme.text

    Shape {  // dotted underline: hover for the explanation
        visible: term.explanation !== ""
        anchors.left: parent.left
        anchors.bottom: parent.bottom
        width: term.contentWidth
        height: 1
        ShapePath {
            strokeColor: Theme.muted
            strokeWidth: 1
            strokeStyle: ShapePath.DashLine
            dashPattern: [1, 2]
            startX: 0; startY: 0.5
            PathLine { x: term.contentWidth; y: 0.5 }
        }
    }
    HoverHandler { id: hover }
    ToolTip.visible: hover.hovered && explanation !== ""
    ToolTip.text: explanation
    ToolTip.delay: 300
}
