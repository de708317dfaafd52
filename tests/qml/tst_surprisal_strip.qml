import QtQuick
import QtQuick.Window
import QtTest
import Inferscope.Visualizer

// The Probabilities panel's surprisal strip on synthetic values: a bar per token, the selected one
// highlighted, a click on a token's bar asks for that step, hovering shows its bits.
TestCase {
    name: "SurprisalStrip"
    when: windowShown
    Window { id: host; width: 460; height: 200; visible: true }
    Component { id: stripComponent; SurprisalStrip { width: 448 } }
    SignalSpy { id: clicks; signalName: "stepClicked" }

    function strip() {
        const s = createTemporaryObject(stripComponent, host.contentItem)
        // Qt 6.4 cannot pass list properties as initial properties: assign them after creation.
        s.surprisal = [0.5, 2.0, 8.0, 1.0]
        s.entropy = [1.0, 1.5, 3.0, 0.5]
        s.selected = 1
        s.describe = (step) => "token #" + step
        clicks.target = s
        clicks.clear()
        return s
    }

    function test_click_selects_the_step_under_the_mouse() {
        const s = strip()
        const chart = findChild(s, "surprisalChart")
        verify(chart)
        tryVerify(() => chart.width > 100)
        compare(chart.values, [0.5, 2.0, 8.0, 1.0])
        compare(chart.overlay, [1.0, 1.5, 3.0, 0.5])
        compare(chart.highlightIndex, 1)
        compare(chart.maxValue, 10)  // 8 bits × 1.05 -> 10
        // BarChart's bars start 44 px in and end 4 px before its right edge.
        const barWidth = (chart.width - 48) / 4
        mouseClick(chart, 44 + 2.5 * barWidth, chart.height / 2)
        compare(clicks.count, 1)
        compare(clicks.signalArguments[0][0], 2)
        mouseClick(chart, 44 + 0.5 * barWidth, chart.height / 2)
        compare(clicks.signalArguments[1][0], 0)
        mouseClick(chart, 10, chart.height / 2)  // the axis: no token
        compare(clicks.count, 2)
    }

    function test_hover_names_the_tokens_bits() {
        const s = strip()
        const chart = findChild(s, "surprisalChart")
        const mouse = findChild(s, "surprisalChartMouse")
        tryVerify(() => chart.width > 100)
        const barWidth = (chart.width - 48) / 4
        mouseMove(chart, 44 + 2.5 * barWidth, chart.height / 2)
        tryCompare(mouse, "hovered", 2)
        compare(mouse.hoverText, "Token 3: token #2")
        s.describe = null  // without a describer: the bits themselves
        compare(mouse.hoverText, "Token 3: surprisal 8.00 bits · entropy 3.00 bits")
    }
}
