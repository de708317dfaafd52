pragma ComponentBehavior: Bound
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope

// What the cache costs: bytes used and reserved in total, per layer and per KV head (the engine's
// KvCacheStats), and the formula with the loaded model's own numbers.
ColumnLayout {
    id: bytes
    required property KvCacheView view
    spacing: 6

    KvCacheTerm {
        text: qsTr("Memory")
        font.bold: true
        explanation: qsTr("Every token adds the same bytes to every layer, so the cache grows linearly with the context length (and with each concurrent user).")
    }

    GridLayout {
        Layout.fillWidth: true
        columns: 3
        columnSpacing: Theme.spacing * 2
        rowSpacing: 4
        Label { text: "" }
        Label { text: qsTr("used: %1 tokens").arg(KvUnits.count(bytes.view.usedCells)); color: Theme.muted; font.pixelSize: Theme.fontSmall; Layout.alignment: Qt.AlignRight }
        Label { text: qsTr("reserved: %1").arg(KvUnits.count(bytes.view.capacity)); color: Theme.muted; font.pixelSize: Theme.fontSmall; Layout.alignment: Qt.AlignRight }
        Repeater {
            model: [
                {key: "total", label: qsTr("Total"), used: bytes.view.bytesUsed, reserved: bytes.view.bytesReserved,
                 tip: qsTr("Keys and values of all layers and KV heads.")},
                {key: "layer", label: qsTr("Per layer"), used: bytes.view.bytesUsedPerLayer, reserved: bytes.view.bytesReservedPerLayer,
                 tip: qsTr("One layer's keys and values: every layer caches every position.")},
                {key: "head", label: qsTr("Per KV head"), used: bytes.view.bytesUsedPerHead, reserved: bytes.view.bytesReservedPerHead,
                 tip: qsTr("One KV head of one layer: a block of positions × head dim keys, and one of values.")}
            ]
            delegate: Repeater {
                id: cells
                required property var modelData
                model: 3
                delegate: Column {
                    id: cell
                    required property int index
                    readonly property var row: cells.modelData
                    readonly property double value: index === 1 ? row.used : row.reserved
                    Layout.alignment: index === 0 ? Qt.AlignLeft | Qt.AlignTop : Qt.AlignRight
                    KvCacheTerm {
                        visible: cell.index === 0
                        text: cell.row.label
                        explanation: cell.row.tip
                        font.pixelSize: Theme.fontSmall + 1
                    }
                    Label {
                        visible: cell.index > 0
                        objectName: visible ? cell.row.key + (cell.index === 1 ? "Used" : "Reserved") : ""
                        anchors.right: parent.right
                        text: KvUnits.exact(cell.value)
                        font.family: "monospace"
                        font.pixelSize: Theme.fontSmall + 1
                    }
                    Label {
                        visible: cell.index > 0
                        anchors.right: parent.right
                        text: KvUnits.binary(cell.value)
                        font.pixelSize: Theme.fontSmall
                        color: Theme.muted
                    }
                }
            }
        }
    }
    Label {
        objectName: "usageLabel"
        font.pixelSize: Theme.fontSmall
        color: Theme.muted
        text: qsTr("%1 of %2 in use (%3%)").arg(KvUnits.binary(bytes.view.bytesUsed)).arg(KvUnits.binary(bytes.view.bytesReserved))
              .arg(bytes.view.bytesReserved > 0 ? (100 * bytes.view.bytesUsed / bytes.view.bytesReserved).toFixed(1) : "0")
    }

    // 2 × layers × KV heads × head dim × bytes per element = bytes per token
    KvCacheTerm {
        Layout.topMargin: 4
        text: qsTr("Bytes per token")
        font.bold: true
        explanation: qsTr("For each new token every layer stores one key and one value vector per KV head.")
    }
    Flow {
        objectName: "formula"
        Layout.fillWidth: true
        Layout.preferredWidth: 100  // fills the row; its own width must not drive the layout
        spacing: 3
        Repeater {
            model: [
                {value: "2", caption: qsTr("K and V")},
                {value: "×", caption: ""},
                {value: String(bytes.view.layers), caption: qsTr("layers")},
                {value: "×", caption: ""},
                {value: String(bytes.view.kvHeads), caption: qsTr("KV heads")},
                {value: "×", caption: ""},
                {value: String(bytes.view.headDim), caption: qsTr("head dim")},
                {value: "×", caption: ""},
                {value: bytes.view.bytesPerElement + " B", caption: bytes.view.elementType},
                {value: "=", caption: ""},
                {value: KvUnits.exact(bytes.view.bytesPerToken), caption: qsTr("per token")}
            ]
            delegate: Column {
                id: factor
                required property var modelData
                readonly property bool isOperator: modelData.caption === ""
                leftPadding: isOperator ? 2 : 0
                rightPadding: leftPadding
                Label {
                    anchors.horizontalCenter: parent.horizontalCenter
                    text: factor.modelData.value
                    font.family: "monospace"
                    font.pixelSize: Theme.fontNormal
                    font.bold: !factor.isOperator
                    color: factor.isOperator ? Theme.muted : Theme.text
                }
                Label {
                    anchors.horizontalCenter: parent.horizontalCenter
                    text: factor.modelData.caption
                    font.pixelSize: Theme.fontSmall - 1
                    color: Theme.muted
                }
            }
        }
    }
    Repeater {
        model: [
            {name: "formulaUsed", text: qsTr("× %1 used").arg(KvUnits.count(bytes.view.usedCells)), bytes: bytes.view.bytesUsed},
            {name: "formulaReserved", text: qsTr("× %1 reserved").arg(KvUnits.count(bytes.view.capacity)), bytes: bytes.view.bytesReserved}
        ]
        delegate: Label {
            required property var modelData
            objectName: modelData.name
            text: modelData.text + " = " + KvUnits.exact(modelData.bytes) + " (" + KvUnits.binary(modelData.bytes) + ")"
            font.family: "monospace"
            font.pixelSize: Theme.fontSmall + 1
            Layout.fillWidth: true
            elide: Text.ElideRight
        }
    }
}
