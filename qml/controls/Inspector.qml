import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope
import "../visualizer"

// The right-hand panel: token probabilities, the prefill/decode timeline, the KV cache, settings, the model.
Rectangle {
    id: inspector
    color: Theme.surface
    Rectangle { anchors.left: parent.left; width: 1; height: parent.height; color: Theme.border }

    readonly property var tabs: ["probabilities", "timeline", "kv", "settings", "model"]

    ColumnLayout {
        anchors.fill: parent
        anchors.leftMargin: 1
        spacing: 0

        TabBar {
            id: tabBar
            Layout.fillWidth: true
            currentIndex: Math.max(0, inspector.tabs.indexOf(AppSettings.inspectorTab))
            onCurrentIndexChanged: AppSettings.inspectorTab = inspector.tabs[currentIndex]
            TabButton { text: qsTr("Probabilities"); ToolTip.visible: hovered; ToolTip.delay: 500; ToolTip.text: qsTr("Each generated token's candidates and their probabilities, after every sampler stage.") }
            TabButton { text: qsTr("Timeline"); ToolTip.visible: hovered; ToolTip.delay: 500; ToolTip.text: qsTr("Prefill and every decode step of an answer, timed against what this machine can do.") }
            TabButton { text: qsTr("KV cache"); ToolTip.visible: hovered; ToolTip.delay: 500; ToolTip.text: qsTr("The keys and values kept for every past token in every layer: what they are and what they cost.") }
            TabButton { text: qsTr("Settings"); ToolTip.visible: hovered; ToolTip.delay: 500; ToolTip.text: qsTr("Sampling: how the next token is chosen from the model's probabilities.") }
            TabButton { text: qsTr("Model"); ToolTip.visible: hovered; ToolTip.delay: 500; ToolTip.text: qsTr("The loaded model's shape, read from its GGUF header, and its memory.") }
        }
        StackLayout {
            Layout.fillWidth: true
            Layout.fillHeight: true
            currentIndex: tabBar.currentIndex
            ProbabilitiesPanel {}
            TimelinePanel {}
            KvCachePanel {}
            SettingsPanel {}
            ModelPanel {}
        }
    }
}
