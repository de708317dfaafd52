import QtQuick
import QtQuick.Window
import QtTest
import Inferscope.Chat

// One message from synthetic data: text, streaming cursor, the statistics line and the buttons.
TestCase {
    name: "MessageDelegate"
    width: 700
    height: 400
    when: windowShown

    // TestCase itself is invisible: a shown window hosts the delegates so `visible` means something.
    Window { id: host; width: 720; height: 420; visible: true }

    Component {
        id: delegateComponent
        MessageDelegate { width: 700 }
    }

    function props(extra) {
        const p = {index: 1, role: Message.Assistant, text: "Hello there", streaming: false, finishReason: Message.EndOfGeneration,
                   stats: {complete: true, generatedTokens: 12, prefillTokensPerSecond: 500, reusedTokens: 3, prefilledTokens: 2,
                           decodeTokensPerSecond: 80.5, timeToFirstTokenMs: 14.2},
                   generatedCount: 12, isLast: true, heatRevision: 0, variantIndex: 0, variantCount: 1,
                   thinking: "", thinkingState: "", drafts: "", structured: ({})}
        for (const k in extra) p[k] = extra[k]
        if (p.shownText === undefined) p.shownText = p.text
        if (p.hiddenChars === undefined) p.hiddenChars = 0
        return p
    }

    function test_answer_shows_text_and_figures() {
        const d = createTemporaryObject(delegateComponent, host.contentItem, props({}))
        verify(d)
        const body = findChild(d, "messageText")
        compare(body.text, "Hello there")
        verify(d.implicitHeight > 40)
        const regen = findChild(d, "regenerateButton")
        verify(regen.visible)
    }

    // Speculative decoding: the footer ends with the drafts' totals (ChatModel's role "drafts").
    function test_answer_footer_counts_its_drafts() {
        const plain = createTemporaryObject(delegateComponent, host.contentItem, props({}))
        verify(!findChild(plain, "answerFigures").text.includes("speculative"))
        const d = createTemporaryObject(delegateComponent, host.contentItem,
                                        props({drafts: "speculative: 5 drafted, 3 accepted (60%), 2 rounds"}))
        verify(findChild(d, "answerFigures").text.endsWith(" · speculative: 5 drafted, 3 accepted (60%), 2 rounds"))
    }

    // Structured output: under the answer its check (ChatModel's role "structured"), and valid JSON
    // formatted on demand; nothing under an answer that was asked nothing.
    function test_structured_answer_shows_its_check_and_formatted_json() {
        const plain = createTemporaryObject(delegateComponent, host.contentItem, props({}))
        verify(!findChild(plain, "structuredVerdict").visible)
        const json = "{\n  \"ok\": true\n}"
        const d = createTemporaryObject(delegateComponent, host.contentItem, props({text: "{\"ok\": true}",
            structured: {kind: "json_schema", verdict: "valid", summary: "✓ Valid JSON matching the schema it was asked to follow", formatted: json}}))
        const verdict = findChild(d, "structuredVerdict")
        verify(verdict.visible)
        compare(verdict.text, "✓ Valid JSON matching the schema it was asked to follow")
        const toggle = findChild(d, "formattedJsonToggle")
        const formatted = findChild(d, "formattedJson")
        verify(toggle.visible && !formatted.visible)
        const before = d.implicitHeight
        toggle.clicked()
        verify(formatted.visible)
        compare(formatted.text, json)
        tryVerify(() => d.implicitHeight > before)  // once the layout has run
        const cut = createTemporaryObject(delegateComponent, host.contentItem, props({finishReason: Message.MaxTokens,
            structured: {kind: "json", verdict: "incomplete", summary: "✗ Incomplete: the answer ends before a JSON object does"}}))
        verify(findChild(cut, "structuredVerdict").visible)
        verify(!findChild(cut, "formattedJsonToggle").visible)
    }

    function test_streaming_shows_a_cursor_and_hides_buttons() {
        const d = createTemporaryObject(delegateComponent, host.contentItem, props({streaming: true}))
        compare(findChild(d, "messageText").text, "Hello there ▍")
        verify(!findChild(d, "regenerateButton").visible)
    }

    function test_question_can_be_edited() {
        const d = createTemporaryObject(delegateComponent, host.contentItem, props({role: Message.User, text: "Hi", isLast: false}))
        verify(!findChild(d, "regenerateButton").visible)
        d.editing = true
        verify(!findChild(d, "messageText").visible)
        verify(findChild(d, "editor").visible)
    }

    // A huge message: the bubble gets ChatModel's first 20,000 characters, says what it leaves
    // out, and cannot be edited in place.
    function test_a_huge_message_is_shown_in_part() {
        const shown = "x".repeat(20000)
        const d = createTemporaryObject(delegateComponent, host.contentItem,
                                        props({role: Message.User, text: shown + "y".repeat(80000), shownText: shown,
                                               hiddenChars: 80000, isLast: false}))
        compare(findChild(d, "messageText").text, shown)
        const note = findChild(d, "hiddenNote")
        verify(note.visible)
        verify(note.text.indexOf("20,000") >= 0 || note.text.indexOf("20000") >= 0, note.text)
        verify(!findChild(d, "editButton").enabled)
        const small = createTemporaryObject(delegateComponent, host.contentItem, props({role: Message.User, text: "Hi", isLast: false}))
        verify(!findChild(small, "hiddenNote").visible)
    }

    // A reasoning model's <think> block: folded under "Thoughts", the bubble shows the answer proper
    // (ChatModel's shownText); a click opens it. While it streams the line says "Thinking…".
    function test_thoughts_are_folded() {
        const plain = createTemporaryObject(delegateComponent, host.contentItem, props({}))
        verify(!findChild(plain, "thinkingBlock").visible)
        const d = createTemporaryObject(delegateComponent, host.contentItem,
                                        props({text: "<think>\nThe user greets me.\n</think>\n\nHello there", shownText: "Hello there",
                                               thinking: "The user greets me.", thinkingState: "done"}))
        verify(findChild(d, "thinkingBlock").visible)
        const toggle = findChild(d, "thinkingToggle")
        compare(toggle.text, "▸ Thoughts")
        verify(!findChild(d, "thinkingText").visible)
        compare(findChild(d, "messageText").text, "Hello there")
        const folded = d.implicitHeight
        mouseClick(toggle)
        verify(findChild(d, "thinkingText").visible)
        compare(findChild(d, "thinkingText").text, "The user greets me.")
        compare(toggle.text, "▾ Thoughts")
        tryVerify(() => d.implicitHeight > folded)  // the layout grows at its next polish
        const streaming = createTemporaryObject(delegateComponent, host.contentItem,
                                                props({text: "<think>\nThe us", shownText: "", streaming: true,
                                                       thinking: "The us", thinkingState: "thinking"}))
        compare(findChild(streaming, "thinkingToggle").text, "▸ Thinking…")
        compare(findChild(streaming, "messageText").text, " ▍")
    }
}
