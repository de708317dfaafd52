import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base
import Inferscope.Engine
import Inferscope.Chat
import Inferscope

// The latest problem, in the engine's own words: a model that failed to load (the previous one
// stays in use), a generation error, or what happened to the conversation database.
Rectangle {
    id: banner
    readonly property string message: EngineController.errorMessage !== "" ? EngineController.errorMessage
                                      : ChatController.lastError !== "" ? ChatController.lastError
                                      : ChatController.storeMessage
    // The database notices (a version continuing elsewhere, a recovered file) inform; errors alarm.
    readonly property bool isError: EngineController.errorMessage !== "" || ChatController.lastError !== ""
    visible: message !== ""
    implicitHeight: visible ? row.implicitHeight + 2 * Theme.spacing : 0
    color: isError ? Theme.dangerSoft : Theme.accentSoft

    RowLayout {
        id: row
        anchors.fill: parent
        anchors.margins: Theme.spacing
        Label {
            objectName: "errorText"
            text: banner.message
            color: banner.isError ? Theme.danger : Theme.text
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
