import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base
import Inferscope.Visualizer

// One whole-number input of the KV-cache calculator: its term (with an explanation) and a spin box
// bound to the calculator's property of the same name.
RowLayout {
    id: input
    required property KvCalculatorModel calculator
    required property string key      // the calculator's property: "layers", "heads", …
    property alias label: term.text
    property alias explanation: term.explanation
    property int to: 1024
    Layout.fillWidth: true
    Layout.preferredWidth: 100  // equal shares of a row
    spacing: 4

    KvCacheTerm { id: term; Layout.preferredWidth: 58; font.pixelSize: Theme.fontSmall + 1 }
    SpinBox {
        objectName: "input_" + input.key
        Layout.fillWidth: true
        Layout.preferredWidth: 60
        editable: true
        from: 0
        to: input.to
        locale: Qt.locale("en_US")
        value: input.calculator[input.key]
        onValueModified: input.calculator[input.key] = value
    }
}
