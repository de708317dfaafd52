import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope

// The latest problem, in the engine's own words: a model that failed to load (the previous one
// stays in use), a generation error, or what happened to the conversation database.
Rectangle {
    id: banner
    readonly property string message: EngineController.errorMessage !== "" ? EngineController.errorMessage
                                      : ChatController.lastError !== "" ? ChatController.lastError
                                      : ChatController.storeMessage
    visible: message !== ""
    implicitHeight: visible ? row.implicitHeight + 2 * Theme.spacing : 0
    color: Theme.dangerSoft

    RowLayout {
        id: row
        anchors.fill: parent
        anchors.margins: Theme.spacing
        Label {
            objectName: "errorText"
            text: banner.message
            color: Theme.danger
            wrapMode: Text.Wrap
            Layout.fillWidth: true
        }
        ToolButton {
            text: "✕"
            onClicked: {
                EngineController.clearError()
                ChatController.clearMessages()
            }
        }
    }
}
