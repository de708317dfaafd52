import QtQuick
import QtQuick.Window
import QtTest
import Inferscope.Base
import Inferscope.Visualizer

// The Probabilities panel's candidate rows as painted: each row's token and percentage, its bar
// scaled to the most probable candidate, the picked token in the accent colour, and the texts
// readable on the panel (WCAG's 4.5:1) in both themes.
TestCase {
    name: "CandidateBars"
    when: windowShown
    Window { id: host; width: 420; height: 300; visible: true }
    Component {
        id: barsComponent
        CandidateBars {
            width: 380
            textColor: Theme.text
            accentColor: Theme.accent
            trackColor: Theme.surfaceAlt
            barColor: Theme.prefill
        }
    }

    readonly property var candidates: [
        {id: 5, token: "␣there", chosen: false, pRaw: 0.5, pFinal: 0.6},
        {id: 9, token: "␣was", chosen: true, pRaw: 0.25, pFinal: 0.4},
        {id: 2, token: "x", chosen: false, pRaw: 0.004, pFinal: 0}
    ]

    function luminance(c) {
        const lin = v => v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4)
        return 0.2126 * lin(c.r) + 0.7152 * lin(c.g) + 0.0722 * lin(c.b)
    }
    function contrast(a, b) {
        const la = luminance(a), lb = luminance(b)
        return (Math.max(la, lb) + 0.05) / (Math.min(la, lb) + 0.05)
    }

    function test_rows() {
        const bars = createTemporaryObject(barsComponent, host.contentItem, {candidates: candidates})
        verify(bars)
        waitForRendering(bars)
        compare(bars.count, 3)
        compare(bars.implicitHeight, 3 * 22)
        compare(bars.tokenText(0), "␣there")
        compare(bars.percentText(0), "50.0%")
        compare(bars.percentText(2), "0.40%")
        compare(bars.barFraction(0), 1)
        compare(bars.barFraction(1), 0.5)
        compare(bars.barFraction(2), 0.008)
        verify(Qt.colorEqual(bars.tokenColor(1), Theme.accent))
        verify(Qt.colorEqual(bars.tokenColor(0), Theme.text))
        compare(bars.tokenText(3), "")
        bars.candidates = []
        compare(bars.count, 0)
        compare(bars.implicitHeight, 0)
    }

    function test_readable_data() { return [{tag: "light", theme: "light"}, {tag: "dark", theme: "dark"}] }
    function test_readable(data) {
        const before = AppSettings.theme
        AppSettings.theme = data.theme
        const bars = createTemporaryObject(barsComponent, host.contentItem, {candidates: candidates})
        for (let r = 0; r < bars.count; ++r) {
            const ratio = contrast(bars.tokenColor(r), Theme.surface)
            verify(ratio >= 4.5, data.theme + " row " + r + ": " + ratio.toFixed(2) + ":1")
        }
        verify(contrast(bars.textColor, Theme.surface) >= 4.5)
        AppSettings.theme = before
    }
}
