pragma Singleton
import QtQuick
import Inferscope.Base

// Colours, sizes and number formats shared by every view. Light and dark follow AppSettings.theme.
QtObject {
    readonly property bool dark: AppSettings.theme === "dark"

    readonly property color background: dark ? "#15171c" : "#f5f6f8"
    readonly property color surface: dark ? "#1d2027" : "#ffffff"
    readonly property color surfaceAlt: dark ? "#242833" : "#eef0f4"
    readonly property color border: dark ? "#2f3440" : "#d8dce3"
    readonly property color text: dark ? "#e7e9ee" : "#1c1f24"
    readonly property color muted: dark ? "#9aa3b2" : "#5f6774"
    readonly property color accent: dark ? "#8b93ff" : "#4f46e5"
    readonly property color accentSoft: dark ? "#2b2f55" : "#e8e7fd"
    readonly property color userBubble: dark ? "#262b3a" : "#eceefe"
    readonly property color danger: dark ? "#ff7b72" : "#c93c37"
    readonly property color dangerSoft: dark ? "#3b1f22" : "#fdecec"
    readonly property color warning: dark ? "#e3b341" : "#9a6700"
    readonly property color success: dark ? "#56d364" : "#1a7f37"
    // Cells and bars of the visualizer: prompt (prefill) vs generated (decode).
    readonly property color prefill: dark ? "#58a6ff" : "#2f6feb"
    readonly property color decode: dark ? "#f0883e" : "#d9730d"
    // Text drawn on those fills (at least 4.5:1): white on the light theme's deep colours, near
    // black on the dark theme's light ones (white on #8b93ff was 2.7:1). Not "onAccent": QML takes
    // a name of on + capital for a signal handler, and such a property read as black.
    readonly property color textOnAccent: dark ? "#15171c" : "#ffffff"
    readonly property color textOnPrefill: dark ? "#15171c" : "#ffffff"
    readonly property color textOnDecode: dark ? "#15171c" : "#1c1f24"

    readonly property int spacing: 8
    readonly property int radius: 8
    readonly property int fontSmall: 11
    readonly property int fontNormal: 13
    readonly property int fontLarge: 16

    // Bytes in binary units, as every panel prints them (Units.binary: "128 KiB", "3.62 MiB").
    function bytes(b) { return b === undefined || b === null || isNaN(b) ? "–" : Units.binary(b) }
    function rate(r) { return r > 0 ? (r >= 100 ? r.toFixed(0) : r.toFixed(1)) : "–" }
    function ms(m) { return m > 0 ? (m >= 100 ? m.toFixed(0) : m.toFixed(1)) + " ms" : "–" }
    // "1,024": in C++ (Units.count); JavaScript's toLocaleString took 80-140 µs a call, and the
    // status bar's counts change with every batch of tokens.
    function count(n) { return n === undefined || n === null || isNaN(n) ? "–" : Units.count(Math.max(0, Math.round(n))) }
    // "1 token", "2 tokens", "1,024 tokens"
    // "260K", "1.24B", "8.03B": three significant digits, for parameter counts.
    function compactCount(n) {
        if (!(n > 0)) return "–"
        for (const [v, suffix] of [[1e12, "T"], [1e9, "B"], [1e6, "M"], [1e3, "K"]])
            if (n >= v) return parseFloat((n / v).toPrecision(3)).toString() + suffix
        return String(Math.round(n))
    }
    function tokens(n) { return Number(n) === 1 ? qsTr("1 token") : qsTr("%1 tokens").arg(count(n)) }
}
