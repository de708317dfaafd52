import QtQuick
import QtQuick.Window
import QtTest
import Inferscope.Visualizer

// The timeline's bar chart: its scale follows the data, an overlay series and a reference line,
// and x positions map back to bars (the tooltips rely on it).
TestCase {
    name: "BarChart"
    when: windowShown
    Window { id: host; width: 420; height: 200; visible: true }
    Component { id: chartComponent; BarChart { width: 400; height: 150 } }

    // Qt 6.4 cannot pass list properties as initial properties: assign them after creation.
    function chart(props) {
        const c = createTemporaryObject(chartComponent, host.contentItem)
        for (const k in props) c[k] = props[k]
        return c
    }

    function test_scale_rounds_up_to_a_nice_number() {
        const c = chart({values: [1.2, 3.7, 2.0]})
        compare(c.maxValue, 5)  // 3.7 × 1.05 -> 5
        c.overlay = [4, 9, 12]
        compare(c.maxValue, 20)
        c.referenceValue = 30
        compare(c.maxValue, 50)
    }

    // Issue 27: plain numbers on the axis (it printed "1e+03", cut to "+03 ms" by the margin).
    function test_axis_labels_are_plain_numbers() {
        const c = chart({values: [1.2, 3.7, 2.0], unit: "ms"})
        compare(c.axisLabels, ["0", "2.5", "5 ms"])
        c.values = [400, 900, 1200]  // a scale of 2000 ms reads in seconds
        compare(c.axisLabels, ["0", "1", "2 s"])
        c.values = [300, 700]
        compare(c.axisLabels, ["0", "0.5", "1 s"])
        c.values = [30, 70]
        compare(c.axisLabels, ["0", "50", "100 ms"])
        c.unit = "GB/s"
        c.values = [0.0004, 0.0009]
        compare(c.axisLabels, ["0", "0.0005", "0.001 GB/s"])
        c.unit = "µs/token"
        c.values = [40000]
        compare(c.axisLabels, ["0", "25", "50 ms/token"])
        for (const label of c.axisLabels) verify(label.indexOf("e+") < 0 && label.indexOf("e-") < 0, label)
    }

    function test_index_at_x() {
        const c = chart({values: [1, 2, 3, 4]})
        compare(c.indexAt(0), -1)           // the axis area
        compare(c.indexAt(45), 0)
        compare(c.indexAt(390), 3)
        compare(c.indexAt(500), -1)
    }

    function test_renders_offscreen() {
        const c = chart({values: [5, 1, 3], labels: ["8", "16", "32"], color: "#ff0000"})
        waitForRendering(c)
        const img = grabImage(c)
        // a red bar is drawn somewhere in the left half (the first and tallest bar)
        let red = 0
        for (let x = 50; x < 160; x += 5)
            for (let y = 20; y < 130; y += 5)
                if (img.pixel(x, y).toString() === "#ff0000") ++red
        verify(red > 10, "red pixels: " + red)
    }
}
