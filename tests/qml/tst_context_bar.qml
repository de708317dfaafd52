import QtQuick
import QtTest
import Inferscope

// The context bar: fill fraction, colour thresholds and label from used / size.
TestCase {
    name: "ContextBar"
    width: 300
    height: 40
    when: windowShown

    Component { id: barComponent; ContextBar {} }

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

    function test_empty_context() {
        const bar = createTemporaryObject(barComponent, this, {used: 0, size: 0})
        compare(bar.fraction, 0)
    }
}
