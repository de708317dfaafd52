import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base
import Inferscope.Engine
import Inferscope.Chat
import Inferscope.Visualizer

// The inspector's KV-cache tab: the loaded model's cache live (the grid, its bytes and formula,
// what other layouts and element types would cost) and a calculator for any model.
ScrollView {
    id: panel
    contentWidth: availableWidth
    clip: true
    // A scroll bar that comes and goes would change the width, the wrapping and the height in a loop.
    ScrollBar.vertical.policy: ScrollBar.AlwaysOn
    ScrollBar.horizontal.policy: ScrollBar.AlwaysOff
    // Fixed, so that content re-wrapping at a new width does not feed back into the inspector's layout.
    implicitWidth: 320
    implicitHeight: 480

    // Hidden (another tab, or the inspector closed), the panel does no work per batch.
    property KvCacheView view: KvCacheView { engine: EngineController; active: panel.visible }
    property KvCalculatorModel calculator: KvCalculatorModel { engine: EngineController }
    // A server's slots, asked for only while the panel is on screen and a server is connected.
    property ServerSlots serverSlots: ServerSlots { engine: EngineController; active: panel.visible && EngineController.abilities.overNetwork }

    ColumnLayout {
        width: panel.availableWidth - 3 * Theme.spacing
        x: Theme.spacing * 1.5
        spacing: Theme.spacing * 2

        // The title, then the cache's shape beside it when both fit, else on the next line: the
        // shape is never cut (elided, it lost its layer count in the inspector's default width).
        Flow {
            id: header
            Layout.topMargin: Theme.spacing
            Layout.fillWidth: true
            Layout.preferredWidth: 100  // fills the column; its children's widths must not drive it
            spacing: Theme.spacing
            KvCacheTerm {
                text: qsTr("KV cache")
                font.bold: true
                font.pixelSize: Theme.fontLarge
                explanation: qsTr("The keys and values of every past token, kept per layer and KV head, so that each new token computes only its own K and V instead of recomputing the whole sequence.")
            }
            Label {
                objectName: "shapeLabel"
                width: Math.min(implicitWidth, header.width)
                height: implicitHeight
                wrapMode: Text.Wrap
                color: Theme.muted
                visible: panel.view.shape.hasCache
                text: (panel.view.shape.layers === 1 ? qsTr("1 layer") : qsTr("%1 layers").arg(panel.view.shape.layers)) + " · "
                      + (panel.view.shape.kvHeads === 1 ? qsTr("1 KV head") : qsTr("%1 KV heads").arg(panel.view.shape.kvHeads))
                      + qsTr(" · head dim %1 · %2").arg(panel.view.shape.headDim).arg(panel.view.shape.elementType)
            }
        }
        Label {
            objectName: "noModelLabel"
            visible: !panel.view.shape.hasCache
            Layout.fillWidth: true
            Layout.preferredWidth: 100  // fills the row; its unwrapped width must not drive the layout
            wrapMode: Text.Wrap
            color: Theme.muted
            text: panel.serverSlots.phase === ServerSlots.Live
                  ? qsTr("%1 runs on a server, which does not show its KV cache position by position; what it reports of its slots is below. The calculator works out the cache of any published shape.").arg(EngineController.loaded.name)
                  : EngineController.hasModel && !EngineController.abilities.showsCache
                  ? qsTr("%1 runs on a server, which does not expose its KV cache: no cache figures are shown for it. The calculator below works out the cache of any published shape.").arg(EngineController.loaded.name)
                  : qsTr("Load a model to see its KV cache fill as it reads the prompt and generates. The calculator below works without one.")
        }
        ServerSlotsCard {
            serverSlots: panel.serverSlots
            visible: EngineController.abilities.overNetwork
            Layout.fillWidth: true
        }

        KvCacheMap { view: panel.view; visible: panel.view.shape.hasCache; Layout.fillWidth: true }
        KvCacheBytes { view: panel.view; visible: panel.view.shape.hasCache; Layout.fillWidth: true }
        KvCacheVariants { view: panel.view; visible: panel.view.shape.hasCache; Layout.fillWidth: true }
        KvCacheCost {
            model: KvCostModel { chat: ChatController }
            visible: panel.view.shape.hasCache
            Layout.fillWidth: true
        }
        KvCacheCalculator { calculator: panel.calculator; Layout.fillWidth: true; Layout.bottomMargin: Theme.spacing * 2 }
    }
}
