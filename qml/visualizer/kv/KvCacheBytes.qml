pragma ComponentBehavior: Bound
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base
import Inferscope.Visualizer

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
        Label { text: qsTr("used: %1 tokens").arg(Units.count(bytes.view.fill.usedCells)); color: Theme.muted; font.pixelSize: Theme.fontSmall; Layout.alignment: Qt.AlignRight }
        Label { text: qsTr("reserved: %1").arg(Units.count(bytes.view.shape.capacity)); color: Theme.muted; font.pixelSize: Theme.fontSmall; Layout.alignment: Qt.AlignRight }
        Repeater {
            model: [
                {key: "total", label: qsTr("Total"),
                 tip: qsTr("Keys and values of all layers and KV heads.")},
                {key: "layer", label: qsTr("Per layer"),
                 tip: qsTr("One layer's keys and values: every layer caches every position.")},
                {key: "head", label: qsTr("Per KV head"),
                 tip: qsTr("One KV head of one layer: a block of positions × head dim keys, and one of values.")}
            ]
            delegate: Repeater {
                id: cells
                required property var modelData
                // Live figures read here: a model holding them would be rebuilt at every update.
                readonly property double used: modelData.key === "total" ? bytes.view.bytes.used
                                             : modelData.key === "layer" ? bytes.view.bytes.usedPerLayer : bytes.view.bytes.usedPerHead
                readonly property double reserved: modelData.key === "total" ? bytes.view.bytes.reserved
                                                 : modelData.key === "layer" ? bytes.view.bytes.reservedPerLayer : bytes.view.bytes.reservedPerHead
                model: 3
                delegate: Column {
                    id: cell
                    required property int index
                    readonly property var row: cells.modelData
                    readonly property double value: index === 1 ? cells.used : cells.reserved
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
                        text: Units.exact(cell.value)
                        font.family: "monospace"
                        font.pixelSize: Theme.fontSmall + 1
                    }
                    Label {
                        visible: cell.index > 0
                        anchors.right: parent.right
                        text: Units.binary(cell.value)
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
        text: qsTr("%1 of %2 in use (%3%)").arg(Units.binary(bytes.view.bytes.used)).arg(Units.binary(bytes.view.bytes.reserved))
              .arg(bytes.view.bytes.reserved > 0 ? (100 * bytes.view.bytes.used / bytes.view.bytes.reserved).toFixed(1) : "0")
    }
    // Gemma 2/3 and Phi-3: bytes per layer type, and what the sliding-window layers really read.
    Label {
        objectName: "layerTypeLabel"
        visible: text !== ""
        Layout.fillWidth: true
        Layout.preferredWidth: 100  // wraps in the room it has
        wrapMode: Text.Wrap
        font.pixelSize: Theme.fontSmall
        color: Theme.muted
        text: bytes.view.sliding.layerTypeSummary
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
            // Factors by name, their values read in the delegate: a model holding the figures would
            // be a new array, and all these items rebuilt, at every update.
            model: ["kv", "×", "layers", "×", "kvHeads", "×", "headDim", "×", "element", "=", "perToken"]
            delegate: Column {
                id: factor
                required property string modelData
                readonly property bool isOperator: modelData === "×" || modelData === "="
                readonly property string value: {
                    switch (modelData) {
                    case "kv": return "2"
                    case "layers": return String(bytes.view.shape.layers)
                    case "kvHeads": return String(bytes.view.shape.kvHeads)
                    case "headDim": return String(bytes.view.shape.headDim)
                    case "element": return bytes.view.shape.elementSize
                    case "perToken": return Units.exact(bytes.view.bytes.perToken)
                    default: return modelData
                    }
                }
                readonly property string caption: {
                    switch (modelData) {
                    case "kv": return qsTr("K and V")
                    case "layers": return qsTr("layers")
                    case "kvHeads": return qsTr("KV heads")
                    case "headDim": return qsTr("head dim")
                    case "element": return bytes.view.shape.elementType
                    case "perToken": return qsTr("per token")
                    default: return ""
                    }
                }
                leftPadding: isOperator ? 2 : 0
                rightPadding: leftPadding
                Label {
                    anchors.horizontalCenter: parent.horizontalCenter
                    text: factor.value
                    font.family: "monospace"
                    font.pixelSize: Theme.fontNormal
                    font.bold: !factor.isOperator
                    color: factor.isOperator ? Theme.muted : Theme.text
                }
                Label {
                    anchors.horizontalCenter: parent.horizontalCenter
                    text: factor.caption
                    font.pixelSize: Theme.fontSmall - 1
                    color: Theme.muted
                }
            }
        }
    }
    Repeater {
        model: ["formulaUsed", "formulaReserved"]
        delegate: Label {
            required property string modelData
            readonly property bool used: modelData === "formulaUsed"
            readonly property double total: used ? bytes.view.bytes.used : bytes.view.bytes.reserved
            objectName: modelData
            text: (used ? qsTr("× %1 used").arg(Units.count(bytes.view.fill.usedCells)) : qsTr("× %1 reserved").arg(Units.count(bytes.view.shape.capacity)))
                  + " = " + Units.exact(total) + " (" + Units.binary(total) + ")"
            font.family: "monospace"
            font.pixelSize: Theme.fontSmall + 1
            Layout.fillWidth: true
            elide: Text.ElideRight
        }
    }
}
