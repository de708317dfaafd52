import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base
import Inferscope.Visualizer

// The selected answer token by token: a bar per token for its surprisal (−log₂ p of the pick) and a
// line for the step's entropy, both in bits; the selected step darker. One painted item (BarChart),
// not an item per token: a long answer streaming in costs one repaint per update, not a relayout.
// Click a token's bar to select its step (as clicking the token in the chat does); hover for its numbers.
ColumnLayout {
    id: strip
    spacing: 2
    // Aliases of the chart's own lists: in Qt 6.4 a `var` array bound to a QList<qreal> property
    // reached the chart empty.
    property alias surprisal: chart.values   // bits per step
    property alias entropy: chart.overlay    // bits per step
    property alias selected: chart.highlightIndex
    // (step) -> the hover text; the panel passes StepInspector.describe
    property var describe: null
    signal stepClicked(int step)

    Label {
        text: qsTr("Surprisal (bars) and entropy (line) of every token, in bits")
        color: Theme.muted
        font.pixelSize: Theme.fontSmall
        Layout.fillWidth: true
        Layout.preferredWidth: 100
        wrapMode: Text.Wrap
        ToolTip.visible: titleMouse.containsMouse
        ToolTip.text: qsTr("Surprisal: −log₂ of the picked token's probability (p 0.5 → 1 bit, p 0.25 → 2 bits). Entropy: the surprisal the model expected on average before it picked. A bar far above the line is a pick the model did not see coming.")
        MouseArea { id: titleMouse; anchors.fill: parent; hoverEnabled: true; acceptedButtons: Qt.NoButton }
    }
    BarChart {
        id: chart
        objectName: "surprisalChart"
        Layout.fillWidth: true
        Layout.preferredWidth: 100
        Layout.preferredHeight: 70
        unit: qsTr("bits")
        color: Theme.prefill
        overlayColor: Theme.accent
        axisColor: Theme.muted
        MouseArea {
            id: chartMouse
            objectName: "surprisalChartMouse"
            anchors.fill: parent
            hoverEnabled: true
            property int hovered: containsMouse ? chart.indexAt(mouseX) : -1
            onClicked: (mouse) => {
                const i = chart.indexAt(mouse.x)
                if (i >= 0) strip.stepClicked(i)
            }
            ToolTip.visible: hovered >= 0
            ToolTip.text: hoverText
            // describe() already names the token, p, surprisal and entropy; without it, the bits.
            readonly property string hoverText: hovered < 0 ? ""
                : qsTr("Token %1: ").arg(hovered + 1)
                  + (strip.describe ? strip.describe(hovered)
                     : qsTr("surprisal %1 bits · entropy %2 bits")
                         .arg(hovered < strip.surprisal.length ? strip.surprisal[hovered].toFixed(2) : "–")
                         .arg(hovered < strip.entropy.length ? strip.entropy[hovered].toFixed(2) : "–"))
        }
    }
    Label {
        objectName: "surprisalTeaching"
        Layout.fillWidth: true
        Layout.preferredWidth: 100
        wrapMode: Text.Wrap
        color: Theme.muted
        font.pixelSize: Theme.fontSmall
        text: qsTr("Surprisal is how unexpected the picked token was: −log₂ p bits, so a sure pick (p ≈ 1) costs 0 bits, a coin flip 1 bit, a 1-in-256 pick 8 bits. Entropy is the surprisal the model expected before it drew: 0 bits when one token had all the probability, 3 bits when eight tokens were equally likely. A tall bar over a low line is where the model was surprised by its own sampler — a rare pick it then has to live with; that is often where an answer goes off course, and worth a click.")
        ToolTip.visible: teachMouse.containsMouse
        ToolTip.text: qsTr("Tint the chat by the same numbers with “Tint tokens by” above the conversation.")
        MouseArea { id: teachMouse; anchors.fill: parent; hoverEnabled: true; acceptedButtons: Qt.NoButton }
    }
}
