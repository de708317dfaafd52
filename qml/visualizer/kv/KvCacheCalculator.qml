pragma ComponentBehavior: Bound
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base
import Inferscope.Visualizer

// The KV-cache calculator: a preset or any shape, a context length and concurrent users; exact
// bytes from the engine's computeKvFigures, in binary and decimal units, against MHA and MQA.
ColumnLayout {
    id: calc
    required property KvCalculatorModel calculator
    spacing: 6

    KvCacheTerm {
        text: qsTr("Calculator")
        font.bold: true
        font.pixelSize: Theme.fontLarge
        explanation: qsTr("bytes = 2 (K and V) × layers × KV heads × head dim × bytes per element × tokens × users: linear in every factor.")
    }
    ComboBox {
        objectName: "presetBox"
        Layout.fillWidth: true
        model: calc.calculator.presets
        textRole: "name"
        currentIndex: calc.calculator.presetIndex
        displayText: calc.calculator.presetIndex < 0 ? qsTr("Custom shape") : currentText
        onActivated: (i) => calc.calculator.applyPreset(i)
    }

    RowLayout {
        KvCacheInput {
            calculator: calc.calculator; key: "layers"; label: qsTr("Layers")
            explanation: qsTr("Transformer blocks: each one caches its own keys and values.")
        }
        KvCacheInput {
            calculator: calc.calculator; key: "heads"; label: qsTr("Heads")
            explanation: qsTr("Query heads; a model with as many KV heads is multi-head (MHA).")
        }
    }
    RowLayout {
        KvCacheInput {
            calculator: calc.calculator; key: "kvHeads"; label: qsTr("KV heads")
            explanation: qsTr("Key/value heads: fewer than the query heads is grouped-query attention (GQA), one is multi-query (MQA).")
        }
        KvCacheInput {
            calculator: calc.calculator; key: "headDim"; label: qsTr("Head dim"); to: 4096
            explanation: qsTr("Elements in one head's key vector (and in its value vector).")
        }
    }
    RowLayout {
        KvCacheInput {
            calculator: calc.calculator; key: "tokens"; label: qsTr("Tokens"); to: 100000000
            explanation: qsTr("Context length per user: the cache grows linearly with it.")
        }
        KvCacheInput {
            calculator: calc.calculator; key: "users"; label: qsTr("Users"); to: 100000
            explanation: qsTr("Concurrent conversations, each with a cache of its own.")
        }
    }
    RowLayout {
        spacing: 4
        KvCacheTerm {
            text: qsTr("Element")
            Layout.preferredWidth: 58
            font.pixelSize: Theme.fontSmall + 1
            explanation: qsTr("Bytes per stored element: FP16 and BF16 halve an FP32 cache, INT8 quarters it. Q8_0 and Q4_0 store blocks of 32 values: 34 and 18 bytes per block (a 2-byte scale, then 8- or 4-bit integers); the head dim must be a multiple of 32.")
        }
        ComboBox {
            objectName: "input_dtype"
            Layout.fillWidth: true
            model: calc.calculator.dtypeLabels
            currentIndex: calc.calculator.dtypeIndex
            onActivated: (i) => calc.calculator.dtypeIndex = i
        }
    }
    RowLayout {
        KvCacheInput {
            calculator: calc.calculator; key: "slidingLayers"; label: qsTr("Sliding"); to: 4096
            explanation: qsTr("Of the layers, how many attend only to the last positions of a window (Gemma 2 every other layer, Gemma 3 five in six, Phi-3 all). 0: every layer attends to the whole context.")
        }
        KvCacheInput {
            calculator: calc.calculator; key: "window"; label: qsTr("Window"); to: 100000000
            explanation: qsTr("The positions a sliding layer reads: the query's own and the window − 1 before it. A cache that keeps only those needs min(tokens, window) positions on those layers.")
        }
    }
    RowLayout {
        spacing: 2
        Label { text: qsTr("Tokens"); color: Theme.muted; font.pixelSize: Theme.fontSmall; Layout.preferredWidth: 60 }
        Repeater {
            model: [2048, 4096, 32768, 128000]
            delegate: ToolButton {
                id: pick
                required property int modelData
                text: Units.count(modelData)
                checkable: true
                checked: calc.calculator.tokens === pick.modelData
                font.pixelSize: Theme.fontSmall
                onClicked: calc.calculator.tokens = pick.modelData
            }
        }
    }

    Label {
        objectName: "calculatorError"
        visible: !calc.calculator.results.valid
        text: calc.calculator.results.error
        color: Theme.danger
        wrapMode: Text.Wrap
        Layout.fillWidth: true
        Layout.preferredWidth: 100  // fills the row; its unwrapped width must not drive the layout
    }
    Repeater {
        model: [
            {name: "perToken", label: qsTr("Per token"), bytes: calc.calculator.results.bytesPerToken},
            {name: "perUser", label: qsTr("× %1 tokens").arg(Units.count(calc.calculator.tokens)), bytes: calc.calculator.results.bytesPerUser},
            {name: "total", label: calc.calculator.users === 1 ? qsTr("× 1 user") : qsTr("× %1 users").arg(Units.count(calc.calculator.users)),
             bytes: calc.calculator.results.totalBytes}
        ]
        delegate: RowLayout {
            id: result
            required property var modelData
            visible: calc.calculator.results.valid
            Layout.fillWidth: true
            Label { text: result.modelData.label; color: Theme.muted; font.pixelSize: Theme.fontSmall + 1; Layout.alignment: Qt.AlignTop }
            Item { Layout.fillWidth: true }
            Column {
                Label {
                    objectName: "result_" + result.modelData.name
                    anchors.right: parent.right
                    text: Units.exact(result.modelData.bytes)
                    font.family: "monospace"
                    font.pixelSize: Theme.fontSmall + 1
                    font.bold: result.modelData.name === "total"
                }
                Label {
                    objectName: "human_" + result.modelData.name
                    anchors.right: parent.right
                    text: Units.binary(result.modelData.bytes) + "  ·  " + Units.decimal(result.modelData.bytes)
                    color: Theme.muted
                    font.pixelSize: Theme.fontSmall
                }
            }
        }
    }
    // Gemma 3, Phi-3: the sliding-window layers need only their window.
    Label {
        objectName: "calculatorWindowed"
        visible: calc.calculator.results.valid && calc.calculator.slidingLayers > 0
        Layout.fillWidth: true
        Layout.preferredWidth: 100
        wrapMode: Text.Wrap
        color: Theme.muted
        font.pixelSize: Theme.fontSmall
        text: qsTr("%1 of %2 layers attend to the last %3 positions only: keeping only that window, %4 tokens need %5.")
              .arg(calc.calculator.slidingLayers).arg(calc.calculator.layers).arg(Units.count(calc.calculator.window))
              .arg(Units.count(calc.calculator.tokens)).arg(Units.binary(calc.calculator.results.windowedBytesPerUser))
    }
    Label {
        objectName: "calculatorComparison"
        visible: calc.calculator.results.valid
        Layout.fillWidth: true
        Layout.preferredWidth: 100
        wrapMode: Text.Wrap
        font.pixelSize: Theme.fontSmall
        color: Theme.muted
        text: qsTr("%1. As MHA (%2 KV heads): %3 per token, %4 in all; as MQA (1 KV head): %5 per token, %6 in all.")
              .arg(calc.calculator.results.attention).arg(calc.calculator.heads)
              .arg(Units.binary(calc.calculator.results.mhaBytesPerToken)).arg(Units.binary(calc.calculator.results.mhaTotalBytes))
              .arg(Units.binary(calc.calculator.results.mqaBytesPerToken)).arg(Units.binary(calc.calculator.results.mqaTotalBytes))
    }
}
