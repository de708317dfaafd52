import QtQuick
import QtQuick.Window
import QtTest
import Inferscope.Base
import Inferscope

// The first-run welcome: shown until closed once (AppSettings.welcomeSeen), and it says what the
// panels show, which models work, that nothing leaves the machine, and every shortcut.
TestCase {
    name: "WelcomeDialog"
    when: windowShown
    Window { id: host; width: 900; height: 700; visible: true }
    Component { id: dialogComponent; WelcomeDialog {} }

    function allText(item) {
        let t = item.text !== undefined ? String(item.text) : ""
        const kids = item.contentItem && item.contentItem !== item ? [item.contentItem] : []
        for (let i = 0; i < item.children.length; ++i) kids.push(item.children[i])
        for (const k of kids) t += "\n" + allText(k)
        return t
    }

    function test_opens_until_seen() {
        AppSettings.welcomeSeen = false
        const d = createTemporaryObject(dialogComponent, host.contentItem)
        tryCompare(d, "opened", true)
        mouseClick(findChild(d, "welcomeStart"))
        tryCompare(d, "visible", false)
        compare(AppSettings.welcomeSeen, true)

        const again = createTemporaryObject(dialogComponent, host.contentItem)
        // Seen: Component.onCompleted did not call open() (which makes a popup visible at once).
        compare(again.visible, false)
        compare(again.opened, false)
        again.open()  // F1 or the model menu
        tryCompare(again, "opened", true)
        again.close()
    }

    function test_content() {
        AppSettings.welcomeSeen = true
        const d = createTemporaryObject(dialogComponent, host.contentItem)
        d.open()
        tryCompare(d, "opened", true)
        const text = allText(d.contentItem)
        for (const s of ["Probabilities", "Layers", "Attention", "Timeline", "KV cache", "Q4_K_M", "Q8_0", "BF16", "Qwen", "Gemma",
                         "Hugging Face", "leaves this machine"])
            verify(text.indexOf(s) >= 0, "the welcome mentions " + s)
        const keys = d.shortcuts.map(s => s[0])
        for (const k of ["Enter", "Shift+Enter", "Esc", "Ctrl+R", "Ctrl+N", "Ctrl+O", "Ctrl+L", "Ctrl+B", "Ctrl+I", "F1"])
            verify(keys.indexOf(k) >= 0, "shortcut listed: " + k)
        compare(findChild(d.contentItem, "shortcutTable").children.length >= 2 * keys.length, true)
        // It looked for the models this computer has (an empty home in this runner) and says so.
        tryCompare(findChild(d.contentItem, "welcomeLibrary"), "text", "No GGUF models found on this computer.", 20000)
        d.close()
    }

    function test_fits_a_small_window() {
        AppSettings.welcomeSeen = true
        host.width = 820; host.height = 520  // the main window's minimum size
        tryCompare(host.contentItem, "height", 520)  // the window's resize reached its content
        const d = createTemporaryObject(dialogComponent, host.contentItem)
        d.open()
        tryCompare(d, "opened", true)
        verify(d.height <= host.height && d.width <= host.width, d.width + "x" + d.height)
        d.close()
        host.width = 900; host.height = 700
    }
}
