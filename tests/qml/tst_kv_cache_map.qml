import QtQuick
import QtQuick.Window
import QtTest
import Inferscope.Base
import Inferscope.Visualizer

// The layers × positions grid on a simulated cache: what it paints where (prompt, generated,
// empty cells in the theme's colours), the follow / whole-context / zoomed windows, the axes and
// the hover readout.
TestCase {
    name: "KvCacheMap"
    when: windowShown

    Window { id: host; width: 360; height: 260; visible: true }
    KvCacheView { id: simulated }
    Component { id: mapComponent; KvCacheMap { width: 340; view: simulated } }

    function init() {
        compare(simulated.simulate(5, 8, 4, 8, 2048, [{origin: "prompt", count: 5}, {origin: "generated", count: 19}]), "")
    }

    // The window's pixel over a position of a layer (the row's top, inside its first KV head).
    function pixelAt(image, grid, position, layer) {
        const x = (position - grid.viewStart + 0.5) * grid.width / grid.viewLength
        const y = grid.layerTicks[layer].y - grid.height / simulated.shape.layers / 2 + 2
        const p = grid.mapToItem(host.contentItem, x, y)
        return image.pixel(Math.floor(p.x), Math.floor(p.y))
    }

    function test_cells_in_the_themes_colours() {
        const map = createTemporaryObject(mapComponent, host.contentItem)
        const grid = map.grid
        waitForRendering(grid)
        compare(grid.viewMode, KvCacheGrid.FollowFill)
        compare(grid.viewLength, 32)  // 24 cells and room to grow
        const image = grabImage(host.contentItem)
        for (let layer = 0; layer < 5; ++layer) {
            verify(Qt.colorEqual(pixelAt(image, grid, 2, layer), Theme.prefill), "prompt cell, layer " + layer)
            verify(Qt.colorEqual(pixelAt(image, grid, 12, layer), Theme.decode), "generated cell, layer " + layer)
            verify(Qt.colorEqual(pixelAt(image, grid, 28, layer), Theme.surfaceAlt), "empty cell, layer " + layer)
        }
    }

    function test_the_grid_grows_with_the_cache() {
        const map = createTemporaryObject(mapComponent, host.contentItem)
        compare(simulated.simulate(5, 8, 4, 8, 2048, [{origin: "prompt", count: 100}, {origin: "generated", count: 300}]), "")
        compare(map.grid.viewLength, 512)
        compare(simulated.simulate(5, 8, 4, 8, 2048, [{origin: "prompt", count: 5}, {origin: "generated", count: 2043}]), "")
        compare(map.grid.viewLength, 2048)  // never beyond the context
    }

    function test_whole_context_zoom_and_follow() {
        const map = createTemporaryObject(mapComponent, host.contentItem)
        const grid = map.grid
        mouseClick(findChild(map, "mode_Context"))
        compare(grid.viewMode, KvCacheGrid.WholeContext)
        compare(grid.viewLength, 2048)
        const ticks = grid.positionTicks.map(t => t.label)
        verify(ticks.indexOf("0") === 0 && ticks.indexOf("1,000") > 0, ticks.join(" "))
        compare(grid.layerTicks.map(t => t.label).join(" "), "0 1 2 3 4")
        // The whole context compressed: a single generated token still shows (runs are at least a pixel wide).
        compare(simulated.simulate(5, 8, 4, 8, 2048, [{origin: "prompt", count: 5}, {origin: "generated", count: 1}]), "")
        waitForRendering(grid)
        const image = grabImage(host.contentItem)
        let decodePixels = 0
        for (let x = 0; x < 6; ++x) {
            const p = grid.mapToItem(host.contentItem, x, 2)
            if (Qt.colorEqual(image.pixel(Math.floor(p.x), Math.floor(p.y)), Theme.decode)) ++decodePixels
        }
        compare(decodePixels, 1)

        mouseWheel(grid, 10, 10, 0, 120, Qt.NoButton, Qt.ControlModifier)
        compare(grid.viewMode, KvCacheGrid.Manual)
        verify(grid.viewLength < 2048)
        mouseClick(findChild(map, "mode_Follow"))
        compare(grid.viewMode, KvCacheGrid.FollowFill)
        compare(grid.viewLength, 32)
    }

    function test_drag_pans_and_the_readout_names_the_cell() {
        const map = createTemporaryObject(mapComponent, host.contentItem)
        const grid = map.grid
        grid.showRange(0, 64)
        mouseDrag(grid, 200, 10, -100, 0)
        verify(grid.viewStart > 0, "dragging left shows later positions")
        grid.showRange(0, 32)
        const cell = grid.width / 32
        compare(grid.describeAt(cell * 2.5, 1), "position 2, layer 0, KV head 0: prompt token (prefill)")
        compare(grid.describeAt(cell * 30.5, grid.height - 1), "position 30, layer 4, KV head 3: empty, reserved")
        mouseMove(grid, cell * 12.5, grid.layerTicks[2].y - 1)  // just above the middle of layer 2: its head 1 of 4
        tryCompare(findChild(map, "readout"), "text", "position 12, layer 2, KV head 1: generated token (decode)")
    }
}
