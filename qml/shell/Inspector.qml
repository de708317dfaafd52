import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base
import Inferscope.Engine
import Inferscope.Visualizer
import Inferscope

// The right-hand panel: token probabilities, the prefill/decode timeline, the KV cache, settings, the model.
Rectangle {
    id: inspector
    color: Theme.surface
    Rectangle { anchors.left: parent.left; width: 1; height: parent.height; color: Theme.border }

    readonly property var tabs: ["probabilities", "layers", "attention", "timeline", "kv", "settings", "model"]
    // The panels that show the selected step: while none is on screen the step inspector stops
    // following the stream (the chat's own tooltips and outline ask it directly).
    Binding {
        target: StepInspector
        property: "shown"
        value: inspector.visible && ["probabilities", "layers", "attention", "timeline"].includes(inspector.tabs[tabBar.currentIndex])
    }

    // Each tab as wide as its title, and the room left over shared equally (equal widths cut
    // "Probabilities" short at the inspector's usual width while "Model" had room to spare).
    // Narrow (the usual width, and the smallest window): less padding and smaller titles, so that
    // all seven titles fit and none is cut off.
    readonly property bool narrow: width < 520
    // One Tab stop for the bar, the tab shown (Tab goes on into its panel); Left and Right show
    // the tab beside it.
    component InspectorTab: TabButton {
        id: tab
        property string tip
        focusPolicy: TabBar.index === tabBar.currentIndex ? Qt.StrongFocus : Qt.NoFocus
        Keys.onLeftPressed: tabBar.step(-1)
        Keys.onRightPressed: tabBar.step(1)
        FocusRing { shown: tab.visualFocus }
        leftPadding: inspector.narrow ? 2 : 8
        rightPadding: inspector.narrow ? 2 : 8
        font.pixelSize: inspector.narrow ? Theme.fontSmall : Theme.fontNormal
        font.letterSpacing: inspector.width < 360 ? -0.3 : 0
        width: implicitWidth + tabBar.spare
        ToolTip.visible: hovered
        ToolTip.delay: 500
        ToolTip.text: tip
    }

    // What a model on a server cannot show: said plainly in place of the panel.
    component RemoteNote: Label {
        anchors.fill: parent
        anchors.margins: 2 * Theme.spacing
        verticalAlignment: Text.AlignTop
        wrapMode: Text.Wrap
        color: Theme.muted
        visible: EngineController.hasModel && !EngineController.abilities.looksInside
    }

    ColumnLayout {
        anchors.fill: parent
        anchors.leftMargin: 1
        spacing: 0

        TabBar {
            id: tabBar
            Layout.fillWidth: true
            // The tabs' widths follow the bar's width (spare): were the bar's implicit width (their
            // sum) to feed back into the layout, it would never settle ("Polish loop detected").
            Layout.preferredWidth: 0
            currentIndex: Math.max(0, inspector.tabs.indexOf(AppSettings.inspectorTab))
            onCurrentIndexChanged: AppSettings.inspectorTab = inspector.tabs[currentIndex]
            function step(by) {
                // The focus first: the tab it leaves stops being a Tab stop once it is not shown.
                const next = (currentIndex + by + count) % count
                itemAt(next).forceActiveFocus(Qt.TabFocusReason)
                currentIndex = next
            }
            readonly property real spare: {
                let titles = 0
                for (let i = 0; i < count; ++i) titles += itemAt(i) ? itemAt(i).implicitWidth : 0
                // From the inspector's width (set by the split view), not the bar's: the bar's is set
                // by this column's layout, which the tabs' widths would then change again.
                return Math.max(0, (inspector.width - 1 - titles) / Math.max(1, count))
            }
            InspectorTab { text: qsTr("Probabilities"); tip: qsTr("Each generated token's candidates and their probabilities, after every sampler stage.") }
            InspectorTab { text: qsTr("Layers"); tip: qsTr("Logit lens: what the model would predict after each of its layers, for the selected token.") }
            InspectorTab { text: qsTr("Attention"); tip: qsTr("Which earlier tokens each attention head looked at when the selected token was chosen.") }
            InspectorTab { text: qsTr("Timeline"); tip: qsTr("Prefill and every decode step of an answer, timed against what this machine can do.") }
            InspectorTab { text: qsTr("KV cache"); tip: qsTr("The keys and values kept for every past token in every layer: what they are and what they cost.") }
            InspectorTab { text: qsTr("Settings"); tip: qsTr("Sampling: how the next token is chosen from the model's probabilities.") }
            InspectorTab { text: qsTr("Model"); tip: qsTr("The loaded model's shape, read from its GGUF header, and its memory.") }
        }
        StackLayout {
            Layout.fillWidth: true
            Layout.fillHeight: true
            // The panels' implicit sizes follow their width (text wraps, scroll views): the column
            // must not size itself by them in turn.
            Layout.preferredWidth: 0
            Layout.preferredHeight: 0
            currentIndex: tabBar.currentIndex
            ProbabilitiesPanel {}
            Item {
                LayersPanel { anchors.fill: parent; visible: !EngineController.hasModel || EngineController.abilities.looksInside }
                RemoteNote {
                    objectName: "layersRemoteNote"
                    text: qsTr("%1 runs on a server, which answers with tokens and their log-probabilities only: what each layer would have predicted (the logit lens) needs the model's residual stream, which no OpenAI-compatible server exposes. Open a GGUF file to see it.").arg(EngineController.loaded.name)
                }
            }
            Item {
                AttentionPanel { anchors.fill: parent; visible: !EngineController.hasModel || EngineController.abilities.looksInside }
                RemoteNote {
                    objectName: "attentionRemoteNote"
                    text: qsTr("%1 runs on a server: its attention weights stay inside the server, which answers with tokens and their log-probabilities only. Open a GGUF file to see them.").arg(EngineController.loaded.name)
                }
            }
            TimelinePanel {}
            KvCachePanel {}
            SettingsPanel {}
            ModelPanel {}
        }
    }
}
