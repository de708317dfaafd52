pragma ComponentBehavior: Bound
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base
import Inferscope.Chat
import Inferscope.Visualizer

// "What Q8_0 costs": the latest answer run again through a cache of the type in use and one of
// another type (KvCostModel: the engine's measureKvCost on the worker); how far each token's
// distribution moved (KL), tinted on the answer, and how often both caches rank the same token first.
ColumnLayout {
    id: cost
    required property KvCostModel model
    spacing: 6

    function kl(v) { return v < 0.0001 && v > 0 ? v.toExponential(2) : v.toFixed(4) }

    KvCacheTerm {
        objectName: "kvCostTitle"
        text: qsTr("What %1 costs").arg(Units.dtypeLabel(cost.model.testType))
        font.bold: true
        explanation: qsTr("A smaller cache stores each key and value less exactly, so every later token attends to slightly different numbers. This runs the latest answer's tokens again through a cache of each type — the same tokens, teacher-forced — and measures how far the model's distribution for each token moved: the KL divergence, in nats (0: identical; 0.001: a shift you would rarely see in a pick; 0.1: close candidates swap).")
    }
    RowLayout {
        Layout.fillWidth: true
        Label { text: qsTr("Compare"); color: Theme.muted; font.pixelSize: Theme.fontSmall }
        ComboBox {
            objectName: "kvCostTestBox"
            Layout.preferredWidth: 90
            model: cost.model.testChoices.map((t) => Units.dtypeLabel(t))
            currentIndex: cost.model.testChoices.indexOf(cost.model.testType)
            onActivated: (i) => cost.model.testType = cost.model.testChoices[i]
            enabled: !cost.model.running
            ToolTip.visible: hovered
            ToolTip.delay: 500
            ToolTip.text: qsTr("The cache type to measure; the types this model's head dim allows.")
        }
        KvCacheTerm {
            text: qsTr("against %1").arg(Units.dtypeLabel(cost.model.referenceType))
            font.pixelSize: Theme.fontSmall
            explanation: qsTr("The reference: the cache type in use, or FP16 when a block type is in use (what that block type costs).")
        }
        Item { Layout.fillWidth: true }
        Button {
            objectName: "kvCostRun"
            text: cost.model.running ? qsTr("Cancel") : qsTr("Measure")
            enabled: cost.model.running || cost.model.canRun
            onClicked: cost.model.running ? cost.model.cancel() : cost.model.run()
            ToolTip.visible: hovered
            ToolTip.delay: 500
            ToolTip.text: qsTr("Runs the latest answer twice more, one token at a time, on the engine's thread: about twice as long as generating it.")
        }
    }
    Label {
        objectName: "kvCostStatus"
        visible: text !== ""
        Layout.fillWidth: true
        Layout.preferredWidth: 100
        wrapMode: Text.Wrap
        font.pixelSize: Theme.fontSmall
        color: Theme.muted
        text: cost.model.status
    }
    GridLayout {
        objectName: "kvCostResult"
        visible: cost.model.hasResult
        Layout.fillWidth: true
        columns: 2
        rowSpacing: 2
        Repeater {
            model: [
                {key: "mean", label: qsTr("Mean KL"), tip: qsTr("The KL divergence KL(P_reference ‖ P_tested) averaged over the answer's tokens, in nats.")},
                {key: "p99", label: qsTr("p99 KL"), tip: qsTr("99% of the tokens moved less than this: the rare large shifts.")},
                {key: "max", label: qsTr("Max KL"), tip: qsTr("The token whose distribution moved most (the reddest in the answer's tint).")},
                {key: "top1", label: qsTr("Same top token"), tip: qsTr("How often both caches rank the same token first: where they differ, greedy decoding would take another path.")}
            ]
            delegate: RowLayout {
                id: figure
                required property var modelData
                Layout.columnSpan: 2
                Layout.fillWidth: true
                KvCacheTerm { text: figure.modelData.label; explanation: figure.modelData.tip; font.pixelSize: Theme.fontSmall + 1 }
                Item { Layout.fillWidth: true }
                Label {
                    objectName: "kvCost_" + figure.modelData.key
                    font.family: "monospace"
                    font.pixelSize: Theme.fontSmall + 1
                    text: figure.modelData.key === "mean" ? cost.kl(cost.model.meanKl)
                        : figure.modelData.key === "p99" ? cost.kl(cost.model.p99Kl)
                        : figure.modelData.key === "max" ? cost.kl(cost.model.maxKl)
                        : qsTr("%1 of %2 (%3%)").arg(cost.model.sameTop1).arg(cost.model.tokens)
                              .arg((100 * cost.model.top1Agreement).toFixed(1))
                }
            }
        }
    }
    RowLayout {
        visible: cost.model.hasResult
        Layout.fillWidth: true
        Label {
            objectName: "kvCostCaption"
            Layout.fillWidth: true
            Layout.preferredWidth: 100
            wrapMode: Text.Wrap
            font.pixelSize: Theme.fontSmall
            color: Theme.muted
            text: qsTr("%1 against %2, over the latest answer's %3 tokens.").arg(cost.model.resultTest).arg(cost.model.resultReference).arg(cost.model.tokens)
        }
        CheckBox {
            objectName: "kvCostTint"
            text: qsTr("Tint")
            checked: ChatController.messages.heatMode === "kvcost"
            onToggled: ChatController.messages.heatMode = checked ? "kvcost" : AppSettings.heatMode
            ToolTip.visible: hovered
            ToolTip.delay: 500
            ToolTip.text: qsTr("Tints each token of the answer by its KL: clear where both caches agree, red at 0.05 nats and above.")
        }
    }
}
