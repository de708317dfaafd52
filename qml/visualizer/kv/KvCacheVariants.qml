pragma ComponentBehavior: Bound
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base
import Inferscope.Visualizer

// The same model's cache with another attention layout (MHA / GQA / MQA) or element type
// (FP32 / FP16 / Q8_0 / Q4_0): bytes per token, now and at the full context, against the real cache.
ColumnLayout {
    id: variants
    required property KvCacheView view
    spacing: 6
    readonly property int figureWidth: 68

    readonly property var explanations: ({
        "MHA": qsTr("Multi-head attention: every query head has its own key and value head, the largest cache."),
        "GQA": qsTr("Grouped-query attention: each group of query heads shares one key/value head, so the cache shrinks by the group size."),
        "MQA": qsTr("Multi-query attention: all query heads share a single key/value head, the smallest cache."),
        "FP32": qsTr("Each key and value element stored in 4 bytes, full single precision."),
        "FP16": qsTr("Each element in 2 bytes instead of 4: half the cache, with about 3 significant digits kept."),
        "Q8_0": qsTr("Blocks of 32 values: a 2-byte scale and 32 one-byte integers, 34 bytes where FP32 takes 128 (about a quarter). Set it in Settings; \"What it costs\" below measures the shift in the model's predictions."),
        "Q4_0": qsTr("Blocks of 32 values: a 2-byte scale and 32 four-bit integers, 18 bytes where FP32 takes 128 (about a seventh), and a coarser rounding than Q8_0.")
    })

    Repeater {
        // The models of these Repeaters hold no live figure: a new array at every update would
        // rebuild all their items (four times a second while an answer streams).
        model: [
            {name: "attention", tip: qsTr("How many key/value heads the query heads share decides how many vectors each token stores per layer.")},
            {name: "element", tip: qsTr("Storing keys and values in 2 bytes (FP16) or in blocks of 32 small integers with one scale (Q8_0: 34 bytes, Q4_0: 18 bytes per 32 values) instead of 4 bytes each. The block types need a head dim that is a multiple of 32. The cache's type is a setting (Settings → KV cache).")}
        ]
        delegate: ColumnLayout {
            id: table
            required property var modelData
            readonly property bool attention: modelData.name === "attention"
            readonly property string title: attention ? qsTr("Attention layout, at %1").arg(variants.view.shape.elementType)
                                                      : qsTr("Element type, at %1 KV heads").arg(variants.view.shape.kvHeads)
            Layout.fillWidth: true
            spacing: 2

            RowLayout {
                Layout.fillWidth: true
                KvCacheTerm { text: table.title; font.bold: true; explanation: table.modelData.tip; Layout.fillWidth: true }
            }
            RowLayout {  // column heads
                Layout.fillWidth: true
                Layout.leftMargin: 6
                Layout.rightMargin: 3
                Item { Layout.fillWidth: true }
                Repeater {
                    model: ["perToken", "now", "capacity"]
                    delegate: Label {
                        required property string modelData
                        text: modelData === "perToken" ? qsTr("per token")
                            : modelData === "now" ? qsTr("%1 now").arg(Units.count(variants.view.fill.usedCells))
                            : qsTr("at %1").arg(Units.count(variants.view.shape.capacity))
                        color: Theme.muted
                        font.pixelSize: Theme.fontSmall - 1
                        Layout.preferredWidth: variants.figureWidth
                        horizontalAlignment: Text.AlignRight
                    }
                }
            }
            Repeater {
                model: table.attention ? variants.view.attentionVariants : variants.view.elementVariants
                delegate: Rectangle {
                    id: row
                    required property string name
                    required property string detail
                    required property double bytesPerToken
                    required property double bytesAtUsed
                    required property double bytesAtCapacity
                    required property string ratioText
                    required property bool loaded
                    objectName: table.modelData.name + "_" + name
                    Layout.fillWidth: true
                    implicitHeight: rowColumn.implicitHeight + 6
                    radius: 4
                    color: loaded ? Theme.accentSoft : "transparent"
                    ColumnLayout {
                        id: rowColumn
                        anchors.fill: parent
                        anchors.margins: 3
                        anchors.leftMargin: 6
                        spacing: 0
                        RowLayout {
                            Layout.fillWidth: true
                            KvCacheTerm { text: row.name; font.bold: true; Layout.preferredWidth: 40; explanation: variants.explanations[row.name] ?? "" }
                            Label {
                                text: row.loaded ? qsTr("as loaded") : row.ratioText
                                color: row.loaded ? Theme.accent : Theme.muted
                                font.pixelSize: Theme.fontSmall
                                Layout.fillWidth: true
                            }
                            Repeater {
                                model: ["perToken", "atUsed", "atCapacity"]
                                delegate: Label {
                                    required property string modelData
                                    objectName: modelData
                                    text: modelData === "perToken" ? Units.exact(row.bytesPerToken)
                                        : modelData === "atUsed" ? Units.binary(row.bytesAtUsed) : Units.binary(row.bytesAtCapacity)
                                    font.family: "monospace"
                                    font.pixelSize: Theme.fontSmall
                                    font.bold: row.loaded
                                    Layout.preferredWidth: variants.figureWidth
                                    horizontalAlignment: Text.AlignRight
                                }
                            }
                        }
                        Label {
                            text: row.detail
                            color: Theme.muted
                            font.pixelSize: Theme.fontSmall
                            elide: Text.ElideRight
                            Layout.fillWidth: true
                        }
                    }
                }
            }
            Label {
                objectName: table.attention ? "" : "blockTypesNote"
                visible: !table.attention && variants.view.shape.headDim % 32 !== 0
                Layout.fillWidth: true
                Layout.preferredWidth: 100
                wrapMode: Text.Wrap
                color: Theme.muted
                font.pixelSize: Theme.fontSmall
                text: qsTr("Q8_0 and Q4_0 store each head's row in blocks of 32 values: not for this model's head dim of %1.").arg(variants.view.shape.headDim)
            }
        }
    }
}
