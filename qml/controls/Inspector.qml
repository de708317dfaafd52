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
            TabButton { text: qsTr("Probabilities") }
            TabButton { text: qsTr("Timeline") }
            TabButton { text: qsTr("KV cache") }
            TabButton { text: qsTr("Settings") }
            TabButton { text: qsTr("Model") }
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
