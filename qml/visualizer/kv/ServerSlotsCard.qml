pragma ComponentBehavior: Bound
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base
import Inferscope.Engine
import Inferscope.Visualizer

// A server's slots, live (ServerSlots, gui/remote/server_slots.h): per slot the KV positions its
// conversation holds against its share of the server's budget, the whole cache in bytes against
// the budget, the queue, the decode batch and the tokens per second of all slots together. What
// the calculator's "users × tokens" works out, as the server lives it.
ColumnLayout {
    id: card
    required property ServerSlots serverSlots
    readonly property bool live: card.serverSlots.phase === ServerSlots.Live
    spacing: 6

    // A bar of `used` against `size`, filled in `fill`.
    component ShareBar: Rectangle {
        id: share
        property double used: 0
        property double size: 0
        property color fill: Theme.accent
        implicitHeight: 12
        radius: 3
        color: Theme.surfaceAlt
        border.color: Theme.border
        Rectangle {
            width: share.size > 0 ? share.width * Math.min(1, share.used / share.size) : 0
            height: share.height
            radius: share.radius
            color: share.fill
        }
    }

    KvCacheTerm {
        text: qsTr("Server slots")
        font.bold: true
        font.pixelSize: Theme.fontLarge
        explanation: qsTr("inferscope-cli serve --parallel N splits its KV cache budget (--ctx) evenly among N slots, one conversation each. The slots that are generating advance together: one token each per decode step, one batch.")
    }
    Label {
        objectName: "slotsStatus"
        Layout.fillWidth: true
        Layout.preferredWidth: 100  // fills the row; its unwrapped width must not drive the layout
        wrapMode: Text.Wrap
        font.pixelSize: Theme.fontSmall
        color: card.serverSlots.phase === ServerSlots.Failed ? Theme.danger : Theme.muted
        text: card.serverSlots.status
    }

    Flow {  // the legend
        visible: card.live
        Layout.fillWidth: true
        Layout.preferredWidth: 100
        spacing: Theme.spacing
        Repeater {
            model: [
                {color: Theme.decode, text: qsTr("generating"),
                 tip: qsTr("The slot is answering a request: its cache grows by one position per decode step.")},
                {color: Theme.accent, text: qsTr("idle"),
                 tip: qsTr("The slot keeps its last conversation's cache: a request that starts the same way reuses it instead of reading that prompt again.")}
            ]
            delegate: RowLayout {
                id: entry
                required property var modelData
                spacing: 4
                Rectangle { width: 10; height: 10; radius: 2; color: entry.modelData.color; border.color: Theme.border }
                KvCacheTerm { text: entry.modelData.text; font.pixelSize: Theme.fontSmall; explanation: entry.modelData.tip }
            }
        }
    }

    // The figures' column as wide as its widest entry (monospace: characters × advance), so that
    // every bar starts and ends at the same x.
    FontMetrics { id: mono; font.family: "monospace"; font.pixelSize: Theme.fontSmall }
    FontMetrics { id: body; font.pixelSize: Theme.fontSmall }
    readonly property real figuresWidth: {
        let chars = 0
        for (const s of card.serverSlots.slotList)
            chars = Math.max(chars, (Units.count(s.kvTokens) + " / " + Units.count(s.kvCapacity)).length)
        return Math.ceil(chars * mono.advanceWidth("0"))
    }
    Repeater {
        model: card.serverSlots.slotList
        delegate: RowLayout {
            id: slotRow
            required property var modelData
            required property int index
            visible: card.live
            Layout.fillWidth: true
            spacing: Theme.spacing
            Label {
                text: qsTr("Slot %1").arg(slotRow.modelData.id)
                font.pixelSize: Theme.fontSmall
                Layout.preferredWidth: Math.ceil(body.advanceWidth(qsTr("Slot %1").arg(63))) + 2  // the widest name: every bar starts at one x
            }
            ShareBar {
                objectName: "slotBar" + slotRow.index
                Layout.fillWidth: true
                Layout.preferredWidth: 100
                used: slotRow.modelData.kvTokens
                size: slotRow.modelData.kvCapacity
                fill: slotRow.modelData.generating ? Theme.decode : Theme.accent
            }
            Label {
                objectName: "slotTokens" + slotRow.index
                Layout.preferredWidth: card.figuresWidth
                text: qsTr("%1 / %2").arg(Units.count(slotRow.modelData.kvTokens)).arg(Units.count(slotRow.modelData.kvCapacity))
                font: mono.font
                horizontalAlignment: Text.AlignRight
            }
            HoverHandler { id: hover }
            ToolTip.visible: hover.hovered
            ToolTip.delay: 300
            ToolTip.text: qsTr("Slot %1, %2: %3 of its %4 positions hold keys and values, %5 of the %6 it reserves; %7 served.")
                .arg(slotRow.modelData.id).arg(slotRow.modelData.generating ? qsTr("generating") : qsTr("idle"))
                .arg(Units.count(slotRow.modelData.kvTokens)).arg(Units.count(slotRow.modelData.kvCapacity))
                .arg(Theme.bytes(slotRow.modelData.kvBytesUsed)).arg(Theme.bytes(slotRow.modelData.kvBytesReserved))
                .arg(slotRow.modelData.requests === 1 ? qsTr("1 request") : qsTr("%1 requests").arg(Units.count(slotRow.modelData.requests)))
        }
    }

    // All slots together: the cache's bytes against the budget.
    KvCacheTerm {
        visible: card.live
        Layout.topMargin: 4
        text: qsTr("All slots")
        font.bold: true
        explanation: qsTr("The server allocates every slot's share when it starts: the budget is reserved whether the slots hold anything or not.")
    }
    ShareBar {
        objectName: "totalBar"
        visible: card.live
        Layout.fillWidth: true
        used: card.serverSlots.bytesUsed
        size: card.serverSlots.bytesReserved
    }
    Label {
        objectName: "totalBytes"
        visible: card.live
        Layout.fillWidth: true
        Layout.preferredWidth: 100
        wrapMode: Text.Wrap
        font.pixelSize: Theme.fontSmall
        text: qsTr("%1 of %2 in use (a budget of %3 tokens)").arg(Theme.bytes(card.serverSlots.bytesUsed))
              .arg(Theme.bytes(card.serverSlots.bytesReserved)).arg(Units.count(card.serverSlots.budgetTokens))
    }

    GridLayout {
        visible: card.live
        Layout.fillWidth: true
        columns: 2
        columnSpacing: Theme.spacing * 2
        rowSpacing: 4
        Repeater {
            model: [
                {key: "busy", label: qsTr("Slots"),
                 tip: qsTr("Slots answering a request now, of all the server has (--parallel).")},
                {key: "queue", label: qsTr("Queue"),
                 tip: qsTr("Requests waiting for a slot: each slot answers one request at a time.")},
                {key: "batch", label: qsTr("Decode batch"),
                 tip: qsTr("Sequences that advanced together in the last decode step, and the most so far: each weight is read once for all of them.")},
                {key: "rate", label: qsTr("Decode speed"),
                 tip: qsTr("Tokens decoded per second by all slots together, over the server's last seconds.")},
                {key: "prefix", label: qsTr("Shared prefixes"),
                 tip: qsTr("Prompts whose start another slot's cache already held (a system prompt every client sends): those positions' keys and values were copied from it, not computed.")}
            ]
            delegate: Repeater {
                id: figure
                required property var modelData
                // Read here, not in the model: a model holding the live figures would be rebuilt at every report.
                readonly property string value: {
                    const slots = card.serverSlots
                    switch (figure.modelData.key) {
                    case "busy": return qsTr("%1 of %2 generating").arg(slots.generatingSlots).arg(slots.slotList.length)
                    case "queue": return Units.count(slots.queue)
                    case "batch": return qsTr("%1 now, %2 at most").arg(slots.lastBatch).arg(slots.largestBatch)
                    case "rate": return qsTr("%1 tokens/s").arg(slots.decodeTokensPerSecond > 0 ? Theme.rate(slots.decodeTokensPerSecond) : "0")
                    default:
                        if (slots.prefixCopies < 0) return qsTr("not reported by this server")
                        if (slots.prefixCopies === 0) return qsTr("none copied yet")
                        if (slots.prefixCopies === 1) return qsTr("1 prompt, %1 positions copied").arg(Units.count(slots.prefixTokensCopied))
                        return qsTr("%1 prompts, %2 positions copied").arg(Units.count(slots.prefixCopies)).arg(Units.count(slots.prefixTokensCopied))
                    }
                }
                model: 2
                delegate: Label {
                    id: figureLabel
                    required property int index
                    objectName: index === 1 ? "slotsFigure_" + figure.modelData.key : ""
                    text: index === 0 ? figure.modelData.label : figure.value
                    color: index === 0 ? Theme.muted : Theme.text
                    font.pixelSize: Theme.fontSmall + 1
                    Layout.fillWidth: index === 1
                    HoverHandler { id: figureHover }
                    ToolTip.visible: figureHover.hovered && figureLabel.index === 0
                    ToolTip.text: figure.modelData.tip
                    ToolTip.delay: 300
                }
            }
        }
    }
}
