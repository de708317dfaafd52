import QtQuick
import QtQuick.Window
import QtTest
import Inferscope.Base
import Inferscope

// The context bar: fill fraction, colour thresholds and label from used / size.
TestCase {
    name: "ContextBar"
    width: 300
    height: 40
    when: windowShown

    Component { id: barComponent; ContextBar {} }
    Window { id: host; width: 240; height: 60; visible: true }

    function test_fraction_and_label() {
        const bar = createTemporaryObject(barComponent, this, {used: 512, size: 2048})
        verify(bar)
        compare(bar.fraction, 0.25)
        compare(findChild(bar, "contextLabel").text, "512 / 2,048 tokens")
    }

    function test_full_context_is_capped() {
        const bar = createTemporaryObject(barComponent, this, {used: 5000, size: 4096})
        compare(bar.fraction, 1)
    }

    // Where the fill ends inside the count, the digits over it are drawn light and the rest dark:
    // each part keeps its contrast (the count was dark text on the dark fill).
    function test_label_readable_over_the_fill() {
        const bar = createTemporaryObject(barComponent, host.contentItem, {used: 1000, size: 2048, width: 200, y: 30})
        mouseMove(host.contentItem, 230, 5)  // away from the bar: no tooltip over it
        const found = findChild(bar, "contextLabel")
        const at = found.mapToItem(host.contentItem, 0, 0)
        const label = {x: at.x, y: at.y, width: found.width, height: found.height}
        const edge = bar.x + bar.width * bar.fraction
        verify(label.x < edge && edge < label.x + label.width)
        waitForRendering(bar)
        const image = grabImage(host.contentItem)
        // Pixels of the count's box, between x0 and x1, that `test` accepts (by luminance).
        function count(x0, x1, test) {
            let n = 0
            for (let x = Math.ceil(x0); x < Math.floor(x1); ++x)
                for (let y = Math.ceil(label.y); y < Math.floor(label.y + label.height); ++y) {
                    const p = image.pixel(x, y)
                    if (test(0.2126 * p.r + 0.7152 * p.g + 0.0722 * p.b)) ++n
                }
            return n
        }
        const lum = c => 0.2126 * c.r + 0.7152 * c.g + 0.0722 * c.b
        const fill = lum(Theme.accent), empty = lum(Theme.surfaceAlt)
        const towardsLight = fill < lum(Theme.textOnAccent)  // light theme: white digits on the fill
        // Over the fill: digits in the onAccent direction, none in the text's direction.
        verify(count(label.x, edge - 1, l => towardsLight ? l > fill + 0.25 : l < fill - 0.25) > 5, "onAccent digits over the fill")
        compare(count(label.x, edge - 1, l => towardsLight ? l < fill - 0.15 : l > fill + 0.15), 0)
        // Past the fill: digits in the text's direction.
        verify(count(edge + 1, label.x + label.width, l => Math.abs(l - empty) > 0.25) > 5, "text digits past the fill")
    }

    function test_empty_context() {
        const bar = createTemporaryObject(barComponent, this, {used: 0, size: 0})
        compare(bar.fraction, 0)
    }
}
