// The visualizer's data with the real model: the Probabilities panel's step (following the
// stream, picked from the text), branching from an alternative (equal to a fresh run of the same
// tokens, with only one new token prefilled), answer versions, replay over the stored logits,
// the heat map's token offsets, and the per-token export.
#include <QAbstractItemModelTester>
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QTextBlock>
#include <QTextCursor>
#include <QTextDocument>

#include "chat/chat_controller.h"
#include "chat/heat_document.h"
#include "chat/token_heatmap.h"
#include "store/chat_store.h"
#include "chat_fixture.h"
#include "gui_test_helpers.h"
#include "manual_pacer_clock.h"
#include "settings/sampling_settings.h"
#include "visualizer/step_inspector.h"
#include "visualizer/timeline_model.h"

using namespace inferscope;
using namespace inferscope::testing_gui;

namespace {

// The heat text as the chat's TextEdit holds it (HeatDocument writes it there).
std::unique_ptr<QTextDocument> documentOf(const HeatText& heat) {
    auto doc = std::make_unique<QTextDocument>();
    QTextCursor cursor(doc.get());
    HeatDocument::write(cursor, heat.spans);
    return doc;
}

// The document's characters as the plain text has them: each line break one position, as
// tokenStarts counts it (a paragraph's end or a line separator in the document).
bool sameCharacters(const QTextDocument& doc, const QString& plain) {
    const QString raw = doc.toRawText();
    if (raw.size() != plain.size()) return false;
    for (qsizetype k = 0; k < raw.size(); ++k) {
        const bool isBreak = raw[k] == QChar(QChar::ParagraphSeparator) || raw[k] == QChar(QChar::LineSeparator);
        if (isLineBreak(plain[k]) ? !isBreak : raw[k] != plain[k]) return false;
    }
    return true;
}

// Whether the character at `position` has a background (a paragraph's end is no character of a fragment).
bool tintedAt(const QTextDocument& doc, int position) {
    for (auto it = doc.findBlock(position).begin(); !it.atEnd(); ++it) {
        const QTextFragment f = it.fragment();
        if (position >= f.position() && position < f.position() + f.length()) return f.charFormat().hasProperty(QTextFormat::BackgroundBrush);
    }
    return false;
}

QByteArray readFile(const QString& path) {
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

}  // namespace

class TestStepInspector : public QObject {
    Q_OBJECT

    struct Fixture : ChatFixture {
        explicit Fixture(float temperature = 0.0f, PacerClock* clock = nullptr) : ChatFixture(20, temperature, clock) {}
    };

private slots:
    void initTestCase() { useTestLocations(); }

    // A newline token's tint stays on the token's characters: Qt's rich text gave a paragraph that
    // began with a tinted span that tint across the whole line. Line breaks are spans of their own,
    // untinted; the tint is the characters' background, never a paragraph's.
    void aNewlineDoesNotCarryItsTintIntoTheNextParagraph() {
        std::vector<StepRecord> steps(3);
        steps[0].piece = "A";
        steps[1].piece = "\nB";
        steps[2].piece = "C";
        for (StepRecord& s : steps) s.sample.pRaw = 0.1f;  // all tinted
        const HeatText heat = buildHeatText(steps, HeatMode::Probability, false, false, {});
        QCOMPARE(heat.plain, QStringLiteral("A\nBC"));
        QCOMPARE(heat.tokenStarts, (QList<int>{0, 1, 3}));
        QCOMPARE(heat.spans.size(), 4);  // A, the break, B, C
        QCOMPARE(heat.spans[1], (HeatSpan{QStringLiteral("\n"), {}}));
        for (int i : {0, 2, 3}) QVERIFY(heat.spans[i].tint.isValid());
        // As the chat's TextEdit holds it: the characters at the plain text's offsets, each tinted
        // token's characters tinted, the break not, no paragraph with a background.
        auto doc = documentOf(heat);
        QVERIFY(sameCharacters(*doc, heat.plain));
        QCOMPARE(doc->blockCount(), 2);
        QVERIFY(tintedAt(*doc, 0) && !tintedAt(*doc, 1) && tintedAt(*doc, 2) && tintedAt(*doc, 3));
        for (QTextBlock b = doc->firstBlock(); b.isValid(); b = b.next()) QVERIFY(!b.blockFormat().hasProperty(QTextFormat::BackgroundBrush));

        // Every other character Qt would break a line or start a paragraph at, inside tinted tokens,
        // and "\r\n" (which QTextCursor::insertText makes one paragraph break): one position each,
        // never tinted, the tokens around them still at their offsets.
        std::vector<StepRecord> odd(7);
        const char* pieces[] = {"a", "\rb", "c\xE2\x80\xA9", "d\xC2\x85", "\x0B" "e", "\x0C" "f", "\r\ng"};
        for (size_t i = 0; i < odd.size(); ++i) {
            odd[i].piece = pieces[i];
            odd[i].sample.pRaw = 0.1f;
        }
        const HeatText oddHeat = buildHeatText(odd, HeatMode::Probability, false, false, {});
        auto oddDoc = documentOf(oddHeat);
        QVERIFY(sameCharacters(*oddDoc, oddHeat.plain));
        for (qsizetype k = 0; k < oddHeat.plain.size(); ++k) QCOMPARE(tintedAt(*oddDoc, int(k)), !isLineBreak(oddHeat.plain[k]));
        QCOMPARE(oddDoc->blockCount(), 2);  // the '\n' alone starts a paragraph
        // A frame's start or end character in a model's output is not a frame: U+FFFD, one position.
        std::vector<StepRecord> frame(1);
        frame[0].piece = "x\xEF\xB7\x90y";  // U+FDD0
        auto frameDoc = documentOf(buildHeatText(frame, HeatMode::Probability, false, false, {}));
        QCOMPARE(frameDoc->toRawText(), QStringLiteral("x\uFFFDy"));
        QCOMPARE(frameDoc->rootFrame()->childFrames().size(), 0);
    }

