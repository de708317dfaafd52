import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base
import Inferscope.Engine
import Inferscope.Visualizer

// Attention: for the selected token, the softmax weights every query head of a chosen layer put
// on each cached position (heads × positions), and an overview of every layer (the mean over its
// heads). Heads that share a KV head (GQA) are banded together; positions outside a sliding
// window are hatched. Hover a cell for the token and its weight; click one to look inside that token.
ScrollView {
    id: panel
    contentWidth: availableWidth
    clip: true
    ScrollBar.vertical.policy: ScrollBar.AlwaysOn
    ScrollBar.horizontal.policy: ScrollBar.AlwaysOff

    property PositionInspector inspector: PositionInspector {
        engine: EngineController
        steps: StepInspector
        active: panel.visible
        lens: false
        attention: true
    }
    readonly property int layerCount: inspector.layerCount
    readonly property int chosenLayer: Math.min(layerBox.currentIndex, Math.max(0, layerCount - 1))
    readonly property int groupSize: inspector.kvHeadCount > 0 ? inspector.headCount / inspector.kvHeadCount : 1

    component HeatMap: AttentionHeatMap {
        id: map
        inspector: panel.inspector
        Layout.fillWidth: true
        Layout.preferredWidth: 100
        Layout.preferredHeight: implicitHeight
        lowColor: Theme.surfaceAlt
        highColor: Theme.accent
        textColor: Theme.text
        lineColor: Theme.border
        markColor: Theme.decode
        // The hovered cell is described in the line under the maps (attentionHover), not in a
        // tooltip: a popup opening over the pointer took the hover from the map, which cleared it.
    }

    ColumnLayout {
        id: content
        objectName: "attentionContent"
        width: Math.max(240, panel.availableWidth - 2 * Theme.spacing - 10)
        x: Theme.spacing
        spacing: Theme.spacing

        InspectedToken { inspector: panel.inspector; Layout.fillWidth: true; Layout.preferredWidth: 100; Layout.topMargin: Theme.spacing }

        Label {
            objectName: "attentionTeaching"
            Layout.fillWidth: true
            Layout.preferredWidth: 100
            wrapMode: Text.Wrap
            color: Theme.muted
            font.pixelSize: Theme.fontSmall
            text: qsTr("In every layer, attention lets a token gather what the tokens before it hold. Each head turns the token into a query and compares it with the key that every earlier token left in the KV cache; a softmax turns those scores into weights that add up to 1, and the head reads the cached values in those proportions. A row below is one head: where its colour is strong, that head was looking at that position when the model chose this token. Many models let several query heads share one cached key and value (grouped-query attention), and some layers only look at a recent window of tokens.")
        }

        Label {
            visible: panel.inspector.hasResult
            text: qsTr("All layers: the mean over each layer's heads")
            font.bold: true
            ToolTip.visible: allMouse.containsMouse
            ToolTip.text: qsTr("One row per layer: the average of its heads' weights on each position. Where it is strong, the whole layer leaned on that token.")
            MouseArea { id: allMouse; anchors.fill: parent; hoverEnabled: true }
        }
        HeatMap { id: overview; objectName: "attentionOverview"; visible: panel.inspector.hasResult; layerIndex: -1 }

        RowLayout {
            visible: panel.inspector.hasResult
            Layout.fillWidth: true
            Label {
                text: qsTr("Heads of layer")
                font.bold: true
                ToolTip.visible: layerMouse.containsMouse
                ToolTip.text: qsTr("One row per query head of this layer, one column per cached position (0 = the first token of the context, the last = the token run by this pass).")
                MouseArea { id: layerMouse; anchors.fill: parent; hoverEnabled: true }
            }
            ComboBox {
                id: layerBox
                objectName: "attentionLayerBox"
                model: panel.layerCount
                displayText: currentIndex
                Layout.preferredWidth: 80
                ToolTip.visible: hovered
                ToolTip.text: qsTr("The layer whose heads are shown.")
            }
            Item { Layout.fillWidth: true }
        }
        Label {
            visible: panel.inspector.hasResult
            Layout.fillWidth: true
            Layout.preferredWidth: 100
            wrapMode: Text.Wrap
            font.pixelSize: Theme.fontSmall
            color: Theme.muted
            text: {
                const parts = []
                if (panel.groupSize > 1)
                    parts.push(qsTr("Grouped-query attention: %1 query heads share each of the %2 KV heads (the bands at the left; a line separates the groups).").arg(panel.groupSize).arg(panel.inspector.kvHeadCount))
                else
                    parts.push(qsTr("Every query head has its own cached keys and values (%1 heads).").arg(panel.inspector.headCount))
                const w = panel.inspector.windowOf(panel.chosenLayer)
                if (w > 0) parts.push(qsTr("This layer has a sliding window of %1 tokens: the hatched positions are not read (weight 0).").arg(w))
                return parts.join(" ")
            }
        }
        HeatMap { id: heads; objectName: "attentionHeads"; visible: panel.inspector.hasResult; layerIndex: panel.chosenLayer }
        Label {
            objectName: "attentionHover"
            visible: panel.inspector.hasResult
            Layout.fillWidth: true
            Layout.preferredWidth: 100
            wrapMode: Text.Wrap
            textFormat: Text.PlainText
            font.pixelSize: Theme.fontSmall
            text: heads.hoverText !== "" ? heads.hoverText : overview.hoverText !== "" ? overview.hoverText
                  : qsTr("Hover a cell for the token at that position and its weight; click a generated token to look inside it. Colour: √weight, so small weights stay visible.")
            color: heads.hoverText !== "" || overview.hoverText !== "" ? Theme.text : Theme.muted
        }
        Item { Layout.preferredHeight: Theme.spacing }
    }
}
