import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope

// One message. Questions can be edited and sent again (the cache is truncated at the edit and
// only the new part is prefilled); the last answer can be regenerated; answers show their figures.
Item {
    id: root
    required property int index
    required property string role
    required property string text
    required property string shownText   // at most ChatModel::kShownChars of text
    required property int hiddenChars    // the characters of text left out of shownText
    required property bool streaming
    required property string finishReason
    required property var stats
    required property int generatedCount
    required property string heatText
    required property var tokenStarts
    required property int variantIndex
    required property int variantCount
    property bool isLast: false
    property bool editing: false

    readonly property bool isUser: role === "user"
    implicitHeight: column.implicitHeight

    ColumnLayout {
        id: column
        x: Theme.spacing * 2
        width: parent.width - Theme.spacing * 4
        spacing: 4

        Label {
            objectName: "authorLabel"
            // A stored answer names the model that wrote it, not the one loaded now.
            text: root.isUser ? qsTr("You") : ((root.stats && root.stats.model) || EngineController.modelName || qsTr("Model"))
            color: Theme.muted
            font.pixelSize: Theme.fontSmall
            font.bold: true
        }

        Rectangle {
            Layout.fillWidth: true
            // The editor (with its buttons) is taller than the text it replaces: the bubble grows with it.
            implicitHeight: (root.editing ? editColumn.implicitHeight : body.implicitHeight) + 2 * Theme.spacing
            radius: Theme.radius
            color: root.isUser ? Theme.userBubble : Theme.surface
            border.color: Theme.border
            border.width: root.isUser ? 0 : 1

            TextEdit {
                id: body
                objectName: "messageText"
                // Answers with a heat map: one tinted span per token (hover for the candidates, click to
                // inspect the step); otherwise Markdown for finished chat answers, plain text elsewhere.
                readonly property bool heat: !root.isUser && root.heatText !== ""
                visible: !root.editing
                anchors.fill: parent
                anchors.margins: Theme.spacing
                text: heat ? (root.streaming ? root.heatText.replace(/<\/div>$/, " ▍</div>") : root.heatText)
                           : root.shownText + (root.streaming ? " ▍" : "")
                textFormat: heat ? TextEdit.RichText
                            : (ChatController.mode === "chat" && !root.isUser && !root.streaming) ? TextEdit.MarkdownText : TextEdit.PlainText
                wrapMode: TextEdit.Wrap
                readOnly: true
                selectByMouse: true
                color: Theme.text
                selectionColor: Theme.accent
                font.pixelSize: Theme.fontNormal

                property int hoveredStep: -1
                function stepAt(point) {
                    if (!heat) return -1
                    const pos = positionAt(point.x, point.y)
                    let step = -1
                    for (let i = 0; i < root.tokenStarts.length && root.tokenStarts[i] <= pos; ++i) step = i
                    return step
                }
                HoverHandler {
                    enabled: body.heat
                    onPointChanged: body.hoveredStep = body.stepAt(point.position)
                    onHoveredChanged: if (!hovered) body.hoveredStep = -1
                }
                TapHandler {
                    enabled: body.heat
                    onTapped: (eventPoint) => {
                        const step = body.stepAt(eventPoint.position)
                        if (step >= 0) {
                            StepInspector.select(root.index, step)
                            AppSettings.inspectorVisible = true
                            AppSettings.inspectorTab = "probabilities"
                        }
                    }
                }
                ToolTip.visible: hoveredStep >= 0
                ToolTip.delay: 250
                ToolTip.text: hoveredStep >= 0 ? StepInspector.describe(root.index, hoveredStep) : ""
            }

            ColumnLayout {
                id: editColumn
                visible: root.editing
                anchors.fill: parent
                anchors.margins: Theme.spacing
                TextArea {
                    id: editor
                    objectName: "editor"
                    Layout.fillWidth: true
                    wrapMode: TextEdit.Wrap
                    font.pixelSize: Theme.fontNormal
                }
                RowLayout {
                    Label {
                        text: root.index + 1 < ChatController.messages.count
                              ? qsTr("The turns below stay in this conversation; the edit continues in a new one. Only the new text is prefilled.")
                              : qsTr("Only the new text is prefilled; the KV cache keeps everything before it.")
                        color: Theme.muted
                        font.pixelSize: Theme.fontSmall
                        wrapMode: Text.Wrap
                        Layout.fillWidth: true
                        Layout.preferredWidth: 100  // wraps in the room left; its unwrapped width must not drive the row
                    }
                    Button { text: qsTr("Cancel"); onClicked: root.editing = false }
                    Button {
                        objectName: "resendButton"
                        text: qsTr("Send again")
                        highlighted: true
                        enabled: ChatController.canSend
                        onClicked: {
                            root.editing = false
                            ChatController.editAndResend(root.index, editor.text)
                        }
                    }
                }
            }
        }

        Label {
            objectName: "hiddenNote"
            visible: root.hiddenChars > 0
            text: qsTr("Showing the first %L1 characters; %L2 more are not shown here but were sent and are kept whole (export the conversation to read them).")
                    .arg(root.shownText.length).arg(root.hiddenChars)
            color: Theme.muted
            font.pixelSize: Theme.fontSmall
            font.italic: true
            wrapMode: Text.Wrap
            Layout.fillWidth: true
        }

        RowLayout {
            spacing: Theme.spacing
            visible: !root.streaming
            Label {
                visible: !root.isUser && root.stats !== undefined && root.stats.generatedTokens !== undefined
                text: !root.stats || root.stats.generatedTokens === undefined ? "" :
                      qsTr("%1 · prefill %2 tok/s (%3 reused, %4 new) · decode %5 tok/s · first token %6 · %7")
                        .arg(Theme.tokens(root.stats.generatedTokens))
                        .arg(Theme.rate(root.stats.prefillTokensPerSecond))
                        .arg(root.stats.reusedTokens).arg(root.stats.prefilledTokens)
                        .arg(Theme.rate(root.stats.decodeTokensPerSecond))
                        .arg(Theme.ms(root.stats.timeToFirstTokenMs))
                        .arg(root.finishReason === "eos" ? qsTr("ended by the model")
                             : root.finishReason === "length" ? qsTr("max tokens reached")
                             : root.finishReason === "cancelled" ? qsTr("stopped")
                             : root.finishReason === "stop" ? qsTr("stop string")
                             : root.finishReason === "context_full" ? qsTr("context full") : root.finishReason)
                color: Theme.muted
                font.pixelSize: Theme.fontSmall
                wrapMode: Text.Wrap
                Layout.fillWidth: true
            }
            Item { Layout.fillWidth: root.isUser }
            RowLayout {
                visible: !root.isUser && root.variantCount > 1
                spacing: 0
                ToolButton {
                    text: "‹"
                    enabled: root.variantIndex > 0 && ChatController.canSend
                    onClicked: ChatController.showVariant(root.index, root.variantIndex - 1)
                }
                Label {
                    objectName: "variantLabel"
                    text: (root.variantIndex + 1) + " / " + root.variantCount
                    font.pixelSize: Theme.fontSmall
                    color: Theme.muted
                    ToolTip.visible: variantMouse.containsMouse
                    ToolTip.text: root.index + 1 < ChatController.messages.count
                                  ? qsTr("Versions of this answer: regenerated or branched from another token. Another version opens as a new conversation; the turns below stay here.")
                                  : qsTr("Versions of this answer: regenerated or branched from another token.")
                    MouseArea { id: variantMouse; anchors.fill: parent; hoverEnabled: true }
                }
                ToolButton {
                    text: "›"
                    enabled: root.variantIndex + 1 < root.variantCount && ChatController.canSend
                    onClicked: ChatController.showVariant(root.index, root.variantIndex + 1)
                }
            }
            ToolButton {
                objectName: "editButton"
                visible: root.isUser
                text: qsTr("Edit")
                font.pixelSize: Theme.fontSmall
                // The editor would lay out the whole text at once (what the bubble avoids).
                enabled: ChatController.canSend && root.hiddenChars === 0
                ToolTip.visible: hovered && root.hiddenChars > 0
                ToolTip.text: qsTr("Too long to edit here.")
                onClicked: {
                    editor.text = root.text
                    root.editing = true
                    editor.forceActiveFocus()
                }
            }
            ToolButton {
                objectName: "regenerateButton"
                visible: !root.isUser && root.isLast
                text: qsTr("Regenerate")
                font.pixelSize: Theme.fontSmall
                enabled: ChatController.canRegenerate
                onClicked: ChatController.regenerate()
            }
        }
    }
}