    // Byte-level BPE splits an emoji's bytes between tokens: Llama 3's vocabulary writes " 🦙" as
    // " \xF0\x9F" + "\xA6" + "\x99". The heat text shows the character whole, once, tinted by the
    // probability of all three tokens (0.5 · 0.9 · 1 = 0.45, like a 0.45 token), and hovering it
    // names the split; the partial tokens are labelled by their bytes, not as U+FFFD.
    void aCharacterSplitBetweenTokensIsShownWholeWithItsSplitOnHover() {
        const QString llama3 = QStringLiteral(INFERSCOPE_SHARED_DIR "/models/arch/llama3-tiny.gguf");
        if (!QFile::exists(llama3)) QSKIP("../shared/models/arch/llama3-tiny.gguf not found");
        Fixture f;
        QVERIFY(loadAndWait(*f.engine, llama3));
        f.chat->setMode(ChatController::Mode::Completion);
        f.sampling->setMaxTokens(2);
        QVERIFY(f.answer([&] { return f.chat->send("Hi"); }));
        const Tokenizer& tok = *f.engine->model()->tokenizer;
        const std::string text = "Llama \xF0\x9F\xA6\x99 \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E";  // "Llama 🦙 日本語"
        const std::vector<int32_t> ids = tok.encode(text, false, false);
        QCOMPARE(ids, (std::vector<int32_t>{43, 81101, 11410, 99, 247, 105180, 102158}));
        const float p[] = {0.99f, 0.99f, 0.5f, 0.9f, 1.0f, 0.99f, 0.99f};
        std::vector<StepRecord> steps(ids.size());
        for (size_t k = 0; k < ids.size(); ++k) {
            steps[k].step = int32_t(k);
            steps[k].sample.id = ids[k];
            steps[k].sample.pRaw = p[k];
            steps[k].piece = tok.tokenBytes(ids[k]);
        }
        ChatModel* m = f.chat->messages();
        m->replaceSteps(1, steps);
        std::map<int32_t, TokenText> texts;  // as ChatController keeps them with the answer
        for (const int32_t id : ids) texts[id] = tokenTextOf(tok, id);
        m->addTokenTexts(1, texts);
        const HeatText* heat = m->heatText(1);
        QVERIFY(heat);
        QCOMPARE(heat->plain, QString::fromUtf8(text));
        QCOMPARE(heat->tokenStarts, (QList<int>{0, 1, 5, 6, 6, 8, 11}));  // the emoji's first two tokens end at " " and add nothing
        QCOMPARE(heat->joined.size(), 1);
        QCOMPARE(heat->joined[0].offset, 6);
        QCOMPARE(heat->joined[0].length, 2);  // a surrogate pair
        QCOMPARE(heat->joined[0].firstStep, 2);
        QCOMPARE(heat->joined[0].lastStep, 4);
        for (const HeatSpan& span : heat->spans) QVERIFY2(!span.text.contains(QChar(0xFFFD)), qPrintable(span.text));
        // The emoji in a span of its own with the tint of p = 0.45; the CJK characters are whole tokens.
        StepRecord at045 = steps[0];
        at045.sample.pRaw = 0.45f;
        at045.piece = "x";
        const QColor tint045 = buildHeatText({at045}, HeatMode::Probability, false, false).spans.value(0).tint;
        QVERIFY(tint045.isValid());
        QVERIFY(heat->spans.contains(HeatSpan{QString::fromUtf8("\xF0\x9F\xA6\x99"), tint045}));
        QCOMPARE(f.inspector->tokenText(11410), QStringLiteral("\u2423<0xF0><0x9F>"));
        QCOMPARE(f.inspector->tokenText(99), QStringLiteral("<0xA6>"));
        // Hovering either half of the emoji: the split, then the token that completed it.
        // Each token text is set in the sentence as a first-strong isolate (U+2068 … U+2069).
        const QString split = QStringLiteral("“\u2068\U0001F999\u2069” is one character from 3 tokens: “\u2068\u2423<0xF0><0x9F>\u2069” 50.0% + "
                                             "“\u2068<0xA6>\u2069” 90.0% + “\u2068<0x99>\u2069” 100.0% · together 45.0%\n");
        QCOMPARE(f.inspector->describeAt(1, 6), split + f.inspector->describe(1, 4));
        QCOMPARE(f.inspector->describeAt(1, 7), split + f.inspector->describe(1, 4));
        // A character of one token: that token alone.
        QCOMPARE(f.inspector->describeAt(1, 9), f.inspector->describe(1, 5));
        QCOMPARE(f.inspector->describeAt(1, 5), f.inspector->describe(1, 2));
    }

