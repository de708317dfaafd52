import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base
import Inferscope.Engine
import Inferscope.Chat
import Inferscope

// Settings → KV cache: the element type of the cache (AppSettings.kvType, saved). A change
// re-creates the loaded model's cache at once; a type the model cannot use is refused with the
// reason and the setting goes back to the type in use.
ColumnLayout {
    id: setting
    spacing: 6
    // [{name: "f16", label: "FP16"}, …] from C++ (core's list of types): the box offers exactly the
    // names AppSettings.kvType takes, labelled as the rest of the window labels them.
    readonly property var choices: AppSettings.kvTypeChoices
    property string note: ""      // what the last change did
    property bool refused: false  // ... and whether it was refused

    Connections {
        target: EngineController
        function onKvTypeApplied(type) {
            setting.refused = false
            setting.note = qsTr("The cache is now %1: %2 per token. The conversation's keys and values are computed again, in %1, when the next message is sent.")
                .arg(Units.dtypeLabel(type)).arg(Units.binary(EngineController.loaded.details.kvBytesPerToken))
        }
        function onKvTypeRefused(message) {
            setting.refused = true
            setting.note = qsTr("Not changed: %1").arg(message)
        }
        function onModelChanged() { setting.note = "" }
    }

    Rectangle { Layout.fillWidth: true; height: 1; color: Theme.border }
    Label { text: qsTr("KV cache"); font.bold: true; font.pixelSize: Theme.fontLarge }
    RowLayout {
        Layout.fillWidth: true
        Label {
            text: qsTr("Type")
            ToolTip.visible: typeHover.hovered
            ToolTip.delay: 500
            ToolTip.text: typeBox.hint
            HoverHandler { id: typeHover }
        }
        ComboBox {
            id: typeBox
            objectName: "kvTypeBox"
            readonly property string hint: qsTr("How the cache stores each key and value: FP32 4 bytes, FP16 2 bytes, Q8_0 34 bytes per block of 32 (8-bit integers and a scale), Q4_0 18 bytes per block of 32 (4-bit). Smaller caches hold longer contexts and are read faster, at some cost in precision.")
            Layout.fillWidth: true
            enabled: !ChatController.generating
            model: setting.choices
            textRole: "label"
            currentIndex: setting.choices.findIndex((c) => c.name === AppSettings.kvType)
            onActivated: (i) => AppSettings.kvType = setting.choices[i].name
            ToolTip.visible: hovered
            ToolTip.delay: 500
            ToolTip.text: hint
            Accessible.name: qsTr("KV cache type")
        }
    }
    // A plain Column, not layout items: labels of a layout whose text (and wrapped height) changed
    // after it was laid out kept their first height in Qt 6.4 and were drawn over the next one.
    Column {
        Layout.fillWidth: true
        spacing: 6
        Label {
            objectName: "kvTypeInUse"
            width: parent.width
            wrapMode: Text.Wrap
            font.pixelSize: Theme.fontSmall
            color: Theme.muted
            visible: text !== ""
            // A model loaded while the setting names a type it cannot use: it runs with FP32.
            text: EngineController.hasModel && EngineController.loaded.kvType !== "" && EngineController.loaded.kvType !== AppSettings.kvType
                  ? qsTr("In use: %1 — %2").arg(Units.dtypeLabel(EngineController.loaded.kvType)).arg(EngineController.kvTypeProblem(AppSettings.kvType))
                  : ""
        }
        Label {
            objectName: "kvTypeNote"
            width: parent.width
            wrapMode: Text.Wrap
            font.pixelSize: Theme.fontSmall
            color: setting.refused ? Theme.danger : Theme.muted
            visible: text !== ""
            text: setting.note
        }
        Label {
            width: parent.width
            wrapMode: Text.Wrap
            font.pixelSize: Theme.fontSmall
            color: Theme.muted
            text: qsTr("Each new token stores a key and a value vector per layer and KV head, and every later token reads them all back. The KV panel shows what the chosen type allocates, and what it changes in the model's predictions (\"What Q8_0 costs\").")
        }
    }
}
