import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base
import Inferscope.Engine
import Inferscope.Chat
import Inferscope

// Settings → Structured output (StructuredOutput): what the next answers must be. The schema or
// grammar is checked as it is typed and what is wrong is said under it; answers then sample only
// the tokens it allows next (the Probabilities panel's "grammar" stage shows what it removed).
ColumnLayout {
    id: setting
    spacing: 6

    Rectangle { Layout.fillWidth: true; height: 1; color: Theme.border }
    Label { text: qsTr("Structured output"); font.bold: true; font.pixelSize: Theme.fontLarge }
    ComboBox {
        id: kindBox
        objectName: "structuredKind"
        Layout.fillWidth: true
        model: [qsTr("Off: any text"), qsTr("A JSON object"), qsTr("JSON matching a schema"), qsTr("Text a GBNF grammar accepts")]
        currentIndex: StructuredOutput.kind
        onActivated: (i) => StructuredOutput.kind = i
        enabled: !ChatController.generating
        Accessible.name: qsTr("Structured output")
    }
    TextArea {
        id: textArea
        objectName: "structuredText"
        visible: StructuredOutput.kind === StructuredOutput.JsonSchema || StructuredOutput.kind === StructuredOutput.Gbnf
        Layout.fillWidth: true
        Layout.preferredHeight: 140
        wrapMode: TextEdit.Wrap
        font.family: "monospace"
        font.pixelSize: Theme.fontSmall
        text: StructuredOutput.text
        onTextChanged: if (text !== StructuredOutput.text) StructuredOutput.text = text
        enabled: !ChatController.generating
        placeholderText: StructuredOutput.kind === StructuredOutput.Gbnf ? "root ::= ..." : "{\"type\": \"object\", ...}"
        Accessible.name: StructuredOutput.kind === StructuredOutput.Gbnf ? qsTr("GBNF grammar") : qsTr("JSON schema")
    }
    Label {
        objectName: "structuredError"
        Layout.fillWidth: true
        Layout.preferredWidth: 100  // fills the row; its unwrapped width must not drive the layout
        visible: StructuredOutput.error !== ""
        text: StructuredOutput.error
        color: Theme.danger
        wrapMode: Text.Wrap
        font.pixelSize: Theme.fontSmall
    }
    Label {
        Layout.fillWidth: true
        Layout.preferredWidth: 100
        wrapMode: Text.Wrap
        color: Theme.muted
        font.pixelSize: Theme.fontSmall
        text: StructuredOutput.kind === StructuredOutput.Off
              ? qsTr("Answers may be any text. Choose JSON, a JSON schema or a GBNF grammar to have each token chosen only among those that keep the answer valid.")
              : EngineController.hasModel && !EngineController.abilities.tokenizes
              ? (StructuredOutput.kind === StructuredOutput.Gbnf
                 ? qsTr("Sent to the server as its \"grammar\" (llama.cpp's and Inferscope's servers follow it; others may refuse it). Each answer is checked against it when it ends.")
                 : qsTr("Sent to the server as its response_format (OpenAI's json_object or json_schema). Each answer is checked against it when it ends."))
              : qsTr("Each token is chosen only among those that keep the answer valid; the Probabilities panel's grammar column shows what the constraint removed at every step.")
    }
}
