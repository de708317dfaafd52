import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base
import Inferscope.Engine
import Inferscope.Visualizer

// Prefill and decode on a time line: prefill as one block, each decode step as a bar, and what
// they achieved against this machine's limits — prefill is compute-bound, decode memory-bound.
// Two experiments: the same answer without the KV cache, and a prefill sweep over prompt lengths.
ScrollView {
    id: panel
    contentWidth: availableWidth
    clip: true
    ScrollBar.vertical.policy: ScrollBar.AlwaysOn
    ScrollBar.horizontal.policy: ScrollBar.AlwaysOff
    Binding { target: TimelineModel; property: "active"; value: panel.visible }

    readonly property var pf: TimelineModel.prefill
    readonly property var dc: TimelineModel.decode
    readonly property var mc: TimelineModel.machine
    readonly property var ct: TimelineModel.counters

    function pct(x) { return x === undefined ? "–" : (x * 100).toFixed(0) + "%" }

    ColumnLayout {
        id: content
        objectName: "timelineContent"
        width: panel.availableWidth - 2 * Theme.spacing - 10
        x: Theme.spacing
        spacing: Theme.spacing

        Label {
            Layout.topMargin: Theme.spacing
            visible: TimelineModel.row < 0
            Layout.fillWidth: true
            Layout.preferredWidth: 100
            wrapMode: Text.Wrap
            color: Theme.muted
            text: qsTr("Send a prompt: its prefill and each decode step appear here with what they cost.")
        }

        // ---- prefill and decode as one time line ---------------------------------------------
        Label { visible: TimelineModel.row >= 0; text: qsTr("Time line of the answer"); font.bold: true; Layout.topMargin: Theme.spacing }
        Item {
            id: strip
            visible: TimelineModel.row >= 0
            Layout.fillWidth: true
            Layout.preferredWidth: 100
            implicitHeight: 30
            readonly property real decodeTotal: {
                let t = 0
                for (const v of TimelineModel.decodeMs) t += v
                return t
            }
            readonly property real total: (panel.pf.ms ?? 0) + decodeTotal
            Rectangle {
                id: prefillBlock
                width: strip.total > 0 ? Math.max(2, strip.width * (panel.pf.ms ?? 0) / strip.total) : 0
                height: parent.height
                color: Theme.prefill
                radius: 3
                ToolTip.visible: prefillMouse.containsMouse
                ToolTip.text: qsTr("Prefill: the %1 new prompt tokens in one batched pass.").arg(panel.pf.tokens)
                MouseArea { id: prefillMouse; anchors.fill: parent; hoverEnabled: true }
            }
            Rectangle {
                x: prefillBlock.width + 1
                width: strip.width - x
                height: parent.height
                color: Theme.decode
                opacity: 0.85
                radius: 3
                ToolTip.visible: decodeMouse.containsMouse
                ToolTip.text: qsTr("Decode: %1 passes, one token each, in sequence.").arg(TimelineModel.decodeMs.length)
                MouseArea { id: decodeMouse; anchors.fill: parent; hoverEnabled: true }
            }
        }
        GridLayout {
            visible: TimelineModel.row >= 0
            Layout.fillWidth: true
            Layout.preferredWidth: 100
            columns: 2
            columnSpacing: Theme.spacing * 2
            rowSpacing: 2
            Label { text: qsTr("prefill"); color: Theme.prefill; font.bold: true; ToolTip.visible: pfLabelMouse.containsMouse; ToolTip.text: qsTr("Prefill: the whole prompt in one forward pass, computing and caching K and V for every prompt token; limited by arithmetic."); MouseArea { id: pfLabelMouse; anchors.fill: parent; hoverEnabled: true } }
            Label {
                objectName: "prefillSummary"
                Layout.fillWidth: true; Layout.preferredWidth: 10; wrapMode: Text.Wrap
                // The shown answer's origin says how it was timed, not whatever is loaded now.
                text: TimelineModel.remote
                      ? qsTr("%1 prompt tokens (the server's count) · first token after %2, network included").arg(panel.pf.tokens ?? 0).arg(Theme.ms(panel.pf.ms ?? 0))
                      : !TimelineModel.costKnown
                      ? qsTr("%1 (%2 reused) in %3 · %4 tok/s").arg(Theme.tokens(panel.pf.tokens ?? 0)).arg(panel.pf.reused ?? 0)
                        .arg(Theme.ms(panel.pf.ms ?? 0)).arg(Theme.rate(panel.pf.tokensPerSecond ?? 0))
                      : qsTr("%1 (%2 reused) in %3 · %4 tok/s · %5 GFLOP/s")
                        .arg(Theme.tokens(panel.pf.tokens ?? 0)).arg(panel.pf.reused ?? 0).arg(Theme.ms(panel.pf.ms ?? 0))
                        .arg(Theme.rate(panel.pf.tokensPerSecond ?? 0)).arg(Number((panel.pf.gflops ?? 0).toPrecision(3)))
                      + (panel.pf.computeFraction !== undefined ? qsTr(" = %1 of the matmul peak").arg(panel.pct(panel.pf.computeFraction)) : "")
            }
            Label { text: qsTr("first token"); color: Theme.muted; ToolTip.visible: ttftLabelMouse.containsMouse; ToolTip.text: qsTr("Time to first token: the prefill plus the first sampling step, the wait before text appears."); MouseArea { id: ttftLabelMouse; anchors.fill: parent; hoverEnabled: true } }
            Label { text: Theme.ms(TimelineModel.timeToFirstTokenMs) }
            Label { text: qsTr("decode"); color: Theme.decode; font.bold: true; ToolTip.visible: dcLabelMouse.containsMouse; ToolTip.text: qsTr("Decode: one token per forward pass, each reading every weight and the KV cache so far; limited by memory bandwidth."); MouseArea { id: dcLabelMouse; anchors.fill: parent; hoverEnabled: true } }
            Label {
                objectName: "decodeSummary"
                Layout.fillWidth: true; Layout.preferredWidth: 10; wrapMode: Text.Wrap
                text: TimelineModel.remote
                      ? qsTr("%1 tokens · median %2 apart · %3 tok/s (this client's clock)").arg(panel.dc.passes ?? 0).arg(Theme.ms(panel.dc.medianMs ?? 0)).arg(Theme.rate(panel.dc.tokensPerSecond ?? 0))
                      : !TimelineModel.costKnown
                      ? qsTr("%1 passes · median %2 · %3 tok/s · memory traffic: load %4 to compute it").arg(panel.dc.passes ?? 0)
                        .arg(Theme.ms(panel.dc.medianMs ?? 0)).arg(Theme.rate(panel.dc.tokensPerSecond ?? 0)).arg(TimelineModel.answerModel || qsTr("the model that made it"))
                      : qsTr("%1 passes · median %2 · %3 tok/s · %4 GB/s read")
                        .arg(panel.dc.passes ?? 0).arg(Theme.ms(panel.dc.medianMs ?? 0)).arg(Theme.rate(panel.dc.tokensPerSecond ?? 0))
                        .arg((panel.dc.medianGBps ?? 0).toFixed(2))
                      + (panel.dc.bandwidthFraction !== undefined ? qsTr(" = %1 of memory bandwidth").arg(panel.pct(panel.dc.bandwidthFraction)) : "")
            }
            Label { text: qsTr("machine"); color: Theme.muted; ToolTip.visible: mcLabelMouse.containsMouse; ToolTip.text: qsTr("This machine's limits, measured here: how fast memory can be read and how fast a matrix multiply runs."); MouseArea { id: mcLabelMouse; anchors.fill: parent; hoverEnabled: true } }
            Label {
                Layout.fillWidth: true; Layout.preferredWidth: 10; wrapMode: Text.Wrap
                text: TimelineModel.remote ? qsTr("the server's: not known to this app")
                    : panel.mc.measured ? qsTr("read bandwidth %1 GB/s · matmul peak %2 GFLOP/s F32, %3 BF16 (measured here)")
                                            .arg(panel.mc.bandwidthGBps.toFixed(1)).arg(panel.mc.peakGflopsF32.toFixed(0)).arg(panel.mc.peakGflopsBF16.toFixed(0))
                                        : qsTr("not measured yet")
                color: Theme.muted
            }
        }
        Label {
            visible: TimelineModel.row >= 0
            Layout.fillWidth: true
            Layout.preferredWidth: 100
            wrapMode: Text.Wrap
            font.pixelSize: Theme.fontSmall
            color: Theme.muted
            text: TimelineModel.remote
                  ? qsTr("Measured by this app over the network: the first token is the wait for the server's prefill plus the network; each decode bar is the time between two tokens' arrival (tokens that arrive together share it). The server's hardware and its memory traffic are not known here.")
                  : qsTr("Prefill multiplies whole matrices by many tokens at once: arithmetic is the limit. Decode runs one token per pass and must read every weight (and the growing KV cache) each time: memory bandwidth is the limit, which is why it is slower per token.")
        }

        // ---- decode steps ---------------------------------------------------------------------
        Label { visible: TimelineModel.decodeMs.length > 0; text: qsTr("Each decode step (ms)"); font.bold: true }
        BarChart {
            id: decodeChart
            objectName: "decodeChart"
            visible: TimelineModel.decodeMs.length > 0
            Layout.fillWidth: true
            Layout.preferredWidth: 100
            implicitHeight: 130
            values: TimelineModel.decodeMs
            overlay: TimelineModel.noCacheMs
            color: Theme.decode
            overlayColor: Theme.danger
            axisColor: Theme.muted
            unit: "ms"
            highlightIndex: StepInspector.selection.row === TimelineModel.row ? StepInspector.selection.step - 1 : -1
            HoverHandler { id: chartHover }
            ToolTip.visible: chartHover.hovered && decodeChart.indexAt(chartHover.point.position.x) >= 0
            ToolTip.text: {
                const i = decodeChart.indexAt(chartHover.point.position.x)
                if (i < 0) return ""
                let t = i < TimelineModel.decodeGBps.length
                        ? qsTr("token %1: %2 ms, %3 GB/s").arg(i + 2).arg(TimelineModel.decodeMs[i].toFixed(3)).arg(TimelineModel.decodeGBps[i].toFixed(2))
                        : qsTr("token %1: %2 ms").arg(i + 2).arg(TimelineModel.decodeMs[i].toFixed(3))
                if (i < TimelineModel.noCacheMs.length) t += qsTr("\nwithout cache: %1 ms").arg(TimelineModel.noCacheMs[i].toFixed(3))
                return t
            }
        }

        // ---- speculative decoding: rounds, verify batches, acceptance, speed-up -----------------
        DraftTimeline { Layout.fillWidth: true; Layout.preferredWidth: 100 }

        // ---- without the KV cache -------------------------------------------------------------
        Rectangle { visible: !EngineController.hasModel || EngineController.abilities.runsExperiments; Layout.fillWidth: true; height: 1; color: Theme.border }
        RowLayout {
            visible: !EngineController.hasModel || EngineController.abilities.runsExperiments  // experiments run on this machine's engine only
            Layout.fillWidth: true
            Layout.preferredWidth: 100
            Label { text: qsTr("What the KV cache saves"); font.bold: true; Layout.fillWidth: true }
            Button {
                objectName: "noCacheButton"
                text: qsTr("Run without KV cache")
                enabled: !TimelineModel.busy && TimelineModel.row >= 0 && EngineController.state === EngineController.Ready
                onClicked: TimelineModel.runWithoutCache()
                ToolTip.visible: hovered
                ToolTip.text: qsTr("Generates the same tokens again, recomputing K and V of the whole sequence at every step; drawn as a line over the bars.")
            }
        }
        GridLayout {
            visible: panel.ct.uncachedKv !== undefined
            Layout.fillWidth: true
            Layout.preferredWidth: 100
            columns: 3
            columnSpacing: Theme.spacing * 2
            Label { text: "" }
            Label { text: qsTr("with cache"); color: Theme.decode; font.bold: true }
            Label { text: qsTr("without"); color: Theme.danger; font.bold: true }
            Label {
                text: qsTr("K/V computed (positions)")
                ToolTip.visible: kvMouse.containsMouse
                ToolTip.text: qsTr("Each position's K and V are computed in every layer and KV head (×%1). With the cache once; without it again at every step: n(n+1)/2.").arg(panel.ct.kvVectorsPerPosition)
                MouseArea { id: kvMouse; anchors.fill: parent; hoverEnabled: true }
            }
            Label { objectName: "cachedKv"; text: Theme.count(panel.ct.cachedKv) }
            Label { objectName: "uncachedKv"; text: Theme.count(panel.ct.uncachedKv) }
            Label {
                text: qsTr("attention scores")
                ToolTip.visible: scMouse.containsMouse
                ToolTip.text: qsTr("Query × key dot products. The new token's attention costs the same either way; without the cache every earlier position's attention is recomputed too, in every layer but the last.")
                MouseArea { id: scMouse; anchors.fill: parent; hoverEnabled: true }
            }
            Label { text: Theme.count(panel.ct.cachedScores) }
            Label { text: Theme.count(panel.ct.uncachedScores) }
            Label { text: qsTr("decode time") }
            Label { text: Theme.ms(panel.ct.cachedDecodeMs ?? 0) }
            Label { text: Theme.ms(panel.ct.uncachedDecodeMs ?? 0) }
        }

        // ---- prefill sweep --------------------------------------------------------------------
        Rectangle { visible: !EngineController.hasModel || EngineController.abilities.runsExperiments; Layout.fillWidth: true; height: 1; color: Theme.border }
        RowLayout {
            visible: !EngineController.hasModel || EngineController.abilities.runsExperiments  // experiments run on this machine's engine only
            Layout.fillWidth: true
            Layout.preferredWidth: 100
            Label { text: qsTr("Prefill time by prompt length"); font.bold: true; Layout.fillWidth: true }
            Button {
                objectName: "sweepButton"
                text: qsTr("Run sweep")
                enabled: !TimelineModel.busy && EngineController.state === EngineController.Ready
                onClicked: TimelineModel.runPrefillSweep()
                ToolTip.visible: hovered
                ToolTip.text: qsTr("Prefills prompts of 8, 16, 32 … tokens: time per token grows on long prompts, because each token attends to all before it.")
            }
        }
        BarChart {
            objectName: "sweepChart"
            visible: TimelineModel.sweep.length > 0
            Layout.fillWidth: true
            Layout.preferredWidth: 100
            implicitHeight: 120
            values: TimelineModel.sweep.map(s => s.msPerToken * 1000)
            labels: TimelineModel.sweep.map(s => String(s.tokens))
            color: Theme.prefill
            axisColor: Theme.muted
            unit: "µs/token"
        }
        Label {
            visible: TimelineModel.sweep.length > 0
            Layout.fillWidth: true
            Layout.preferredWidth: 100
            wrapMode: Text.Wrap
            font.pixelSize: Theme.fontSmall
            color: Theme.muted
            text: TimelineModel.sweep.map(s => qsTr("%1 tok: %2").arg(s.tokens).arg(Theme.ms(s.ms))).join(" · ")
        }
        RowLayout {
            Layout.fillWidth: true
            Layout.preferredWidth: 100
            Layout.bottomMargin: Theme.spacing
            Label {
                text: TimelineModel.status
                color: Theme.muted
                font.pixelSize: Theme.fontSmall
                Layout.fillWidth: true
                Layout.preferredWidth: 10
                wrapMode: Text.Wrap
            }
            Button { visible: TimelineModel.busy; text: qsTr("Stop"); onClicked: TimelineModel.cancelExperiment() }
            Button { visible: !EngineController.hasModel || EngineController.abilities.runsExperiments; text: TimelineModel.measuring ? qsTr("Measuring…") : qsTr("Measure machine"); enabled: !TimelineModel.busy && !TimelineModel.measuring && EngineController.state === EngineController.Ready; onClicked: TimelineModel.measureMachine() }
        }
    }
}
