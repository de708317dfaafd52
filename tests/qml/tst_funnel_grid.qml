import QtQuick
import QtQuick.Window
import QtTest
import Inferscope

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

    function cellLabels(grid) {
        const labels = []
        for (let i = 0; i < grid.children.length; ++i) {
            const item = grid.children[i]
            for (let j = 0; j < item.children.length; ++j) {
                const rect = item.children[j]
                if (rect.visible && rect.p !== undefined)
                    for (let k = 0; k < rect.children.length; ++k)
                        if (rect.children[k].text !== undefined) labels.push(rect.children[k].text)
            }
        }
        return labels
    }

    function test_cells_follow_each_stage() {
        const grid = createTemporaryObject(gridComponent, host.contentItem,
                                           {candidates: candidates, survivors: [4, 4, 2, 2, 2, 2], stages: stages})
        verify(grid)
        waitForRendering(grid)
        compare(grid.columns, 7)
        const labels = cellLabels(grid)
        compare(labels.length, 4 * 6)
        // row by row: raw, penalty, top-k, top-p, min-p, temperature
        compare(labels.slice(0, 6), ["40", "40", "57", "57", "57", "57"])
        compare(labels.slice(12, 18), ["20", "20", "×", "×", "×", "×"])
    }

    function test_rows_are_limited() {
        const grid = createTemporaryObject(gridComponent, host.contentItem,
                                           {candidates: candidates, survivors: [4, 4, 2, 2, 2, 2], stages: stages, rows: 2})
        waitForRendering(grid)
        compare(cellLabels(grid).length, 2 * 6)
    }
}
