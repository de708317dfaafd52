import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base
import Inferscope.Engine
import Inferscope.Chat
import Inferscope

// Sampling parameters (validated by the engine's rules), named presets, and the chat settings.
ScrollView {
    id: panel
    contentWidth: availableWidth
    clip: true
    // A scroll bar that comes and goes would change the width, the wrapping and the height in a loop.
    ScrollBar.vertical.policy: ScrollBar.AlwaysOn
    ScrollBar.horizontal.policy: ScrollBar.AlwaysOff

    // A field's name that explains the field on hover, as the sliders' names do.
    component HintLabel: Label {
        property string hint
        ToolTip.visible: hintHover.hovered
        ToolTip.delay: 500
        ToolTip.text: hint
        HoverHandler { id: hintHover }
    }

    ColumnLayout {
        width: panel.availableWidth
        spacing: Theme.spacing

        GridLayout {
            Layout.margins: Theme.spacing * 1.5
            Layout.fillWidth: true
            columns: 2
            columnSpacing: Theme.spacing
            rowSpacing: 6

            Label { text: qsTr("Sampling"); font.bold: true; font.pixelSize: Theme.fontLarge; Layout.columnSpan: 2 }

            Label { text: qsTr("Preset") }
            RowLayout {
                Layout.fillWidth: true
                ComboBox {
                    id: presetBox
                    objectName: "presetBox"
                    Layout.fillWidth: true
                    model: SamplingSettings.presetNames
                    displayText: SamplingSettings.currentPreset !== "" ? SamplingSettings.currentPreset : qsTr("(custom)")
                    onActivated: (i) => SamplingSettings.applyPreset(SamplingSettings.presetNames[i])
                }
                Button {
                    text: qsTr("Save…")
                    onClicked: savePopup.open()
                }
            }

            ParamSlider {
                objectName: "temperature"
                label: qsTr("Temperature"); from: 0; to: 2; step: 0.05; decimals: 2
                value: SamplingSettings.temperature
                onMoved: (v) => SamplingSettings.temperature = v
                hint: qsTr("Divides the logits before the draw: below 1 sharpens the distribution, above 1 flattens it; 0 is greedy (always the most probable token).")
            }
            ParamSlider {
                objectName: "topK"
                label: qsTr("Top-k"); from: 0; to: 200; step: 1; decimals: 0
                value: SamplingSettings.topK
                onMoved: (v) => SamplingSettings.topK = Math.round(v)
                hint: qsTr("Keeps only the k most probable tokens (0 = off).")
            }
            ParamSlider {
                objectName: "topP"
                label: qsTr("Top-p"); from: 0.05; to: 1; step: 0.01; decimals: 2
                value: SamplingSettings.topP
                onMoved: (v) => SamplingSettings.topP = v
                hint: qsTr("Nucleus sampling: keeps the smallest set of tokens whose probabilities add up to p (1 = off).")
            }
            ParamSlider {
                objectName: "minP"
                label: qsTr("Min-p"); from: 0; to: 0.5; step: 0.01; decimals: 2
                value: SamplingSettings.minP
                onMoved: (v) => SamplingSettings.minP = v
                hint: qsTr("Drops tokens less probable than min-p times the most probable one (0 = off).")
            }
            ParamSlider {
                objectName: "repeatPenalty"
                label: qsTr("Repetition penalty"); from: 0.5; to: 2; step: 0.01; decimals: 2
                value: SamplingSettings.repeatPenalty
                onMoved: (v) => SamplingSettings.repeatPenalty = v
                hint: qsTr("Makes tokens seen in the last tokens less likely (1 = off).")
            }

            HintLabel { text: qsTr("Penalty window"); hint: penaltyWindow.hint }
            SpinBox {
                id: penaltyWindow
                readonly property string hint: qsTr("How many of the last tokens the repetition penalty looks at (-1 = the whole context, 0 = none).")
                from: -1; to: 4096; editable: true; value: SamplingSettings.repeatLastN; onValueModified: SamplingSettings.repeatLastN = value
                ToolTip.visible: hovered; ToolTip.delay: 500; ToolTip.text: hint
                Accessible.name: qsTr("Penalty window")
            }
            HintLabel { text: qsTr("Seed"); hint: seedBox.hint }
            SpinBox {
                id: seedBox
                readonly property string hint: qsTr("Starts the random draw: the same seed and settings give the same answer (random = a new seed each time).")
                ToolTip.visible: hovered; ToolTip.delay: 500; ToolTip.text: hint
                Accessible.name: qsTr("Seed")
                objectName: "seed"
                from: -1; to: 2147483647; editable: true
                value: SamplingSettings.seed
                onValueModified: SamplingSettings.seed = value
                textFromValue: (v) => v < 0 ? qsTr("random") : String(v)
                valueFromText: (t) => t === qsTr("random") ? -1 : parseInt(t)
            }
            HintLabel { text: qsTr("Max tokens"); hint: maxTokensBox.hint }
            SpinBox {
                id: maxTokensBox
                readonly property string hint: qsTr("The longest answer, in tokens; it may end sooner (the model's end token, a stop string, a full context).")
                ToolTip.visible: hovered; ToolTip.delay: 500; ToolTip.text: hint
                Accessible.name: qsTr("Max tokens")
                objectName: "maxTokens"; from: 1; to: 32768; editable: true; value: SamplingSettings.maxTokens; onValueModified: SamplingSettings.maxTokens = value
            }
            HintLabel { text: qsTr("Threads"); hint: threadsBox.hint }
            SpinBox {
                id: threadsBox
                objectName: "threads"
                readonly property string hint: qsTr("CPU threads the model computes on, from the next answer on (all cores = one per core; more than the cores only slows it down).")
                ToolTip.visible: hovered; ToolTip.delay: 500; ToolTip.text: hint
                Accessible.name: qsTr("Threads")
                from: 0; to: 256; editable: true
                value: SamplingSettings.threads
                onValueModified: SamplingSettings.threads = value
                textFromValue: (v) => v === 0 ? qsTr("all cores") : String(v)
                valueFromText: (t) => t === qsTr("all cores") ? 0 : parseInt(t)
            }
            HintLabel { text: qsTr("Candidates kept"); hint: topNBox.hint }
            SpinBox {
                id: topNBox
                readonly property string hint: qsTr("How many of each token's most probable candidates are recorded for the Probabilities tab (sampling itself is unchanged).")
                ToolTip.visible: hovered; ToolTip.delay: 500; ToolTip.text: hint
                Accessible.name: qsTr("Candidates kept")
                from: 0; to: 256; editable: true; value: SamplingSettings.topN; onValueModified: SamplingSettings.topN = value
            }

            Label {
                objectName: "validationError"
                Layout.columnSpan: 2
                Layout.fillWidth: true
                visible: !SamplingSettings.valid
                text: SamplingSettings.validationError
                color: Theme.danger
                wrapMode: Text.Wrap
                Layout.preferredWidth: 100  // fills the row; its unwrapped width must not drive the layout
            }
            Button {
                Layout.columnSpan: 2
                text: qsTr("Reset to defaults")
                onClicked: SamplingSettings.resetDefaults()
            }

            Rectangle { Layout.columnSpan: 2; Layout.fillWidth: true; height: 1; color: Theme.border }
            Label { text: qsTr("Conversation"); font.bold: true; font.pixelSize: Theme.fontLarge; Layout.columnSpan: 2 }
            Label {
                Layout.columnSpan: 2
                Layout.fillWidth: true
                wrapMode: Text.Wrap
                Layout.preferredWidth: 100  // fills the row; its unwrapped width must not drive the layout
                color: Theme.muted
                font.pixelSize: Theme.fontSmall
                text: EngineController.abilities.ownTemplate
                      ? qsTr("Chat mode: the server wraps the turns in its own chat template (the conversation is sent as messages).")
                      : ChatController.mode === ChatController.Chat
                      ? qsTr("Chat mode: turns are wrapped in the %1 template.").arg(ChatController.effectiveTemplate)
                      : qsTr("Completion mode: the model continues the text as written (what story and base models want).")
            }
        }
        // Chat mode's system prompt, in a column of its own that is shown or hidden whole: items
        // of the grid above made visible after it was laid out kept their first place (Qt 6.4),
        // and the field was drawn over the "Sampling" heading.
        ColumnLayout {
            objectName: "systemPromptColumn"
            visible: ChatController.mode === ChatController.Chat
            Layout.fillWidth: true
            Layout.leftMargin: Theme.spacing * 1.5
            Layout.rightMargin: Theme.spacing * 1.5
            Layout.bottomMargin: Theme.spacing * 1.5
            spacing: 6
            Label { text: qsTr("System prompt") }
            TextArea {
                objectName: "systemPrompt"
                Layout.fillWidth: true
                Layout.preferredHeight: 80
                wrapMode: TextEdit.Wrap
                text: ChatController.systemPrompt
                placeholderText: qsTr("e.g. You are a concise assistant.")
                onEditingFinished: ChatController.systemPrompt = text
                enabled: !ChatController.generating
            }
        }
        KvTypeSetting {
            Layout.fillWidth: true
            Layout.leftMargin: Theme.spacing * 1.5
            Layout.rightMargin: Theme.spacing * 1.5
            Layout.bottomMargin: Theme.spacing * 1.5
        }
        StructuredOutputSetting {
            Layout.fillWidth: true
            Layout.leftMargin: Theme.spacing * 1.5
            Layout.rightMargin: Theme.spacing * 1.5
            Layout.bottomMargin: Theme.spacing * 1.5
        }
        SpeculativeSetting {
            Layout.fillWidth: true
            Layout.leftMargin: Theme.spacing * 1.5
            Layout.rightMargin: Theme.spacing * 1.5
            Layout.bottomMargin: Theme.spacing * 1.5
        }
    }

    Popup {
        id: savePopup
        anchors.centerIn: Overlay.overlay
        modal: true
        padding: Theme.spacing * 2
        // Opened to type a name: the field has the focus, Enter saves, Esc closes.
        onOpened: presetName.forceActiveFocus()
        function save() {
            if (SamplingSettings.savePreset(presetName.text)) {
                presetName.text = ""
                savePopup.close()
            }
        }
        ColumnLayout {
            Label { text: qsTr("Save the current settings as a preset") }
            TextField {
                id: presetName
                objectName: "presetName"
                placeholderText: qsTr("Name")
                Layout.fillWidth: true
                onAccepted: savePopup.save()
            }
            RowLayout {
                Button { text: qsTr("Cancel"); onClicked: savePopup.close() }
                Button {
                    text: qsTr("Save")
                    highlighted: true
                    enabled: presetName.text.trim() !== ""
                    onClicked: savePopup.save()
                }
            }
        }
    }
}
