import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base
import Inferscope.Engine
import Inferscope.Chat

// One message. Questions can be edited and sent again (the cache is truncated at the edit and
// only the new part is prefilled); the last answer can be regenerated; answers show their figures.
Item {
    id: root
    required property int index
    required property int role            // Message.User, Message.Assistant
    required property string text
    required property string shownText   // at most ChatModel::kShownChars of text
    required property int hiddenChars    // the characters of text left out of shownText
    required property bool streaming
    required property int finishReason    // Message.EndOfGeneration, Message.MaxTokens, ...
    required property var stats
    required property int generatedCount
    required property string drafts          // speculative decoding: the drafts' totals in words ("" without)
    required property int heatRevision       // 0: no heat map (a question, the mode "off")
    required property string thinking        // a reasoning model's <think> block, shown folded
    required property string thinkingState   // "", "thinking", "done", "cut"
    required property var structured         // asked to be structured: its check (StructuredVerdictBar)
    required property int variantIndex
    required property int variantCount
    property bool isLast: false
    // The inspector's selected step in this answer (-1: none), what it says of the token under the
    // mouse, and a click on a token: ChatView passes them on from the window, which wires them to
    // Inferscope.Visualizer's StepInspector (a module above this one).
    property int selectedStep: -1
    property var describeToken: (row, position) => ""
    signal tokenPicked(int step)
    property bool editing: false
    readonly property bool isUser: role === Message.User
    implicitHeight: column.implicitHeight

    ColumnLayout {
        id: column
        x: Theme.spacing * 2
        width: parent.width - Theme.spacing * 4
        spacing: 4

        Label {
            objectName: "authorLabel"
            // A stored answer names the model that wrote it, not the one loaded now.
            text: root.isUser ? qsTr("You") : ((root.stats && root.stats.model) || EngineController.loaded.name || qsTr("Model"))
            color: Theme.muted
            font.pixelSize: Theme.fontSmall
            font.bold: true
        }

        // A reasoning model's thoughts (Qwen 3's <think> block): folded under a line that says
        // so, opened on a click; the bubble below holds the answer proper.
        ColumnLayout {
            id: thinkingBlock
            objectName: "thinkingBlock"
            property bool expanded: false
            visible: !root.isUser && (root.thinkingState === "thinking" || root.thinking !== "")
            Layout.fillWidth: true
            spacing: 2
            ToolButton {
                objectName: "thinkingToggle"
                text: (thinkingBlock.expanded ? "▾ " : "▸ ") +
                      (root.thinkingState === "thinking" ? qsTr("Thinking…") :
                       root.thinkingState === "cut" ? qsTr("Thoughts (stopped while thinking)") : qsTr("Thoughts"))
                font.pixelSize: Theme.fontSmall
                onClicked: thinkingBlock.expanded = !thinkingBlock.expanded
                Accessible.name: thinkingBlock.expanded ? qsTr("Hide the model's thoughts") : qsTr("Show the model's thoughts")
                ToolTip.visible: hovered
                ToolTip.text: qsTr("What the model wrote between <think> and </think> before answering")
            }
            TextEdit {
                objectName: "thinkingText"
                visible: thinkingBlock.expanded
                Layout.fillWidth: true
                Layout.leftMargin: Theme.spacing
                text: root.thinking
                textFormat: TextEdit.PlainText
                wrapMode: TextEdit.Wrap
                readOnly: true
                selectByMouse: true
                // Copy and select-all stay; other keys are the window's (Esc, Ctrl+N/R/B/I/O).
                Keys.onShortcutOverride: (event) => event.accepted = event.matches(StandardKey.Copy) || event.matches(StandardKey.SelectAll)
                color: Theme.muted
                selectionColor: Theme.accent
                font.pixelSize: Theme.fontSmall
            }
        }

        Rectangle {
            Layout.fillWidth: true
            // The editor (with its buttons) is taller than the text it replaces: the bubble grows with it.
            implicitHeight: (root.editing ? editColumn.implicitHeight : heat ? heatBody.implicitHeight : body.implicitHeight) + 2 * Theme.spacing
            radius: Theme.radius
            color: root.isUser ? Theme.userBubble : Theme.surface
            border.color: Theme.border
            border.width: root.isUser ? 0 : 1

            // Answers with a heat map: one tinted span per token (hover for the candidates, click
            // to inspect the step), always rich text. Otherwise Markdown for finished chat answers,
            // plain text elsewhere. Two editors, not one whose format changes: Qt 6.4's TextEdit,
            // switched from Markdown to rich text, lays the rich text out again as plain text (a
            // finished chat answer showed untinted until the conversation was reopened).
            readonly property bool heat: !root.isUser && root.heatRevision > 0

            TextEdit {
                id: body
                objectName: "messageText"
                visible: !root.editing && !parent.heat
                anchors.fill: parent
                anchors.margins: Theme.spacing
                text: parent.heat ? "" : root.shownText + (root.streaming ? " ▍" : "")
                textFormat: (ChatController.mode === ChatController.Chat && !root.isUser && !root.streaming) ? TextEdit.MarkdownText : TextEdit.PlainText
                wrapMode: TextEdit.Wrap
                readOnly: true
                selectByMouse: true
                // Copy and select-all stay; other keys are the window's (Esc, Ctrl+N/R/B/I/O).
                Keys.onShortcutOverride: (event) => event.accepted = event.matches(StandardKey.Copy) || event.matches(StandardKey.SelectAll)
                color: Theme.text
                selectionColor: Theme.accent
                font.pixelSize: Theme.fontNormal
            }

            TextEdit {
                id: heatBody
                objectName: "messageText"
                visible: !root.editing && parent.heat
                anchors.fill: parent
                anchors.margins: Theme.spacing
                // Written by heatDocument, span by span (no text binding: it would replace them).
                textFormat: TextEdit.RichText
                wrapMode: TextEdit.Wrap
                readOnly: true
                selectByMouse: true
                // Copy and select-all stay; other keys are the window's (Esc, Ctrl+N/R/B/I/O).
                Keys.onShortcutOverride: (event) => event.accepted = event.matches(StandardKey.Copy) || event.matches(StandardKey.SelectAll)
                color: Theme.text
                selectionColor: Theme.accent
                font.pixelSize: Theme.fontNormal

                HeatDocument {
                    id: heatDocument
                    document: heatBody.textDocument
                    model: ChatController.messages
                    row: root.index
                    revision: root.heatRevision  // 0 for a question
                    streaming: root.streaming
                }

                property int hoveredStep: -1
                property int hoveredPosition: -1
                property point hoverPoint
                // The character under the point, -1 over empty space. positionAt gives the nearest
                // caret position, which past the middle of a character is the next one's start
                // (the neighbour's tooltip): take the character whose box holds the point.
                function positionUnder(point) {
                    let pos = positionAt(point.x, point.y)
                    let box = positionToRectangle(pos)
                    if (pos > 0 && (box.x > point.x || box.y > point.y)) {
                        --pos
                        box = positionToRectangle(pos)
                    }
                    // Right of the last character is the end of the text: no character there (and
                    // asking for the box after it printed "QTextCursor::setPosition: … out of range").
                    if (pos >= length) return -1
                    const next = positionToRectangle(pos + 1)
                    const right = next.y === box.y ? next.x : width
                    if (point.x < box.x || point.x >= right || point.y < box.y || point.y >= box.y + box.height) return -1
                    return pos
                }
                // The step whose character is under the point, -1 over empty space.
                function stepAt(point) {
                    const pos = positionUnder(point)
                    if (pos < 0) return -1
                    const step = heatDocument.stepAt(pos)
                    return step < root.generatedCount ? step : -1
                }
                function tokenBox(step) {
                    // A token that brought only some bytes of a character has no characters of its
                    // own: outline the character it is part of (shown with the token completing it).
                    const a = heatDocument.stepStart(step)
                    const b = Math.min(heatDocument.stepEnd(step), length)
                    // The text lags the token starts while it is rebuilt (streaming, another
                    // conversation opened): a position past its end has no rectangle, and the
                    // outline was drawn as a 4 px box at the bubble's top-left corner.
                    if (a < 0 || a >= length || b <= a) return Qt.rect(0, 0, 0, 0)
                    const first = positionToRectangle(a)
                    const last = positionToRectangle(Math.max(a, b))
                    const right = last.y === first.y ? last.x : width
                    return Qt.rect(first.x, first.y, Math.max(2, right - first.x), first.height)
                }
                HoverHandler {
                    onPointChanged: {
                        heatBody.hoverPoint = point.position
                        heatBody.hoveredStep = heatBody.stepAt(point.position)
                        heatBody.hoveredPosition = heatBody.hoveredStep >= 0 ? heatBody.positionUnder(point.position) : -1
                    }
                    onHoveredChanged: if (!hovered) heatBody.hoveredStep = -1
                }
                TapHandler {
                    onTapped: (eventPoint) => {
                        const step = heatBody.stepAt(eventPoint.position)
                        if (step >= 0) {
                            root.tokenPicked(step)
                            AppSettings.inspectorVisible = true
                            AppSettings.inspectorTab = "probabilities"
                            // A click picks a token, it selects no text: the focus the press gave
                            // the text goes back, so the window's shortcuts and keys act at once.
                            if (heatBody.selectedText === "") heatBody.focus = false
                        }
                    }
                }
                ToolTip {
                    id: tokenTip
                    objectName: "tokenTip"
                    // Beside the pointer, for the token under it.
                    x: heatBody.hoverPoint.x + 12
                    y: heatBody.hoverPoint.y + 18
                    visible: heatBody.hoveredStep >= 0 && text !== ""
                    delay: 250
                    // For a character made of several tokens' bytes (an emoji, CJK), the split first.
                    text: heatBody.hoveredStep >= 0 ? root.describeToken(root.index, heatBody.hoveredPosition) : ""
                }
                // The step the Probabilities panel shows, outlined in the text.
                Rectangle {
                    objectName: "selectedTokenMark"
                    readonly property bool selected: root.selectedStep >= 0
                    // Laid out again when the text or the width changes.
                    readonly property rect box: selected && heatBody.contentHeight > 0 && heatBody.width > 0 ? heatBody.tokenBox(root.selectedStep) : Qt.rect(0, 0, 0, 0)
                    visible: selected && box.width > 0
                    x: box.x - 1
                    y: box.y
                    width: box.width + 2
                    height: box.height
                    color: "transparent"
                    border.color: Theme.accent
                    border.width: 2
                    radius: 3
                }
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

        StructuredVerdictBar { verdict: root.structured; Layout.fillWidth: true }

        RowLayout {
            spacing: Theme.spacing
            visible: !root.streaming
            Label {
                objectName: "answerFigures"; visible: !root.isUser && root.stats.complete
                // An answer from a server (its device is "server <url>"): the client's clock only.
                readonly property bool remote: (root.stats.device ?? "").startsWith("server ")
                readonly property string tokens: root.stats.keptTokens ? qsTr("%1 (%2 kept)").arg(Theme.tokens(root.stats.generatedTokens)).arg(root.stats.keptTokens)
                                                                       : Theme.tokens(root.stats.generatedTokens)
                readonly property string ending: root.finishReason === Message.EndOfGeneration ? qsTr("ended by the model")
                             : root.finishReason === Message.MaxTokens ? qsTr("max tokens reached")
                             : root.finishReason === Message.Cancelled ? qsTr("stopped")
                             : root.finishReason === Message.StopString ? qsTr("stop string")
                             : root.finishReason === Message.ContextFull ? qsTr("context full")
                             : root.finishReason === Message.Failed ? qsTr("interrupted") : ""
                text: !root.stats.complete ? "" : remote
                      ? qsTr("%1 · %2 prompt tokens · %3 tok/s · first token %4 · %5 (timed here, network included)")
                        .arg(tokens).arg(root.stats.prefilledTokens).arg(Theme.rate(root.stats.decodeTokensPerSecond))
                        .arg(Theme.ms(root.stats.timeToFirstTokenMs)).arg(ending)
                      : qsTr("%1 · prefill %2 tok/s (%3 reused, %4 new) · decode %5 tok/s · first token %6 · %7")
                        .arg(tokens)
                        .arg(Theme.rate(root.stats.prefillTokensPerSecond))
                        .arg(root.stats.reusedTokens).arg(root.stats.prefilledTokens)
                        .arg(Theme.rate(root.stats.decodeTokensPerSecond))
                        .arg(Theme.ms(root.stats.timeToFirstTokenMs))
                        .arg(ending) + (root.drafts !== "" ? " · " + root.drafts : "")
                color: Theme.muted
                font.pixelSize: Theme.fontSmall
                wrapMode: Text.Wrap
                Layout.fillWidth: true
            }
            Label {
                // A cut-off answer (a server that hung up, stalled or sent too much): kept as it
                // arrived; why is said in the error bar when it happens.
                objectName: "interruptedNote"
                visible: !root.isUser && !root.stats.complete && root.finishReason === Message.Failed
                text: qsTr("Interrupted: the answer stopped before it was complete; what arrived is kept.")
                color: Theme.warning
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
                objectName: "continueButton"
                visible: !root.isUser && root.isLast && root.finishReason === Message.Failed
                text: qsTr("Continue")
                font.pixelSize: Theme.fontSmall
                enabled: ChatController.canContinue
                ToolTip.visible: hovered
                ToolTip.text: ChatController.canContinue ? qsTr("Go on from where the answer stopped, as a new version of it.")
                                                         : qsTr("Only the model that wrote this answer can continue it.")
                onClicked: ChatController.continueAnswer()
            }
            ToolButton {
                objectName: "regenerateButton"
                visible: !root.isUser && root.isLast
                text: root.finishReason === Message.Failed ? qsTr("Retry") : qsTr("Regenerate")
                font.pixelSize: Theme.fontSmall
                enabled: ChatController.canRegenerate
                onClicked: ChatController.regenerate()
            }
        }
    }
}