    // Qwen 3 thinks first: "<think>\nHmm</think>\n\nHello" (ids 151667 198 80022 151668 271 9707 of
    // its vocabulary; <think> and </think> are user-defined tokens, so their text is in the answer).
    // The model gives the thought apart, folded by the view, and the answer proper as the shown
    // text and heat text; the stored text stays whole. While streaming, a tag's first characters
    // are held back ("</" of "</think>"), and the answer shows only after the block ends.
    void aThinkBlockIsFoldedOutOfTheAnswer() {
        ChatModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        ChatMessage answer;
        answer.role = Message::Assistant;
        answer.streaming = true;
        const int row = model.append(answer);
        auto step = [](int k, const char* piece, float p) {
            StepRecord s;
            s.step = k;
            s.sample.id = k;
            s.sample.pRaw = p;
            s.piece = piece;
            return s;
        };
        const QModelIndex i = model.index(row);
        model.appendSteps(row, {step(0, "<think>", 0.99f), step(1, "\n", 0.99f), step(2, "Hmm", 0.5f), step(3, "</", 0.99f)});
        QCOMPARE(model.data(i, ChatModel::ThinkingStateRole).toString(), QStringLiteral("thinking"));
        QCOMPARE(model.data(i, ChatModel::ThinkingRole).toString(), QStringLiteral("Hmm"));
        QCOMPARE(model.data(i, ChatModel::ShownTextRole).toString(), QString());
        model.appendSteps(row, {step(4, "think>", 0.99f), step(5, "\n\n", 0.99f), step(6, "Hello", 0.5f), step(7, " there", 0.99f)});
        model.finish(row, QStringLiteral("<think>\nHmm</think>\n\nHello there"), Message::EndOfGeneration, {});
        QCOMPARE(model.data(i, ChatModel::TextRole).toString(), QStringLiteral("<think>\nHmm</think>\n\nHello there"));
        QCOMPARE(model.data(i, ChatModel::ThinkingStateRole).toString(), QStringLiteral("done"));
        QCOMPARE(model.data(i, ChatModel::ThinkingRole).toString(), QStringLiteral("Hmm"));
        QCOMPARE(model.data(i, ChatModel::ShownTextRole).toString(), QStringLiteral("Hello there"));
        QCOMPARE(model.data(i, ChatModel::HiddenCharsRole).toInt(), 0);
        // The heat text is the answer proper: the thought's steps start at 0 and show nothing.
        const HeatText* heat = model.heatText(row);
        QVERIFY(heat);
        QCOMPARE(heat->plain, QStringLiteral("Hello there"));
        QCOMPARE(heat->tokenStarts, (QList<int>{0, 0, 0, 0, 0, 0, 0, 5}));
        QCOMPARE(stepAtPosition(heat->tokenStarts, 0), 6);
        QCOMPARE(stepAtPosition(heat->tokenStarts, 6), 7);
        QVERIFY(sameCharacters(*documentOf(*heat), QStringLiteral("Hello there")));
        // Stopped while thinking: all of it is thought, nothing is held back, no answer.
        ChatMessage cut;
        cut.role = Message::Assistant;
        cut.text = QStringLiteral("<think>\nStill </th");
        cut.finishReason = Message::Cancelled;
        const int cutRow = model.append(cut);
        QCOMPARE(model.data(model.index(cutRow), ChatModel::ThinkingStateRole).toString(), QStringLiteral("cut"));
        QCOMPARE(model.data(model.index(cutRow), ChatModel::ThinkingRole).toString(), QStringLiteral("Still </th"));
        QCOMPARE(model.data(model.index(cutRow), ChatModel::ShownTextRole).toString(), QString());
        // An answer that only mentions the tag later, or a question, has no block.
        ChatMessage plain;
        plain.role = Message::Assistant;
        plain.text = QStringLiteral("Use <think> tags");
        const int plainRow = model.append(plain);
        QCOMPARE(model.data(model.index(plainRow), ChatModel::ThinkingStateRole).toString(), QString());
        QCOMPARE(model.data(model.index(plainRow), ChatModel::ShownTextRole).toString(), QStringLiteral("Use <think> tags"));
        ChatMessage question;
        question.role = Message::User;
        question.text = QStringLiteral("<think>x</think>y");
        const int questionRow = model.append(question);
        QCOMPARE(model.data(model.index(questionRow), ChatModel::ShownTextRole).toString(), QStringLiteral("<think>x</think>y"));
    }

