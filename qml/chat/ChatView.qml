import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base
import Inferscope.Engine
import Inferscope.Chat

// The conversation: messages streaming in, what the KV cache reused, and the composer.
Rectangle {
    id: view
    color: Theme.background

    // The inspector's selection (the answer's row and step; -1: none, or it follows the stream),
    // what it says of a token under the mouse, and a click on a token: the window wires them to
    // Inferscope.Visualizer's StepInspector, which sits above this module.
    property int selectedRow: -1
    property int selectedStep: -1
    property var describeToken: (row, position) => ""
    signal tokenPicked(int row, int step)

    ColumnLayout {
        anchors.fill: parent
        spacing: 0

        RowLayout {
            Layout.fillWidth: true
            Layout.leftMargin: Theme.spacing * 2
            Layout.rightMargin: Theme.spacing * 2
            Layout.topMargin: 4
            visible: list.count > 0
            // The labels' unwrapped widths must not size the column: it grew past the chat's
            // share of the smallest window and its right edge (the tint box, Edit, Send) went
            // under the inspector.
            Label {
                text: ChatController.title
                font.bold: true
                elide: Text.ElideRight
                Layout.fillWidth: true
                Layout.preferredWidth: 40
            }
            Label {
                text: qsTr("Tint tokens by")
                visible: view.width >= 520  // the box's tooltip says it too
                color: Theme.muted
                font.pixelSize: Theme.fontSmall
            }
            ComboBox {
                objectName: "heatMode"
                readonly property var modes: ["probability", "surprisal", "entropy", "replay", "fight", "draft", "off"]
                model: [qsTr("probability"), qsTr("surprisal"), qsTr("entropy"), qsTr("replay changes"), qsTr("grammar fight"), qsTr("drafts"), qsTr("nothing")]
                currentIndex: Math.max(0, modes.indexOf(ChatController.messages.heatMode))
                // A measurement's tint (the KV panel's cost, a comparison) is not one of the modes: named as it is.
                displayText: ChatController.messages.heatMode === "compare" ? qsTr("comparison")
                           : ChatController.messages.heatMode === "kvcost" ? qsTr("KV cost") : currentText
                onActivated: (i) => AppSettings.heatMode = modes[i]
                font.pixelSize: Theme.fontSmall
                implicitHeight: 28
                ToolTip.visible: hovered
                ToolTip.text: qsTr("Each generated token is tinted, the warmer the more notable: probability — the less likely the pick; surprisal — the more bits of surprise (−log₂ p); entropy — the more unsure the model was before picking; drafts — under speculative decoding, which tokens were drafted and accepted, corrected or added as a bonus. Hover a token for its alternatives; click it to inspect the step.")
            }
        }
        // What the colour means, in the mode's own unit.
        Label {
            objectName: "heatLegend"
            Layout.fillWidth: true
            Layout.leftMargin: Theme.spacing * 2
            Layout.rightMargin: Theme.spacing * 2
            visible: list.count > 0 && text !== ""
            color: Theme.muted
            font.pixelSize: Theme.fontSmall
            elide: Text.ElideRight
            readonly property string mode: ChatController.messages.heatMode
            text: mode === "surprisal" ? qsTr("Tint: surprisal −log₂ p of the chosen token — clear below 0.25 bits, red at 8 bits (a 1-in-256 pick) and above")
                : mode === "entropy" ? qsTr("Tint: entropy of the step's distribution — clear when sure, red at 4 bits (as unsure as 16 equal choices) and above")
                : mode === "probability" ? qsTr("Tint: 1 − p of the chosen token — clear when p ≈ 1, red as p → 0")
                : mode === "replay" ? qsTr("Tint: tokens the replay's settings would have picked differently")
                : mode === "kvcost" ? qsTr("Tint: KL divergence between the two KV caches' distributions for each token — clear below 0.0015 nats, red at 0.05 and above")
                : mode === "fight" ? qsTr("Tint: 1 − p before the grammar's mask — clear where the model wanted the token, red where the grammar overruled it")
                : mode === "compare" && ChatController.messages.compareOnText ? qsTr("Tint: how many more bits one model needs for each word than the other — clear below 0.25 bits, red at 8 (256 times less likely)")
                : mode === "compare" ? qsTr("Tint: KL(A ‖ B) per token against the second model — clear below 0.015 nats, red at 0.5; violet: a flip") : ""
            ToolTip.visible: legendMouse.containsMouse
            ToolTip.text: qsTr("Surprisal is how unexpected the picked token was, in bits: −log₂ of its probability (p 0.5 → 1 bit, p 0.25 → 2 bits). Entropy is the surprisal the model expected on average before it picked: how spread its distribution was.")
            MouseArea { id: legendMouse; anchors.fill: parent; hoverEnabled: true; acceptedButtons: Qt.NoButton }
        }

        // The "draft" tint's categories, in the colours the text has.
        RowLayout {
            objectName: "draftLegend"
            Layout.fillWidth: true
            Layout.leftMargin: Theme.spacing * 2
            Layout.rightMargin: Theme.spacing * 2
            visible: list.count > 0 && ChatController.messages.heatMode === "draft"
            spacing: Theme.spacing
            Label { text: qsTr("Tint:"); color: Theme.muted; font.pixelSize: Theme.fontSmall }
            Repeater {
                model: [{ fate: "accepted", label: qsTr("draft accepted") },
                        { fate: "corrected", label: qsTr("draft rejected, token corrected") },
                        { fate: "bonus", label: qsTr("bonus (after a fully accepted draft)") }]
                delegate: RowLayout {
                    required property var modelData
                    spacing: 4
                    Rectangle {
                        implicitWidth: 12
                        implicitHeight: 12
                        color: ChatController.messages.draftColor(parent.modelData.fate)
                        border.color: Theme.muted
                        border.width: 1
                    }
                    Label { text: parent.modelData.label; color: Theme.muted; font.pixelSize: Theme.fontSmall }
                }
            }
            Label {
                text: qsTr("· clear: not drafted")
                color: Theme.muted
                font.pixelSize: Theme.fontSmall
                elide: Text.ElideRight
                Layout.fillWidth: true
            }
        }

        ListView {
            id: list
            objectName: "messageList"
            Layout.fillWidth: true
            Layout.fillHeight: true
            clip: true
            spacing: Theme.spacing * 1.5
            topMargin: Theme.spacing * 2
            bottomMargin: Theme.spacing * 2
            model: ChatController.messages
            // Follow the stream while the user is at the bottom.
            property bool pinned: true
            onMovementEnded: pinned = atYEnd
            onContentHeightChanged: if (pinned) positionViewAtEnd()
            ScrollBar.vertical: ScrollBar {}

            delegate: MessageDelegate {
                width: ListView.view.width
                isLast: index === ListView.view.count - 1
                selectedStep: index === view.selectedRow ? view.selectedStep : -1
                describeToken: view.describeToken
                onTokenPicked: (step) => view.tokenPicked(index, step)
            }

            Label {
                anchors.centerIn: parent
                width: Math.min(parent.width - 48, 520)
                visible: list.count === 0
                horizontalAlignment: Text.AlignHCenter
                wrapMode: Text.Wrap
                color: Theme.muted
                text: EngineController.loading.path !== ""
                      ? qsTr("Loading %1…").arg(EngineController.loading.path.split("/").pop())
                      : !EngineController.hasModel
                      ? qsTr("Open a GGUF model to begin (Ctrl+O, or drop a .gguf file here).")
                      : ChatController.mode === ChatController.Completion
                        ? qsTr("Completion mode: write the beginning of a text and %1 continues it. Each token's probabilities, the KV cache and the timings show in the inspector.").arg(EngineController.loaded.name)
                        : qsTr("Chat with %1. Each token's probabilities, the KV cache and the timings show in the inspector.").arg(EngineController.loaded.name)
            }
        }

        Label {
            objectName: "cacheNote"
            visible: ChatController.cacheNote !== ""
            text: "⟲ " + ChatController.cacheNote
            color: Theme.muted
            font.pixelSize: Theme.fontSmall
            wrapMode: Text.Wrap
            Layout.fillWidth: true
            Layout.preferredWidth: 100
            Layout.leftMargin: Theme.spacing * 2
            Layout.rightMargin: Theme.spacing * 2
            Layout.bottomMargin: 4
        }

        Composer {
            Layout.fillWidth: true
        }
    }
}
