import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base

// A labelled slider with its value, for one sampler parameter; the hint explains it.
RowLayout {
    id: root
    property string label
    property string hint
    property real from: 0
    property real to: 1
    property real step: 0.01
    property int decimals: 2
    property real value: 0
    signal moved(real value)
    Layout.columnSpan: 2
    Layout.fillWidth: true
    Layout.preferredWidth: 100

    Label {
        text: root.label
        Layout.preferredWidth: 120
        ToolTip.visible: hintMouse.containsMouse && root.hint !== ""
        ToolTip.text: root.hint
        ToolTip.delay: 300
        MouseArea { id: hintMouse; anchors.fill: parent; hoverEnabled: true }
    }
    Slider {
        id: slider
        Layout.fillWidth: true
        Layout.preferredWidth: 40
        from: root.from
        to: root.to
        stepSize: root.step
        value: root.value
        onMoved: root.moved(value)
    }
    Label {
        text: Number(root.value).toFixed(root.decimals)
        Layout.preferredWidth: 40
        horizontalAlignment: Text.AlignRight
        font.family: "monospace"
    }
}