    // Surprisal is -log2 of the pick's raw probability: p 0.25 is 2 bits, exactly. The heat map's
    // surprisal tint reaches full red at 8 bits, so 2 bits is tinted as a quarter of the way, the
    // same colour the probability tint gives a token of p 0.75 (1 - p = 0.25); 8 bits (p 1/256)
    // as strong as a p-0 token in probability mode.
    void surprisalIsMinusLog2OfTheRawProbability() {
        QCOMPARE(surprisalBits(0.25), 2.0);
        QCOMPARE(surprisalBits(0.5), 1.0);
        QCOMPARE(surprisalBits(1.0), 0.0);
        QVERIFY(std::isinf(surprisalBits(0.0)));
        auto heatOf = [](float p, HeatMode mode) {
            std::vector<StepRecord> steps(1);
            steps[0].piece = "a";
            steps[0].sample.pRaw = p;
            return buildHeatText(steps, mode, false, false).spans;
        };
        QCOMPARE(heatOf(0.25f, HeatMode::Surprisal), heatOf(0.75f, HeatMode::Probability));
        QVERIFY(heatOf(0.25f, HeatMode::Surprisal) != heatOf(0.25f, HeatMode::Probability));
        QCOMPARE(heatOf(1.0f / 256.0f, HeatMode::Surprisal), heatOf(0.0f, HeatMode::Probability));
        QCOMPARE(heatOf(0.0f, HeatMode::Surprisal), heatOf(0.0f, HeatMode::Probability));  // infinitely surprising: full
        QCOMPARE(heatModeFromName(QStringLiteral("surprisal")), HeatMode::Surprisal);
        QCOMPARE(heatModeName(HeatMode::Surprisal), QStringLiteral("surprisal"));
    }

    // The Probabilities panel's strip: one value per token of the selected answer, surprisal equal
    // to -log2 pRaw of the engine's records and entropy equal to theirs; the same for the answer
    // reopened from the store. The saved tint choice tints the chat's heat text.
    void theStripAndTintShowTheAnswersSurprisal() {
        Fixture f;
        QVERIFY(loadAndWait(*f.engine, bundledModel()));
        QVERIFY(f.answer("Once upon a time"));
        QTRY_COMPARE(f.inspector->step(), 19);
        QTRY_COMPARE(f.inspector->shownStep(), 19);  // the details follow a streaming answer less often
        const std::vector<StepRecord> steps = f.last().steps;
        QCOMPARE(steps.size(), size_t(20));
        auto checkStrip = [&](const std::vector<StepRecord>& want) {
            const QList<qreal> surprisal = f.inspector->answerSurprisal();
            const QList<qreal> entropy = f.inspector->answerEntropy();
            QCOMPARE(surprisal.size(), qsizetype(want.size()));
            QCOMPARE(entropy.size(), qsizetype(want.size()));
            for (size_t k = 0; k < want.size(); ++k) {
                QCOMPARE(surprisal[qsizetype(k)], -std::log2(double(want[k].sample.pRaw)));
                QCOMPARE(entropy[qsizetype(k)], double(want[k].sample.entropyBits));
            }
        };
        checkStrip(steps);
        // The hover text and the panel's "surprisal" row say the same, in bits.
        const QString hover = f.inspector->describe(1, 3);
        QVERIFY2(hover.contains(QStringLiteral("surprisal %1 bits").arg(-std::log2(double(steps[3].sample.pRaw)), 0, 'f', 2)), qPrintable(hover));
        QCOMPARE(f.inspector->current().value("surprisalBits").toString(),
                 QString::number(-std::log2(double(steps[19].sample.pRaw)), 'f', 2));

        // The saved choice drives the chat's tint.
        f.settings->setHeatMode(QStringLiteral("surprisal"));
        ChatModel* m = f.chat->messages();
        QCOMPARE(m->heatMode(), QStringLiteral("surprisal"));
        const QList<HeatSpan> spans = m->heatText(1)->spans;
        QCOMPARE(spans, buildHeatText(steps, HeatMode::Surprisal, f.last().trimLeadingSpace, m->darkTheme()).spans);
        QVERIFY(spans != buildHeatText(steps, HeatMode::Probability, f.last().trimLeadingSpace, m->darkTheme()).spans);

        // Reopened from the store: the same strip and tint.
        const qint64 id = f.chat->conversationId();
        f.chat->newConversation();
        QVERIFY(f.inspector->answerSurprisal().isEmpty());
        QVERIFY(f.chat->openConversation(id));
        QCOMPARE(f.inspector->row(), 1);
        checkStrip(steps);
        QCOMPARE(m->heatText(1)->spans, spans);
        f.settings->setHeatMode(QStringLiteral("probability"));

        // Two branches at the same step are answers of the same length: showing one, then the
        // other, the strip follows (it must not take equal length for the same answer).
        const int k = 4;
        auto branchWith = [&](int candidate) {
            f.inspector->select(1, k);
            return f.answer([&] { return f.inspector->branch(steps[k].sample.top[size_t(candidate)].id); });
        };
        QVERIFY(branchWith(1));
        const std::vector<StepRecord> first = f.last().steps;
        QVERIFY(f.chat->showVariant(1, 0));
        QVERIFY(branchWith(2));
        const std::vector<StepRecord> second = f.last().steps;
        QCOMPARE(first.size(), second.size());
        QVERIFY(first[k].sample.pRaw != second[k].sample.pRaw);
        auto stripIs = [&](const std::vector<StepRecord>& want) {
            const QList<qreal> got = f.inspector->answerSurprisal();
            if (got.size() != qsizetype(want.size())) return false;
            for (size_t i = 0; i < want.size(); ++i)
                if (got[qsizetype(i)] != -std::log2(double(want[i].sample.pRaw))) return false;
            return true;
        };
        QTRY_VERIFY(stripIs(second));
        const int firstVariant = f.last().variants.size() == 3 ? 1 : -1;
        QVERIFY2(firstVariant == 1, "three versions: the original and two branches");
        QVERIFY(f.chat->showVariant(1, firstVariant));
        f.inspector->select(1, k);
        QTRY_VERIFY(stripIs(first));
    }

