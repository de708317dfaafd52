import QtQuick
import QtQuick.Window
import QtTest
import Inferscope.Base
import Inferscope.Visualizer

// The sampler funnel from synthetic records: a column per stage with its survivor count, a bar per
// candidate and stage, and an empty cell where a stage removed the candidate.
TestCase {
    name: "FunnelGrid"
    when: windowShown
    Window { id: host; width: 500; height: 300; visible: true }
    Component { id: gridComponent; FunnelGrid { width: 480 } }

    readonly property var stages: ["raw", "penalty", "top-k", "top-p", "min-p", "temperature"]
    // top-k 2 of {.4, .3, .2, .1}: the third and fourth candidates drop out at top-k.
    readonly property var candidates: [
        {id: 1, token: "␣a", chosen: true, pRaw: 0.4, pFinal: 0.5714, p: [0.4, 0.4, 0.5714, 0.5714, 0.5714, 0.5714]},
        {id: 2, token: "␣b", chosen: false, pRaw: 0.3, pFinal: 0.4286, p: [0.3, 0.3, 0.4286, 0.4286, 0.4286, 0.4286]},
        {id: 3, token: "␣c", chosen: false, pRaw: 0.2, pFinal: 0, p: [0.2, 0.2, 0, 0, 0, 0]},
        {id: 4, token: "␣d", chosen: false, pRaw: 0.1, pFinal: 0, p: [0.1, 0.1, 0, 0, 0, 0]}
    ]

    // The cells' texts row by row, stage by stage, as the chart paints them.
    function cellLabels(grid) {
        const labels = []
        for (let r = 0; r < grid.chart.shownRows; ++r)
            for (let c = 1; c <= grid.stages.length; ++c) labels.push(grid.chart.cellText(r, c))
        return labels
    }

    function test_cells_follow_each_stage() {
        const grid = createTemporaryObject(gridComponent, host.contentItem,
                                           {candidates: candidates, survivors: [4, 4, 2, 2, 2, 2], stages: stages})
        verify(grid)
        waitForRendering(grid)
        compare(grid.chart.stageCount, 6)
        const labels = cellLabels(grid)
        compare(labels.length, 4 * 6)
        // row by row: raw, penalty, top-k, top-p, min-p, temperature
        compare(labels.slice(0, 6), ["40", "40", "57", "57", "57", "57"])
        compare(labels.slice(12, 18), ["20", "20", "×", "×", "×", "×"])
        compare(grid.chart.cellText(0, 0), "␣a")
        verify(grid.chart.implicitHeight >= 4 * 16)
        // The stages' columns line up with the header's: the last cell ends at the chart's edge.
        const last = grid.chart.cellRect(0, 6)
        compare(Math.round(last.x + last.width), Math.round(grid.chart.width))
    }

    // Text on a bar is drawn in the colour made for that bar (the picked token's 100% on the
    // sampled distribution's orange), text beside a short bar in the text colour, and "×" muted.
    function test_text_colours_follow_what_is_behind_them() {
        const grid = createTemporaryObject(gridComponent, host.contentItem,
                                           {candidates: candidates, survivors: [4, 4, 2, 2, 2, 2], stages: stages})
        waitForRendering(grid)
        const chart = grid.chart
        compare(chart.cellTextColor(0, 6), Theme.textOnDecode)    // 57% on the last stage's bar
        compare(chart.cellBackground(0, 6), Theme.decode)
        compare(chart.cellTextColor(0, 3), Theme.textOnPrefill)   // 57% on a stage's bar
        compare(chart.cellTextColor(1, 1), Theme.text)            // 30%: the bar ends before the text
        compare(chart.cellBackground(1, 1), Theme.surfaceAlt)
        compare(chart.cellTextColor(2, 3), Theme.muted)           // removed
        compare(chart.cellTextColor(0, 0), Theme.accent)          // the picked token
        compare(chart.cellTextColor(1, 0), Theme.text)
    }

    function luminance(c) {
        const lin = v => v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4)
        return 0.2126 * lin(c.r) + 0.7152 * lin(c.g) + 0.0722 * lin(c.b)
    }
    function contrast(a, b) {
        const la = luminance(a), lb = luminance(b)
        return (Math.max(la, lb) + 0.05) / (Math.min(la, lb) + 0.05)
    }
    // Every painted percentage readable on what is behind it, WCAG's 4.5:1, in both themes (the
    // window-wide check in tst_acceptance sees Labels only; these cells are painted).
    function test_every_cell_is_readable_data() { return [{tag: "light", theme: "light"}, {tag: "dark", theme: "dark"}] }
    function test_every_cell_is_readable(data) {
        const before = AppSettings.theme
        AppSettings.theme = data.theme
        const many = []
        for (const p of [1.0, 0.75, 0.5, 0.49, 0.2, 0.05, 0.001, 0])
            many.push({id: many.length, token: "x", chosen: false, pRaw: p, pFinal: p, p: [p, p, p, p, p, p]})
        const grid = createTemporaryObject(gridComponent, host.contentItem,
                                           {candidates: many, survivors: [8, 8, 8, 8, 8, 8], stages: stages})
        waitForRendering(grid)
        compare(grid.chart.shownRows, many.length)
        for (let r = 0; r < many.length; ++r)
            for (let c = 1; c <= 6; ++c) {
                const ratio = contrast(grid.chart.cellTextColor(r, c), grid.chart.cellBackground(r, c))
                verify(ratio >= 4.5, data.theme + " p " + many[r].p[0] + " stage " + c + ": " + ratio.toFixed(2) + ":1")
            }
        AppSettings.theme = before
    }

    function test_rows_are_limited() {
        const grid = createTemporaryObject(gridComponent, host.contentItem,
                                           {candidates: candidates, survivors: [4, 4, 2, 2, 2, 2], stages: stages, rows: 2})
        waitForRendering(grid)
        compare(cellLabels(grid).length, 2 * 6)
    }
}
