import QtQuick
import QtTest
import Inferscope.Base

// The theme's text-on-fill colours, in both themes: what they are, and at least 4.5:1 (WCAG's
// contrast ratio) against the fill they are drawn on.
TestCase {
    name: "Theme"

    function luminance(c) {
        const lin = v => v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4)
        return 0.2126 * lin(c.r) + 0.7152 * lin(c.g) + 0.0722 * lin(c.b)
    }
    function contrast(a, b) {
        const la = luminance(a), lb = luminance(b)
        return (Math.max(la, lb) + 0.05) / (Math.min(la, lb) + 0.05)
    }

    function test_text_on_fills_data() {
        return [{tag: "light", theme: "light", onAccent: "#ffffff"}, {tag: "dark", theme: "dark", onAccent: "#15171c"}]
    }
    function test_text_on_fills(data) {
        const before = AppSettings.theme
        AppSettings.theme = data.theme
        compare(Theme.dark, data.theme === "dark")
        verify(Qt.colorEqual(Theme.textOnAccent, data.onAccent), String(Theme.textOnAccent))
        verify(contrast(Theme.textOnAccent, Theme.accent) >= 4.5, "accent " + contrast(Theme.textOnAccent, Theme.accent))
        verify(contrast(Theme.textOnPrefill, Theme.prefill) >= 4.5, "prefill " + contrast(Theme.textOnPrefill, Theme.prefill))
        verify(contrast(Theme.textOnDecode, Theme.decode) >= 4.5, "decode " + contrast(Theme.textOnDecode, Theme.decode))
        AppSettings.theme = before
    }
}