    void followsTheNewestStepAndSelectsFromText() {
        Fixture f;
        QVERIFY(loadAndWait(*f.engine, bundledModel()));
        QVERIFY(f.answer([&] { return f.chat->send("Once upon a time"); }));
        QTRY_COMPARE(f.inspector->step(), 19);  // the panel follows at most 10 times a second
        QVERIFY(f.inspector->following());
        QCOMPARE(f.inspector->row(), 1);
        QCOMPARE(f.inspector->stepCount(), 20);
        // Pick step 1 (" there") from its position in the heat text.
        ChatModel* m = f.chat->messages();
        const QList<int> starts = m->heatText(1)->tokenStarts;
        QCOMPARE(starts.size(), 20);
        QCOMPARE(starts[0], 0);   // ","
        QCOMPARE(starts[1], 1);   // " there"
        QCOMPARE(starts[2], 7);   // " was"
        f.inspector->selectAtPosition(1, 3);
        QVERIFY(!f.inspector->following());
        QCOMPARE(f.inspector->step(), 1);
        const QVariantMap cur = f.inspector->current();
        QCOMPARE(cur.value("id").toInt(), 383);
        QCOMPARE(cur.value("token").toString(), QString::fromUtf8("\u2423there"));
        QCOMPARE(cur.value("rank").toInt(), 1);
        const QVariantList cands = f.inspector->candidates();
        QCOMPARE(cands.size(), 20);
        QVERIFY(cands[0].toMap().value("chosen").toBool());
        QCOMPARE(cands[0].toMap().value("p").toList().size(), kSamplerStageCount);
        QCOMPARE(f.inspector->survivors().size(), kSamplerStageCount);
        QVERIFY(f.inspector->describe(1, 1).startsWith(QStringLiteral("“\u2068\u2423there\u2069”")));
        // The heat text has the same characters as the answer, some of them tinted.
        QVERIFY(sameCharacters(*documentOf(*m->heatText(1)), m->heatText(1)->plain));
        QVERIFY(std::any_of(m->heatText(1)->spans.begin(), m->heatText(1)->spans.end(), [](const HeatSpan& s) { return s.tint.isValid(); }));

        // The next answer is followed again: the panel shows its newest token, not the one clicked.
        QVERIFY(f.answer([&] { return f.chat->send(" The end."); }));
        QTRY_COMPARE(f.inspector->row(), 3);
        QVERIFY(f.inspector->following());
    }

