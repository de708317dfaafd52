import QtQuick
import QtQuick.Window
import QtTest
import Inferscope.Visualizer

// The KV-cache panel on a simulated cache (a real core KvCache of stories260K's shape, no model):
// the placeholder without a cache, then the legend, bytes, formula and counterfactual rows.
TestCase {
    name: "KvCachePanel"
    when: windowShown

    Window { id: host; width: 380; height: 1400; visible: true }
    Component { id: panelComponent; KvCachePanel { width: 380; height: 1400 } }

    // 5 layers, 8 query heads, 4 KV heads, head dim 8, 2,048 positions; 5 prompt + 19 generated cells.
    function simulatedPanel() {
        const panel = createTemporaryObject(panelComponent, host.contentItem)
        verify(panel)
        compare(panel.view.simulate(5, 8, 4, 8, 2048, [{origin: "prompt", count: 5}, {origin: "generated", count: 19}]), "")
        waitForRendering(panel)
        return panel
    }

    function test_without_a_model_the_panel_says_so() {
        const panel = createTemporaryObject(panelComponent, host.contentItem)
        verify(panel)
        verify(!panel.view.shape.hasCache)
        verify(findChild(panel, "noModelLabel").visible)
        verify(!findChild(panel, "shapeLabel").visible)
        compare(findChild(panel, "result_perToken").text, "131,072 B")  // the calculator works anyway
    }

    function test_shape_legend_and_bytes() {
        const panel = simulatedPanel()
        verify(!findChild(panel, "noModelLabel").visible)
        compare(findChild(panel, "shapeLabel").text, "5 layers · 4 KV heads · head dim 8 · FP32")
        compare(findChild(panel, "legend_prompt").text, "5 prompt")
        compare(findChild(panel, "legend_generated").text, "19 generated")
        compare(findChild(panel, "legend_empty").text, "2,024 empty")
        compare(findChild(panel, "totalUsed").text, "30,720 B")        // 24 × 1,280
        compare(findChild(panel, "totalReserved").text, "2,621,440 B")  // 2,048 × 1,280
        compare(findChild(panel, "layerUsed").text, "6,144 B")
        compare(findChild(panel, "layerReserved").text, "524,288 B")
        compare(findChild(panel, "headUsed").text, "1,536 B")
        compare(findChild(panel, "headReserved").text, "131,072 B")
        compare(findChild(panel, "usageLabel").text, "30 KiB of 2.5 MiB in use (1.2%)")
    }

    function test_formula_with_the_models_numbers() {
        const panel = simulatedPanel()
        const formula = findChild(panel, "formula")
        const values = []
        for (let i = 0; i < formula.children.length; ++i)
            if (formula.children[i].children.length === 2) values.push(formula.children[i].children[0].text)
        compare(values.join(" "), "2 × 5 × 4 × 8 × 4 B = 1,280 B")
        compare(findChild(panel, "formulaUsed").text, "× 24 used = 30,720 B (30 KiB)")
        compare(findChild(panel, "formulaReserved").text, "× 2,048 reserved = 2,621,440 B (2.5 MiB)")
    }

    function test_counterfactual_rows() {
        const panel = simulatedPanel()
        const rows = {attention_MHA: ["2,560 B", "60 KiB", "5 MiB"], attention_GQA: ["1,280 B", "30 KiB", "2.5 MiB"],
                      attention_MQA: ["320 B", "7.5 KiB", "640 KiB"], element_FP32: ["1,280 B", "30 KiB", "2.5 MiB"],
                      element_FP16: ["640 B", "15 KiB", "1.25 MiB"]}
        for (const name in rows) {
            const row = findChild(panel, name)
            verify(row, name)
            compare(findChild(row, "perToken").text, rows[name][0], name)
            compare(findChild(row, "atUsed").text, rows[name][1], name)
            compare(findChild(row, "atCapacity").text, rows[name][2], name)
        }
        verify(findChild(panel, "attention_GQA").loaded)
        verify(!findChild(panel, "attention_MHA").loaded)
        verify(findChild(panel, "element_FP32").loaded)
        // Head dim 8: the block types are not offered, and the panel says why.
        verify(!findChild(panel, "element_Q8_0"))
        const note = findChild(panel, "blockTypesNote")
        verify(note.visible)
        compare(note.text, "Q8_0 and Q4_0 store each head's row in blocks of 32 values: not for this model's head dim of 8.")
    }

    // Head dim 64: a Q8_0 row is 2 blocks of 34 bytes, a Q4_0 row 2 of 18; 2 layers × 2 KV heads × K and V.
    function test_block_type_rows() {
        const panel = createTemporaryObject(panelComponent, host.contentItem)
        compare(panel.view.simulate(2, 4, 2, 64, 256, [{origin: "prompt", count: 10}]), "")
        compare(findChild(findChild(panel, "element_Q8_0"), "perToken").text, "544 B")  // 2 × 2 × 2 × 68
        compare(findChild(findChild(panel, "element_Q4_0"), "perToken").text, "288 B")  // 2 × 2 × 2 × 36
        verify(!findChild(panel, "blockTypesNote").visible)
    }

    function test_singular_shape() {
        const panel = createTemporaryObject(panelComponent, host.contentItem)
        compare(panel.view.simulate(1, 2, 1, 4, 64, [{origin: "prompt", count: 3}]), "")
        compare(findChild(panel, "shapeLabel").text, "1 layer · 1 KV head · head dim 4 · FP32")
        compare(panel.view.shape.attention, "MQA")
        verify(findChild(panel, "attention_MQA").loaded)
        verify(!findChild(panel, "attention_GQA"))  // 2 query heads cannot be grouped short of MQA
    }

    function test_a_refused_simulation_keeps_the_panel_empty() {
        const panel = createTemporaryObject(panelComponent, host.contentItem)
        compare(panel.view.simulate(5, 8, 3, 8, 2048, []), "query heads (8) must be a positive multiple of KV heads (3)")
        compare(panel.view.simulate(5, 8, 4, 8, 16, [{origin: "prompt", count: 20}]), "the runs must be positive and fit in 16 positions")
        verify(!panel.view.shape.hasCache)
    }
}
