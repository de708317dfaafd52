import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base
import Inferscope.Engine
import Inferscope.Visualizer

// The logit lens: for the selected token, what the model would have said had it stopped after
// each layer (the final norm and LM head applied to that layer's residual stream), with the norm
// of the stream and the layers where the final choice first comes out on top and where it stays.
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
        lens: true
        attention: false
    }
    readonly property real maxNorm: inspector.layers.maxResidualNorm

    ColumnLayout {
        id: content
        objectName: "layersContent"
        width: Math.max(240, panel.availableWidth - 2 * Theme.spacing - 10)
        x: Theme.spacing
        spacing: Theme.spacing

        InspectedToken { inspector: panel.inspector; Layout.fillWidth: true; Layout.preferredWidth: 100; Layout.topMargin: Theme.spacing }

        Label {
            objectName: "layersTeaching"
            Layout.fillWidth: true
            Layout.preferredWidth: 100
            wrapMode: Text.Wrap
            color: Theme.muted
            font.pixelSize: Theme.fontSmall
            text: qsTr("A model is a stack of layers. Each token carries a vector, the residual stream, up through them: every layer reads it, lets attention bring in what earlier tokens hold, and adds its own correction back. Only after the last layer is the stream turned into a next-token distribution. The lens applies that final step after every layer, so you can watch the guess take shape: early layers often propose generic tokens, and somewhere in the stack the final choice rises to the top and stays there.")
        }

        RowLayout {
            visible: panel.inspector.hasResult
            Layout.fillWidth: true
            spacing: Theme.spacing
            Label {
                objectName: "firstTop1Label"
                text: panel.inspector.firstTop1Layer >= 0 ? qsTr("↑ first on top: layer %1").arg(panel.inspector.firstTop1Layer) : ""
                color: Theme.accent
                font.bold: true
                ToolTip.visible: ftMouse.containsMouse
                ToolTip.text: qsTr("The first layer after which the model's final top token is already the most probable one.")
                MouseArea { id: ftMouse; anchors.fill: parent; hoverEnabled: true }
            }
            Label {
                objectName: "settledLabel"
                text: panel.inspector.settledLayer >= 0 ? qsTr("✓ settled: layer %1").arg(panel.inspector.settledLayer) : ""
                color: Theme.success
                font.bold: true
                ToolTip.visible: stMouse.containsMouse
                ToolTip.text: qsTr("From this layer on the final top token stays the most probable one: the layers above it only sharpen the choice.")
                MouseArea { id: stMouse; anchors.fill: parent; hoverEnabled: true }
            }
        }

        Repeater {
            id: lensRepeater
            model: panel.inspector.layers
            delegate: Rectangle {
                id: row
                objectName: "lensRow_" + index
                required property int index
                required property int layerIndex
                required property var candidates
                required property real residualNorm
                required property real entropyBits
                required property bool topIsFinal
                required property bool firstTop1
                required property bool settled
                Layout.fillWidth: true
                Layout.preferredWidth: 100
                implicitHeight: rowColumn.implicitHeight + 8
                radius: 4
                color: row.layerIndex >= panel.inspector.settledLayer && panel.inspector.settledLayer >= 0 ? Theme.accentSoft : Theme.surfaceAlt
                border.width: row.firstTop1 || row.settled ? 2 : 0
                border.color: row.settled ? Theme.success : Theme.accent

                ColumnLayout {
                    id: rowColumn
                    x: 6; y: 4
                    width: row.width - 12
                    spacing: 2
                    RowLayout {
                        Layout.fillWidth: true
                        spacing: 6
                        Label {
                            text: row.index === panel.inspector.layers.count - 1 ? qsTr("layer %1, output").arg(row.layerIndex) : qsTr("layer %1").arg(row.layerIndex)
                            font.bold: true
                            ToolTip.visible: layerMouse.containsMouse
                            ToolTip.text: row.index === panel.inspector.layers.count - 1
                                ? qsTr("The last layer: its row is the distribution the sampler was given, the Probabilities tab's.")
                                : qsTr("What the model would predict if it stopped after layer %1: the final norm and LM head applied to the residual stream there.").arg(row.layerIndex)
                            MouseArea { id: layerMouse; anchors.fill: parent; hoverEnabled: true }
                        }
                        Label {  // the layer's part in the story, also drawn as the row's border
                            visible: row.settled || row.firstTop1
                            text: row.settled ? "✓" : "↑"
                            color: row.settled ? Theme.success : Theme.accent
                            font.bold: true
                            ToolTip.visible: badgeMouse.containsMouse
                            ToolTip.text: row.settled && row.firstTop1 ? qsTr("The final top token comes out on top here first, and stays there.")
                                        : row.settled ? qsTr("Settled: from here on the final top token stays on top.")
                                        : qsTr("The final top token comes out on top here first (it drops again before it settles).")
                            MouseArea { id: badgeMouse; anchors.fill: parent; hoverEnabled: true }
                        }
                        Item { Layout.fillWidth: true }
                        Label {
                            text: "‖x‖ " + row.residualNorm.toFixed(row.residualNorm < 10 ? 2 : 1)
                            font.family: "monospace"
                            font.pixelSize: Theme.fontSmall
                            ToolTip.visible: normMouse.containsMouse
                            ToolTip.text: qsTr("The length (L2 norm) of the residual stream after this layer: how much every layer so far has written into it.")
                            MouseArea { id: normMouse; anchors.fill: parent; hoverEnabled: true }
                        }
                        Rectangle {
                            Layout.preferredWidth: 40
                            Layout.preferredHeight: 6
                            color: Theme.border
                            Rectangle { width: parent.width * row.residualNorm / Math.max(panel.maxNorm, 1e-9); height: parent.height; color: Theme.muted }
                        }
                        Label {
                            text: row.entropyBits.toFixed(2) + " bits"
                            font.family: "monospace"
                            font.pixelSize: Theme.fontSmall
                            color: Theme.muted
                            ToolTip.visible: entMouse.containsMouse
                            ToolTip.text: qsTr("The entropy of this layer's distribution: 0 = certain, higher = spread over more tokens.")
                            MouseArea { id: entMouse; anchors.fill: parent; hoverEnabled: true }
                        }
                    }
                    Flow {
                        Layout.fillWidth: true
                        spacing: 4
                        // Over the count, not the list: a list model made every chip again with each
                        // inspection (several a second while the panel follows an answer); the chips
                        // are kept and given their new token and probability.
                        Repeater {
                            model: row.candidates.length
                            delegate: Rectangle {
                                id: chip
                                objectName: "lensCandidate_" + row.index + "_" + index
                                required property int index
                                readonly property var modelData: row.candidates[index] ?? ({token: "", p: 0, logit: 0, final: false, chosen: false})
                                width: chipLabel.implicitWidth + 8
                                height: chipLabel.implicitHeight + 4
                                radius: 3
                                color: "transparent"
                                border.width: 1
                                border.color: chip.modelData.final ? Theme.accent : Theme.border
                                Rectangle {  // the probability as a fill from the left
                                    width: parent.width * chip.modelData.p
                                    height: parent.height
                                    radius: 3
                                    color: chip.modelData.final ? Theme.accent : Theme.prefill
                                    opacity: 0.25
                                }
                                Label {
                                    id: chipLabel
                                    anchors.centerIn: parent
                                    textFormat: Text.PlainText
                                    font.family: "monospace"
                                    font.pixelSize: Theme.fontSmall
                                    font.bold: chip.modelData.chosen
                                    text: chip.modelData.token + " " + (chip.modelData.p * 100).toFixed(chip.modelData.p < 0.01 ? 2 : 1) + "%"
                                }
                                MouseArea { id: chipMouse; anchors.fill: parent; hoverEnabled: true }
                                ToolTip.visible: chipMouse.containsMouse
                                ToolTip.text: !chipMouse.containsMouse ? "" : qsTr("“%1”: %2% at layer %3 (logit %4)%5").arg(Units.isolate(chip.modelData.token))
                                    .arg((chip.modelData.p * 100).toFixed(3)).arg(row.layerIndex).arg(chip.modelData.logit.toFixed(3))
                                    .arg(chip.modelData.final ? qsTr(" — the model's final top token") : "")
                            }
                        }
                    }
                }
            }
        }
        Item { Layout.preferredHeight: Theme.spacing }
    }
}
