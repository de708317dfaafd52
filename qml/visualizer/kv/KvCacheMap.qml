pragma ComponentBehavior: Bound
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base
import Inferscope.Visualizer

// The cache as layers × positions: an overview strip of the whole context with the zoomed window
// marked, the grid of that window with layer and position axes, a legend and a hover readout.
ColumnLayout {
    id: map
    required property KvCacheView view
    readonly property alias grid: grid
    readonly property int axisWidth: 22
    spacing: 4

    Flow {  // wraps: with a sliding-window entry the legend is wider than the panel
        Layout.fillWidth: true
        Layout.preferredWidth: 100  // fills the row; its own width must not drive the layout
        spacing: Theme.spacing
        Repeater {
            model: [
                {name: "prompt", color: Theme.prefill, text: qsTr("prompt"),
                 tip: qsTr("Prompt cells are written all at once by prefill, one batched forward pass over the prompt.")},
                {name: "generated", color: Theme.decode, text: qsTr("generated"),
                 tip: qsTr("Generated cells are written one per decode step: each new token adds one column to every layer.")},
                {name: "empty", color: Theme.surfaceAlt, text: qsTr("empty"),
                 tip: qsTr("The engine allocates the whole context up front, so these positions are reserved memory before any token is cached.")}
            ]
            delegate: RowLayout {
                id: entry
                required property var modelData
                // Read here, not in the model: a model holding live counts is rebuilt at every update.
                readonly property int count: modelData.name === "prompt" ? map.view.fill.promptCells
                                           : modelData.name === "generated" ? map.view.fill.generatedCells
                                           : map.view.shape.capacity - map.view.fill.usedCells
                spacing: 4
                Rectangle { width: 10; height: 10; radius: 2; color: entry.modelData.color; border.color: Theme.border }
                KvCacheTerm {
                    objectName: "legend_" + entry.modelData.name
                    text: Units.count(entry.count) + " " + entry.modelData.text
                    font.pixelSize: Theme.fontSmall
                    explanation: entry.modelData.tip
                }
            }
        }
        RowLayout {  // sliding-window layers (Gemma 2/3, Phi-3): what they no longer read
            visible: map.view.sliding.layers > 0
            spacing: 4
            Rectangle {
                width: 10; height: 10; radius: 2; color: Theme.prefill; border.color: Theme.border
                Rectangle { anchors.fill: parent; anchors.margins: 2; color: Theme.surface; opacity: 0.6; rotation: 45 }
            }
            KvCacheTerm {
                objectName: "legend_outsideWindow"
                text: qsTr("%1 outside the window").arg(Units.count(map.view.sliding.cellsOutsideWindow))
                font.pixelSize: Theme.fontSmall
                explanation: qsTr("Layers marked w (%1) attend only to the last %2 positions. The engine still allocates and keeps every position on them, like on the other layers; the hatched cells are the ones the next token no longer reads. A cache that dropped them would save memory (see Memory below).")
                    .arg(map.view.sliding.layerList).arg(Units.count(map.view.sliding.window))
            }
        }
    }

    // The whole context; the rectangle marks the grid's window. A click centres the grid there.
    Item {
        Layout.fillWidth: true
        Layout.leftMargin: map.axisWidth
        implicitHeight: 12
        KvCacheGrid {
            id: overview
            objectName: "overview"
            anchors.fill: parent
            source: map.view
            collapseLayers: true
            viewMode: KvCacheGrid.WholeContext
            promptColor: Theme.prefill; generatedColor: Theme.decode; emptyColor: Theme.surfaceAlt
            lineColor: Theme.surface; cursorColor: Theme.text
            TapHandler { onTapped: (point) => grid.centreOn(overview.positionAt(point.position.x)) }
        }
        Rectangle {
            visible: map.view.shape.capacity > 0 && grid.viewLength < map.view.shape.capacity
            x: grid.viewStart / Math.max(1, map.view.shape.capacity) * parent.width - 1
            width: Math.max(3, grid.viewLength / Math.max(1, map.view.shape.capacity) * parent.width) + 2
            y: -2
            height: parent.height + 4
            color: "transparent"
            border.color: Theme.text
            radius: 2
        }
    }

    RowLayout {
        Layout.fillWidth: true
        spacing: 0
        Item {  // layer numbers
            Layout.preferredWidth: map.axisWidth
            Layout.fillHeight: true
            Repeater {
                model: grid.layerTicks
                delegate: Label {
                    required property var modelData
                    text: modelData.label
                    y: modelData.y - height / 2
                    width: map.axisWidth - 4
                    horizontalAlignment: Text.AlignRight
                    font.pixelSize: Theme.fontSmall - 1
                    color: Theme.muted
                }
            }
        }
        KvCacheGrid {
            id: grid
            objectName: "grid"
            Layout.fillWidth: true
            Layout.preferredHeight: Math.max(80, Math.min(220, map.view.shape.layers * 22))
            source: map.view
            promptColor: Theme.prefill; generatedColor: Theme.decode; emptyColor: Theme.surfaceAlt
            lineColor: Theme.surface; cursorColor: Theme.text; outsideWindowColor: Theme.surface
            HoverHandler { id: gridHover }
            ToolTip.visible: gridHover.hovered
            ToolTip.delay: 1200
            ToolTip.text: qsTr("Ctrl+wheel zooms around the pointer, a drag or Shift+wheel pans; the overview above shows the window within the whole context.")
        }
    }
    Item {  // positions
        id: positionAxis
        Layout.fillWidth: true
        Layout.leftMargin: map.axisWidth
        implicitHeight: 14
        // The ticks move with the window as the cache fills: the labels are kept and given their
        // new text and place (a Repeater over the list itself made them all again at each update).
        readonly property var ticks: grid.positionTicks
        Repeater {
            model: positionAxis.ticks.length
            delegate: Label {
                required property int index
                readonly property var tick: positionAxis.ticks[index] ?? ({x: 0, label: ""})
                text: tick.label
                x: Math.min(parent.width - width, Math.max(0, tick.x - width / 2))
                font.pixelSize: Theme.fontSmall - 1
                color: Theme.muted
            }
        }
    }

    RowLayout {
        Layout.fillWidth: true
        Label {
            objectName: "readout"
            Layout.fillWidth: true
            Layout.preferredWidth: 100  // wraps beside the buttons: the hovered cell's readout was cut
            wrapMode: Text.Wrap
            font.pixelSize: Theme.fontSmall
            color: gridHover.hovered ? Theme.text : Theme.muted
            text: gridHover.hovered ? grid.describeAt(gridHover.point.position.x, gridHover.point.position.y)
                                    : (grid.positionsPerPixel >= 1 ? qsTr("%1 positions/px").arg(grid.positionsPerPixel.toFixed(1))
                                                                    : qsTr("%1 px/position").arg((1 / grid.positionsPerPixel).toFixed(1)))
                                      + qsTr(" · Ctrl+wheel: zoom")
        }
        Repeater {
            model: [
                {mode: KvCacheGrid.FollowFill, text: qsTr("Follow")},
                {mode: KvCacheGrid.WholeContext, text: qsTr("Context")}
            ]
            delegate: ToolButton {
                id: modeButton
                required property var modelData
                objectName: "mode_" + modelData.text
                text: modelData.text
                checkable: true
                checked: grid.viewMode === modeButton.modelData.mode
                font.pixelSize: Theme.fontSmall
                onClicked: grid.viewMode = modeButton.modelData.mode
            }
        }
    }
}
