import QtQuick
import QtQuick.Window
import QtTest
import Inferscope.Visualizer

// The calculator's view: the product's Llama 3.1-8B figures as the user reaches them through the
// inputs, presets, and the engine's message for an invalid shape.
TestCase {
    name: "KvCacheCalculator"
    when: windowShown

    Window { id: host; width: 380; height: 700; visible: true }
    Component { id: calcComponent; KvCacheCalculator { width: 360; calculator: KvCalculatorModel {} } }

    function enter(calc, key, value) {
        const box = findChild(calc, "input_" + key)
        verify(box, key)
        box.value = value
        box.valueModified()
    }

    function test_llama_31_8b_figures() {
        const calc = createTemporaryObject(calcComponent, host.contentItem)
        compare(findChild(calc, "presetBox").displayText, "Llama 3.1-8B")
        compare(findChild(calc, "result_perToken").text, "131,072 B")
        compare(findChild(calc, "human_perToken").text, "128 KiB  ·  131 kB")
        compare(findChild(calc, "result_perUser").text, "536,870,912 B")
        compare(findChild(calc, "human_perUser").text, "512 MiB  ·  537 MB")
        enter(calc, "tokens", 128000)
        compare(findChild(calc, "result_perUser").text, "16,777,216,000 B")
        compare(findChild(calc, "human_perUser").text, "15.6 GiB  ·  16.8 GB")
        compare(findChild(calc, "presetBox").displayText, "Custom shape")
        enter(calc, "tokens", 4096)
        enter(calc, "users", 32)
        compare(findChild(calc, "result_total").text, "17,179,869,184 B")
        compare(findChild(calc, "human_total").text, "16 GiB  ·  17.2 GB")
        verify(findChild(calc, "calculatorComparison").text.indexOf("As MHA (32 KV heads): 512 KiB per token, 64 GiB in all") > 0)
    }

    function test_presets_and_element_type() {
        const calc = createTemporaryObject(calcComponent, host.contentItem)
        calc.calculator.applyPreset(1)  // Llama 2 7B: multi-head
        compare(findChild(calc, "input_kvHeads").value, 32)
        compare(findChild(calc, "result_perToken").text, "524,288 B")
        verify(findChild(calc, "calculatorComparison").text.startsWith("MHA."))
        const dtype = findChild(calc, "input_dtype")
        compare(dtype.currentText, "FP16")
        dtype.activated(3)  // INT8
        compare(calc.calculator.dtype, "int8")
        compare(findChild(calc, "result_perToken").text, "262,144 B")  // a quarter of FP32, half of FP16
    }

    // The window field: Llama 3.1-8B's shape with 24 of 32 layers sliding over 1,024 positions, at
    // 4,096 tokens: 8 layers keep 4,096 positions and 24 keep 1,024 — 4 KiB per layer per token
    // (2 × 8 KV heads × 128 × 2 B) × (8 × 4,096 + 24 × 1,024) = 224 MiB.
    function test_window_field() {
        const calc = createTemporaryObject(calcComponent, host.contentItem)
        const windowed = findChild(calc, "calculatorWindowed")
        verify(!windowed.visible)
        enter(calc, "slidingLayers", 24)
        enter(calc, "window", 1024)
        verify(windowed.visible)
        compare(windowed.text, "24 of 32 layers attend to the last 1,024 positions only: keeping only that window, 4,096 tokens need 224 MiB.")
    }

    function test_invalid_input_shows_the_engines_message() {
        const calc = createTemporaryObject(calcComponent, host.contentItem)
        enter(calc, "kvHeads", 64)
        const error = findChild(calc, "calculatorError")
        verify(error.visible)
        compare(error.text, "KV heads (64) cannot exceed query heads (32)")
        verify(!findChild(calc, "result_perToken").visible)
        enter(calc, "kvHeads", 1)
        verify(!error.visible)
        compare(findChild(calc, "result_perToken").text, "16,384 B")  // MQA
    }
}