    // Panels off screen do not follow the stream (ten rebuilds a second of hidden bars, funnel and
    // charts cost a fast model's decode 4% on two cores); shown again, each shows the newest token
    // at once, without waiting for the next batch.
    void panelsOffScreenCatchUpTheMomentTheyAreShown() {
        ManualPacerClock clock;
        Fixture f(0.0f, &clock);
        QVERIFY(loadAndWait(*f.engine, bundledModel()));
        f.inspector->setShown(false);
        f.inspector->setDetailsShown(false);
        f.timeline->setActive(false);
        QSignalSpy details(f.inspector.get(), &StepInspector::detailsChanged);
        QSignalSpy profile(f.inspector.get(), &StepInspector::profileChanged);
        QSignalSpy timeline(f.timeline.get(), &TimelineModel::changed);
        QVERIFY(f.answer("Once upon a time"));
        clock.advance(60'000);  // a minute later: every paced run long due
        QVERIFY(f.inspector->step() < 19);
        QCOMPARE(f.inspector->candidateModel()->rowCount(), 0);
        QCOMPARE(details.size(), 0);
        QCOMPARE(profile.size(), 0);
        QCOMPARE(timeline.size(), 0);
        QVERIFY(f.timeline->decodeMs().isEmpty());

        // The Layers panel (the step, not its candidates): the newest step, at once.
        f.inspector->setShown(true);
        QCOMPARE(f.inspector->row(), 1);
        QCOMPARE(f.inspector->step(), 19);
        QCOMPARE(f.inspector->candidateModel()->rowCount(), 0);
        QCOMPARE(details.size(), 0);
        // The Probabilities panel: the step's candidates and the answer's strip, at once.
        f.inspector->setDetailsShown(true);
        QCOMPARE(details.size(), 1);
        QCOMPARE(f.inspector->candidateModel()->rowCount(), 20);
        QCOMPARE(f.inspector->answerSurprisal().size(), 20);
        QCOMPARE(f.inspector->current().value("step").toInt(), 19);
        // The Timeline panel: every decode pass of the answer.
        f.timeline->setActive(true);
        QCOMPARE(timeline.size(), 1);
        QCOMPARE(f.timeline->row(), 1);
        QCOMPARE(f.timeline->decodeMs().size(), 19);
    }

    void branchingEqualsAFreshRunAndKeepsTheOldVersion() {
        Fixture f;
        QVERIFY(loadAndWait(*f.engine, bundledModel()));
        QVERIFY(f.answer([&] { return f.chat->send("Once upon a time"); }));
        const ChatMessage original = f.last();
        const int k = 4;
        const int32_t alternative = original.steps[k].sample.top[1].id;
        QSignalSpy prefill(f.engine.get(), &EngineController::prefillFinished);
        f.inspector->select(1, k);
        QVERIFY(f.answer([&] { return f.inspector->branch(alternative); }));
        const ChatMessage& branched = f.last();
        // The kept tokens, the alternative, then a continuation.
        QCOMPARE(branched.steps.size(), size_t(20 + k + 1));
        for (int s = 0; s < k; ++s) QCOMPARE(branched.steps[size_t(s)].sample.id, original.steps[size_t(s)].sample.id);
        QCOMPARE(branched.steps[size_t(k)].sample.id, alternative);
        QCOMPARE(branched.steps[size_t(k) + 1].step, k + 1);  // numbered after the kept steps
        const auto stats = prefill.last().at(1).value<PrefillStats>();
        QCOMPARE(stats.nComputed, 1);                 // only the alternative ran: no new prefill
        QCOMPARE(stats.nReused, 5 + k);               // prompt + kept tokens came from the cache
        QVERIFY(f.chat->cacheNote().startsWith(QStringLiteral("Branched at token %1").arg(k + 1)));
        QCOMPARE(branched.variants.size(), size_t(2));
        QCOMPARE(branched.stats.branchedAt, k);

        // A fresh engine run of prompt + the first k tokens + the alternative gives the same continuation.
        EngineOptions opt;
        opt.modelPath = bundledModel().toStdString();
        opt.device = DeviceKind::Cpu;
        auto fresh = Engine::load(opt);
        QVERIFY(fresh);
        GenerateRequest req;
        req.prompt = {1, 403, 407, 261, 378};
        for (int s = 0; s < k; ++s) req.prompt.push_back(original.steps[size_t(s)].sample.id);
        req.prompt.push_back(alternative);
        req.sampler.temperature = 0.0f;
        req.maxTokens = 20;
        auto reference = (*fresh)->generate(req);
        QVERIFY(reference);
        for (size_t s = 0; s < reference->tokens.size(); ++s)
            QCOMPARE(branched.steps[size_t(k) + 1 + s].sample.id, reference->tokens[s]);

        // The previous version stays reachable.
        const QString branchedText = branched.text;
        QVERIFY(f.chat->showVariant(1, 0));
        QCOMPARE(f.last().text, original.text);
        QVERIFY(f.chat->showVariant(1, 1));
        QCOMPARE(f.last().text, branchedText);
        // The store keeps the shown version.
        const auto stored = f.store.messages(f.chat->conversationId());
        QCOMPARE(stored.size(), 2);
        QCOMPARE(stored[1].content, branchedText);
    }

    void regenerateAddsAVersion() {
        Fixture f(1.0f);
        QVERIFY(loadAndWait(*f.engine, bundledModel()));
        QVERIFY(f.answer([&] { return f.chat->send("Once upon a time"); }));
        const QString first = f.last().text;
        SamplerParams other;
        other.temperature = 1.0f;
        other.seed = 4242;
        f.chat->setSamplerOverride(other);
        QVERIFY(f.answer([&] { return f.chat->regenerate(); }));
        QCOMPARE(f.chat->messages()->count(), 2);
        QCOMPARE(f.last().variants.size(), size_t(2));
        QCOMPARE(f.last().activeVariant, 1);
        QVERIFY(f.chat->showVariant(1, 0));
        QCOMPARE(f.last().text, first);
    }

    void replayCountsWhatOtherSettingsChange() {
        Fixture f(1.0f);
        QVERIFY(loadAndWait(*f.engine, bundledModel()));
        QVERIFY(f.answer([&] { return f.chat->send("Once upon a time"); }));
        f.inspector->select(1, 0);
        QVERIFY(f.inspector->replay()->available());
        // The answer's own settings and seed: nothing changes.
        f.inspector->replay()->resetToAnswer();
        QSignalSpy result(f.inspector->replay(), &StepReplay::resultChanged);
        QVERIFY(result.wait(2000));
        QCOMPARE(f.inspector->replay()->error(), QString());
        QCOMPARE(f.inspector->replay()->changedCount(), 0);
        QCOMPARE(f.inspector->replay()->inexactCount(), 0);  // stories260K: all 512 logits are stored
        // Greedy: exactly the steps whose pick was not the most probable change.
        int notTop = 0;
        for (const auto& s : f.last().steps) notTop += s.sample.rank != 1;
        f.inspector->replay()->setTemperature(0.0);
        QVERIFY(result.wait(2000));
        QCOMPARE(f.inspector->replay()->changedCount(), notTop);
        QCOMPARE(int(f.last().replayChanged.size()), 20);
        QCOMPARE(f.inspector->replay()->current().value("id").toInt(), f.last().steps[0].sample.top[0].id);
    }

    // The replay box beside a finished answer offers the replay: after a click on a token of a
    // longer conversation, opening a shorter one left the panel on no step ("Available once an
    // answer has finished" beside finished answers). Another conversation: the panel follows it.
    void anotherConversationIsFollowedAndItsAnswerReplayable() {
        Fixture f;
        QVERIFY(loadAndWait(*f.engine, bundledModel()));
        QVERIFY(f.answer("Once upon a time"));
        const qint64 shorter = f.chat->conversationId();
        f.chat->newConversation();
        QVERIFY(f.answer("Once upon a time"));
        QVERIFY(f.answer(" The end."));
        f.inspector->select(3, 2);
        QVERIFY(!f.inspector->following());
        QVERIFY(f.chat->openConversation(shorter));
        QCOMPARE(f.chat->messages()->count(), 2);
        QVERIFY(f.inspector->following());
        QCOMPARE(f.inspector->row(), 1);
        QVERIFY(f.inspector->replay()->available());
        QCOMPARE(f.inspector->replay()->note(), QString());
        // Why not, when not: no answer yet.
        f.chat->newConversation();
        QCOMPARE(f.inspector->replay()->note(), QStringLiteral("No answer yet: every step's logits are kept, so the sampler can run again on them once one has finished."));
    }

    // Issue 27: a stored answer shows what the model that made it produced. Chat with stories260K,
    // load qwen2-tiny (another vocabulary): the old answer's picked tokens, candidates (bars and
    // list), tooltips and export still read stories260K's texts — before, they were looked up in
    // Qwen's vocabulary ("et", "␣on") — and so after the conversation is opened again from the
    // store. Its Timeline has no GB/s from Qwen's shape, and branching asks for its model.
    void anOldAnswerKeepsItsOwnTokensWhenAnotherModelIsLoaded() {
        const QString qwen = QStringLiteral(INFERSCOPE_SHARED_DIR "/models/arch/qwen2-tiny.gguf");
        if (!QFile::exists(qwen)) QSKIP("../shared/models/arch/qwen2-tiny.gguf not found");
        Fixture f;
        QVERIFY(loadAndWait(*f.engine, bundledModel()));
        QVERIFY(f.answer("Once upon a time"));
        const int row = f.chat->messages()->count() - 1;
        const int nSteps = int(f.last().steps.size());
        QVERIFY(nSteps >= 5);
        QCOMPARE(f.last().origin.modelName, std::string("stories260K"));
        QCOMPARE(f.last().origin.modelFile, bundledModel().toStdString());
        QVERIFY(f.last().origin.vocabularyHash != 0);
        // The cache the answer was made with: the app's default (f16), as the status bar says.
        QCOMPARE(f.engine->kvType(), QStringLiteral("f16"));
        QCOMPARE(f.last().origin.kvType, std::string("f16"));
        // What a person reads about the answer: each step's token, its candidates in the list and
        // the bars, its tooltip; the CSV export.
        const QString csv = QDir(QDir::tempPath()).filePath(QStringLiteral("tst_step_inspector_origin.csv"));
        const auto shown = [&] {
            QStringList out;
            for (int k = 0; k < nSteps; ++k) {
                f.inspector->select(row, k);
                out << f.inspector->current().value("token").toString();
                for (const QVariant& c : f.inspector->candidates()) out << c.toMap().value("token").toString();
                CandidateListModel* bars = f.inspector->candidateModel();
                for (int r = 0; r < bars->rowCount(); ++r) out << bars->data(bars->index(r), CandidateListModel::TokenRole).toString();
                out << f.inspector->describe(row, k);
            }
            f.inspector->exportRecords(QUrl::fromLocalFile(csv), QStringLiteral("csv"));
            out << QString::fromUtf8(readFile(csv));
            return out;
        };
        const QStringList before = shown();
        // stories260K's own texts: the picks are the answer's text.
        QString picks;
        for (int k = 0; k < nSteps; ++k) picks += QString::fromStdString(f.last().steps[size_t(k)].piece);
        QCOMPARE(picks.trimmed(), f.last().text.trimmed());
        f.inspector->select(row, 0);
        QCOMPARE(f.inspector->current().value("token").toString(),
                 f.inspector->liveTokenText(f.last().steps[0].sample.id));
        QVERIFY(!before.join(QString()).contains(QLatin1Char('#')));  // every id had its text

        // Its Timeline: GB/s of each decode pass, from what a pass of stories260K reads.
        f.inspector->select(row, 1);
        QTRY_COMPARE(f.timeline->row(), row);
        QVERIFY(f.timeline->costKnown());
        const QList<qreal> gbps = f.timeline->decodeGBps();
        const QVariantMap decode = f.timeline->decode();
        QCOMPARE(gbps.size(), nSteps - 1);

        QVERIFY(loadAndWait(*f.engine, qwen));
        QVERIFY(f.engine->modelName() != QStringLiteral("stories260K"));
        QCOMPARE(shown(), before);
        f.inspector->select(row, 1);
        QCOMPARE(f.inspector->answerModel(), QStringLiteral("stories260K (%1)").arg(bundledModel()));
        // The same figures with Qwen loaded: the answer keeps what a pass of its model costs.
        QVERIFY(f.timeline->costKnown());
        QCOMPARE(f.timeline->decodeGBps(), gbps);
        QCOMPARE(f.timeline->decode().value("medianGBps"), decode.value("medianGBps"));
        QCOMPARE(f.timeline->decode().value("gflops"), decode.value("gflops"));
        QVERIFY(!f.timeline->remote());
        // Another model would continue it with its own tokens: refused, naming the one it needs.
        const StepRecord& second = f.last().steps[1];
        QVERIFY(second.sample.top.size() > 1);
        QVERIFY(!f.inspector->branch(second.sample.top[1].id == second.sample.id ? second.sample.top[0].id : second.sample.top[1].id));
        QCOMPARE(f.chat->lastError(), QStringLiteral("This answer was made by stories260K (%1): load it to branch from the answer.").arg(bundledModel()));

        // Opened again from the store: the same texts.
        const qint64 id = f.chat->conversationId();
        QVERIFY(id > 0);
        f.chat->newConversation();
        QVERIFY(f.chat->openConversation(id));
        QCOMPARE(f.chat->messages()->count(), row + 1);
        QCOMPARE(shown(), before);
        f.inspector->select(row, 1);
        QTRY_COMPARE(f.timeline->row(), row);
        QCOMPARE(f.timeline->decodeGBps(), gbps);  // and the cost came back from the store
        QFile::remove(csv);
    }

    // Every token of the vocabulary shows as something visible in "picked" and the candidates
    // (a byte-fallback token showed blank).
    void everyTokenHasAVisibleLabel() {
        Fixture f;
        QVERIFY(loadAndWait(*f.engine, bundledModel()));
        const int n = f.engine->model()->tokenizer->vocabSize();
        QVERIFY(n > 256);
        QStringList blank;
        for (int id = 0; id < n; ++id) {
            const QString label = f.inspector->liveTokenText(id);
            bool seen = false;
            for (const QChar c : label) seen = seen || (c.isPrint() && !c.isSpace() && c.category() != QChar::Other_Format);
            if (!seen) blank << QStringLiteral("%1 \"%2\"").arg(id).arg(label);
        }
        QVERIFY2(blank.isEmpty(), qPrintable(blank.join(QStringLiteral(", "))));
    }

    void exportsTheAnswersTokens() {
        Fixture f;
        QVERIFY(loadAndWait(*f.engine, bundledModel()));
        QVERIFY(f.answer([&] { return f.chat->send("Once upon a time"); }));
        f.inspector->select(1, 0);
        QTemporaryDir dir;
        const QString json = dir.filePath("tokens.json"), csv = dir.filePath("tokens.csv");
        QVERIFY(f.inspector->exportRecords(QUrl::fromLocalFile(json), "json"));
        QVERIFY(f.inspector->exportRecords(QUrl::fromLocalFile(csv), "csv"));
        QFile jf(json);
        QVERIFY(jf.open(QIODevice::ReadOnly));
        const QJsonArray steps = QJsonDocument::fromJson(jf.readAll()).object().value("steps").toArray();
        QCOMPARE(steps.size(), 20);
        const QJsonObject first = steps[0].toObject();
        // The step-record schema the CLI's --json and the conversation export write, in its order.
        QCOMPARE(first.keys(), (QStringList{"end_of_generation", "entropy_bits", "forward_us", "id", "log_sum_exp", "logit", "p",
                                            "p_final", "piece", "position", "rank", "sample_us", "step", "survivors", "top"}));
        QCOMPARE(first.value("id").toInt(), 432);
        QCOMPARE(first.value("piece").toString(), QStringLiteral(","));
        QCOMPARE(first.value("step").toInt(), 0);
        QCOMPARE(first.value("position").toInt(), 5);
        QCOMPARE(first.value("rank").toInt(), 1);  // greedy
        QCOMPARE(first.value("top").toArray().size(), 20);
        const QJsonObject best = first.value("top").toArray()[0].toObject();
        QCOMPARE(best.value("id").toInt(), 432);
        QCOMPARE(best.value("piece").toString(), QStringLiteral(","));  // every candidate's piece, from the tokenizer
        QVERIFY(!first.value("top").toArray()[19].toObject().value("piece").toString().isEmpty());
        QCOMPARE(best.value("stages").toObject().keys(), (QStringList{"grammar", "min-p", "penalty", "raw", "temperature", "top-k", "top-p"}));
        QFile cf(csv);
        QVERIFY(cf.open(QIODevice::ReadOnly));
        const QStringList lines = QString::fromUtf8(cf.readAll()).split('\n', Qt::SkipEmptyParts);
        QCOMPARE(lines.size(), 21);
        QVERIFY(lines[0].startsWith("step,position,id,token,p,p_final,logit,rank,entropy_bits"));
        QVERIFY(lines[1].startsWith("0,5,432,\",\","));
    }
};

QTEST_GUILESS_MAIN(TestStepInspector)
#include "tst_step_inspector.moc"
