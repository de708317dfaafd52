// ChatController end to end with the real bundled model and an in-memory ChatStore: answers
// stream into ChatModel (checked by QAbstractItemModelTester throughout), every completed message
// is stored with its tokens and per-token records, regenerate and edit reuse the KV cache, chat
// templates shape the prompt, stop keeps the partial answer, and a reopened conversation
// continues from the cache.
#include <QAbstractItemModelTester>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTest>
#include <thread>

#include "step_gate.h"
#include "chat/chat_controller.h"
#include "store/chat_store.h"
#include "record/step_record_codec.h"
#include "chat_fixture.h"
#include "gui_test_helpers.h"
#include "settings/sampling_settings.h"

using namespace inferscope;
using namespace inferscope::testing_gui;

class TestChatController : public QObject {
    Q_OBJECT

    // The same answer: text, finish reason, context tokens, and every step's pick, piece,
    // candidates and replay logits.
    // "Once upon a time", answered with one seed and regenerated with another: two versions.
    static void answerTwice(ChatFixture& f, ChatMessage& first, ChatMessage& second) {
        QVERIFY(loadAndWait(*f.engine, bundledModel()));
        SamplerParams sampled;
        sampled.temperature = 1.0f;
        sampled.seed = 5;
        f.chat->setSamplerOverride(sampled);
        QVERIFY(f.answer([&] { return f.chat->send("Once upon a time"); }));
        first = f.chat->messages()->at(1);
        sampled.seed = 4242;
        f.chat->setSamplerOverride(sampled);
        QVERIFY(f.answer([&] { return f.chat->regenerate(); }));
        second = f.chat->messages()->at(1);
        QVERIFY(first.text != second.text);
    }

    static void sameAnswer(const ChatMessage& got, const ChatMessage& want) {
        QCOMPARE(got.text, want.text);
        QCOMPARE(got.finishReason, want.finishReason);
        QCOMPARE(got.tokens, want.tokens);
        QCOMPARE(got.steps.size(), want.steps.size());
        for (size_t s = 0; s < got.steps.size(); ++s) {
            QCOMPARE(got.steps[s].step, want.steps[s].step);
            QCOMPARE(got.steps[s].sample.id, want.steps[s].sample.id);
            QCOMPARE(got.steps[s].piece, want.steps[s].piece);
            QCOMPARE(got.steps[s].sample.top.size(), want.steps[s].sample.top.size());
            QCOMPARE(got.steps[s].sample.pRaw, want.steps[s].sample.pRaw);
            QCOMPARE(got.steps[s].replayLogits, want.steps[s].replayLogits);
        }
    }

    struct Fixture : ChatFixture {
        Fixture() : ChatFixture(24) {}
    };

private slots:
    void initTestCase() { useTestLocations(); }

    void completionAnswerStreamsAndIsStored() {
        Fixture f;
        QVERIFY(loadAndWait(*f.engine, bundledModel()));
        QCOMPARE(f.chat->mode(), ChatController::Mode::Completion);  // stories260K names no chat template
        QSignalSpy textChanges(f.chat->messages(), &QAbstractItemModel::dataChanged);
        QVERIFY(f.answer([&] { return f.chat->send("Once upon a time"); }));
        ChatModel* m = f.chat->messages();
        QCOMPARE(m->count(), 2);
        QCOMPARE(m->at(0).role, Message::User);
        QCOMPARE(m->at(0).tokens, (std::vector<int32_t>{1, 403, 407, 261, 378}));
        const ChatMessage& a = m->at(1);
        QCOMPARE(a.role, Message::Assistant);
        QVERIFY(!a.streaming);
        QVERIFY(a.text.startsWith(", there was a little girl named Lily"));
        QCOMPARE(a.finishReason, Message::MaxTokens);
        QCOMPARE(int(a.steps.size()), 24);
        QCOMPARE(a.tokens.size(), size_t(24));
        QCOMPARE(a.stats.generatedTokens, 24);
        QVERIFY(textChanges.count() >= 2);  // streamed, then finished
        // Stored: both messages, with tokens and the per-token records.
        QVERIFY(f.chat->conversationId() != 0);
        QCOMPARE(f.chat->title(), QStringLiteral("Once upon a time"));
        const auto stored = f.store.messages(f.chat->conversationId());
        QCOMPARE(stored.size(), 2);
        QCOMPARE(stored[0].content, QStringLiteral("Once upon a time"));
        QCOMPARE(stored[1].content, a.text);
        QCOMPARE(stored[1].tokens.size(), 24);
        auto records = decodeStepRecords(std::span(reinterpret_cast<const uint8_t*>(stored[1].tokenRecords.constData()),
                                                   size_t(stored[1].tokenRecords.size())));
        QVERIFY(records);
        QCOMPARE(records->size(), size_t(24));
        QCOMPARE((*records)[0].sample.id, 432);  // ","
    }

    void regenerateReusesThePrompt() {
        Fixture f;
        QVERIFY(loadAndWait(*f.engine, bundledModel()));
        QVERIFY(f.answer([&] { return f.chat->send("Once upon a time"); }));
        const QString first = f.chat->messages()->at(1).text;
        QVERIFY(f.chat->canRegenerate());
        QVERIFY(f.answer([&] { return f.chat->regenerate(); }));
        QCOMPARE(f.chat->messages()->count(), 2);
        QCOMPARE(f.chat->messages()->at(1).text, first);  // greedy: the same answer
        // The prompt's 5 tokens were in the cache: only the last is run again.
        QCOMPARE(f.chat->cacheNote(), QStringLiteral("Reused 4 cached tokens from the KV cache; prefilled 1 new."));
        QCOMPARE(f.store.messages(f.chat->conversationId()).size(), 2);
    }

    void editTruncatesAndPrefillsOnlyTheNewPart() {
        Fixture f;
        QVERIFY(loadAndWait(*f.engine, bundledModel()));
        QVERIFY(f.answer([&] { return f.chat->send("Once upon a time"); }));
        QVERIFY(f.answer([&] { return f.chat->send(" The end."); }));
        QCOMPARE(f.chat->messages()->count(), 4);
        // A follow-up turn reuses everything before it.
        const int contextBefore = int(f.chat->messages()->at(0).tokens.size() + f.chat->messages()->at(1).tokens.size());
        QVERIFY(f.chat->cacheNote().startsWith(QString("Reused %1 cached tokens").arg(contextBefore - 1)) ||
                f.chat->cacheNote().startsWith(QString("Reused %1 cached tokens").arg(contextBefore)));
        // Edit the second question: messages after it go, the cache is truncated at it.
        QVERIFY(f.answer([&] { return f.chat->editAndResend(2, " Then a dog came."); }));
        QCOMPARE(f.chat->messages()->count(), 4);
        QCOMPARE(f.chat->messages()->at(2).text, QStringLiteral(" Then a dog came."));
        // Reused: at least everything before the edited message (more if the new text starts like the old).
        const QRegularExpression note("^Reused (\\d+) cached tokens from the KV cache; prefilled (\\d+) new\\.$");
        const auto match = note.match(f.chat->cacheNote());
        QVERIFY2(match.hasMatch(), qPrintable(f.chat->cacheNote()));
        QVERIFY(match.captured(1).toInt() >= contextBefore);
        const int contextAfter = int(f.chat->messages()->at(0).tokens.size() + f.chat->messages()->at(1).tokens.size() +
                                     f.chat->messages()->at(2).tokens.size());
        QCOMPARE(match.captured(1).toInt() + match.captured(2).toInt(), contextAfter);
        const auto stored = f.store.messages(f.chat->conversationId());
        QCOMPARE(stored.size(), 4);
        QCOMPARE(stored[2].content, QStringLiteral(" Then a dog came."));
    }

    void chatTemplateShapesThePrompt() {
        Fixture f;
        QVERIFY(loadAndWait(*f.engine, bundledModel()));
        f.chat->setMode(ChatController::Mode::Chat);
        f.chat->setTemplateChoice("llama2");
        f.chat->setSystemPrompt("Be kind.");
        QCOMPARE(f.chat->effectiveTemplate(), QStringLiteral("llama2"));
        QVERIFY(f.answer([&] { return f.chat->send("Hi"); }));
        const auto& tok = *f.engine->model()->tokenizer;
        const auto expected = tok.encode("<s>[INST] <<SYS>>\nBe kind.\n<</SYS>>\n\nHi [/INST]", false, true);
        QCOMPARE(f.chat->messages()->at(0).tokens, expected);
        QCOMPARE(expected.front(), tok.bosId());
        // The answer did not end with EOS (24-token budget): its context tokens end with " </s>".
        const auto& answerTokens = f.chat->messages()->at(1).tokens;
        if (f.chat->messages()->at(1).finishReason == Message::MaxTokens) QCOMPARE(answerTokens.back(), tok.eosId());
        const auto conv = f.store.conversation(f.chat->conversationId());
        QVERIFY(conv);
        QCOMPARE(conv->mode, QStringLiteral("chat"));
        QCOMPARE(conv->templateName, QStringLiteral("llama2"));
        QCOMPARE(conv->systemPrompt, QStringLiteral("Be kind."));
    }

    // Today's families can be picked by hand (the picker listed only the older five, and a choice
    // outside the list was ignored): Phi-3's turn on stories260K, tokenized with its markers as text.
    void everyTemplateFamilyCanBePicked() {
        Fixture f;
        QCOMPARE(f.chat->templateNames(), (QStringList{"auto", "completion", "llama2", "mistral", "chatml", "zephyr", "llama3", "gemma", "phi3"}));
        QVERIFY(loadAndWait(*f.engine, bundledModel()));
        f.chat->setMode(ChatController::Mode::Chat);
        QCOMPARE(f.chat->effectiveTemplate(), QStringLiteral("llama2"));  // no template, no turn markers in the vocabulary
        for (const char* name : {"llama3", "gemma", "phi3"}) {
            f.chat->setTemplateChoice(QString::fromLatin1(name));
            QCOMPARE(f.chat->templateChoice(), QString::fromLatin1(name));
            QCOMPARE(f.chat->effectiveTemplate(), QString::fromLatin1(name));
        }
        QVERIFY(f.answer([&] { return f.chat->send("Hi"); }));
        const auto& tok = *f.engine->model()->tokenizer;
        QCOMPARE(f.chat->messages()->at(0).tokens, tok.encode("<|user|>\nHi<|end|>\n<|assistant|>\n", true, true));
        QCOMPARE(f.store.conversation(f.chat->conversationId())->templateName, QStringLiteral("phi3"));
    }

    void stopKeepsThePartialAnswer() {
        Fixture f;
        QVERIFY(loadAndWait(*f.engine, bundledModel()));
        f.sampling->setMaxTokens(1900);
        SamplerParams sampled;
        sampled.temperature = 1.0f;
        sampled.seed = 5;
        f.chat->setSamplerOverride(sampled);
        QSignalSpy done(f.chat.get(), &ChatController::answerFinished);
        StepGate gate(*f.engine, 3);  // stopped mid-answer, however fast the machine
        QVERIFY(f.chat->send("Once upon a time"));
        QVERIFY(f.chat->generating());
        QVERIFY(gate.waitHeld());
        f.chat->stop();
        QVERIFY(done.wait(10000));
        const ChatMessage& a = f.chat->messages()->at(1);
        QCOMPARE(a.finishReason, Message::Cancelled);
        QVERIFY(!a.text.isEmpty());
        QVERIFY(!f.chat->generating());
        QCOMPARE(f.store.messages(f.chat->conversationId()).size(), 2);
    }

    void reopenedConversationContinuesFromTheCache() {
        Fixture f;
        QVERIFY(loadAndWait(*f.engine, bundledModel()));
        QVERIFY(f.answer([&] { return f.chat->send("Once upon a time"); }));
        const qint64 id = f.chat->conversationId();
        f.chat->newConversation();
        QCOMPARE(f.chat->messages()->count(), 0);
        QVERIFY(f.chat->openConversation(id));
        QCOMPARE(f.chat->messages()->count(), 2);
        QCOMPARE(f.chat->messages()->at(0).tokens, (std::vector<int32_t>{1, 403, 407, 261, 378}));
        QCOMPARE(f.chat->messages()->at(1).steps.size(), size_t(24));
        QVERIFY(f.answer([&] { return f.chat->send(" Lily smiled."); }));
        QVERIFY2(f.chat->cacheNote().startsWith("Reused "), qPrintable(f.chat->cacheNote()));
        QCOMPARE(f.store.messages(id).size(), 4);
    }

    // The versions of an answer are stored with it: a reopened conversation shows the one that was
    // shown, and the others are there with their texts and per-token records.
    void regeneratedVersionsSurviveReopening() {
        Fixture f;
        ChatMessage first, second;
        answerTwice(f, first, second);
        if (QTest::currentTestFailed()) return;
        const qint64 id = f.chat->conversationId();
        auto stored = f.store.messages(id);
        QCOMPARE(stored.size(), 2);
        QCOMPARE(stored[1].content, second.text);
        QCOMPARE(stored[1].versionIndex, 1);
        QCOMPARE(stored[1].versionCount, 2);
        QCOMPARE(f.store.versions(stored[1].id).size(), 1);
        QCOMPARE(f.store.versions(stored[1].id)[0].content, first.text);

        f.chat->newConversation();
        QVERIFY(f.chat->openConversation(id));
        ChatModel* m = f.chat->messages();
        QCOMPARE(m->count(), 2);
        QCOMPARE(m->at(1).variants.size(), size_t(2));
        QCOMPARE(m->at(1).activeVariant, 1);
        QCOMPARE(m->data(m->index(1), ChatModel::VariantIndexRole).toInt(), 1);
        QCOMPARE(m->data(m->index(1), ChatModel::VariantCountRole).toInt(), 2);
        sameAnswer(m->at(1), second);
        QVERIFY(f.chat->showVariant(1, 0));
        sameAnswer(m->at(1), first);
        stored = f.store.messages(id);  // the store follows the version shown
        QCOMPARE(stored[1].content, first.text);
        QCOMPARE(stored[1].versionIndex, 0);
        QCOMPARE(f.store.versions(stored[1].id)[0].content, second.text);
        QCOMPARE(f.store.versions(stored[1].id)[0].index, 1);

        f.chat->newConversation();
        QVERIFY(f.chat->openConversation(id));
        QCOMPARE(m->at(1).activeVariant, 0);
        sameAnswer(m->at(1), first);
        QVERIFY(f.chat->showVariant(1, 1));
        sameAnswer(m->at(1), second);
        // The next turn continues the version shown, from the cache.
        QVERIFY(f.answer([&] { return f.chat->send(" The end."); }));
        QVERIFY2(f.chat->cacheNote().startsWith("Reused "), qPrintable(f.chat->cacheNote()));
        QCOMPARE(f.store.messages(id).size(), 4);
        QCOMPARE(f.store.messages(id)[1].content, second.text);
    }

    // Switching the version of an answer that later turns followed: those turns stay where they
    // are, and the other version goes on in a new conversation (nothing is deleted).
    void anEarlierAnswersOtherVersionOpensAsABranch() {
        Fixture f;
        ChatMessage first, second;
        answerTwice(f, first, second);
        if (QTest::currentTestFailed()) return;
        QVERIFY(f.answer([&] { return f.chat->send(" The end."); }));
        const qint64 original = f.chat->conversationId();
        const QString thirdTurn = f.chat->messages()->at(3).text;
        QCOMPARE(f.store.messages(original).size(), 4);

        QVERIFY(f.chat->showVariant(1, 0));
        const qint64 branch = f.chat->conversationId();
        QVERIFY(branch != original);
        QCOMPARE(f.chat->title(), QStringLiteral("Once upon a time (version 1)"));
        QCOMPARE(f.chat->storeMessage(), QStringLiteral("Version 1 of that answer continues here, in “Once upon a time (version 1)”; "
                                                        "the turns that followed the other version stay in “Once upon a time”."));
        ChatModel* m = f.chat->messages();
        QCOMPARE(m->count(), 2);
        sameAnswer(m->at(1), first);
        // The original, untouched: version 2 shown, the later turns kept.
        auto kept = f.store.messages(original);
        QCOMPARE(kept.size(), 4);
        QCOMPARE(kept[1].content, second.text);
        QCOMPARE(kept[1].versionIndex, 1);
        QCOMPARE(kept[3].content, thirdTurn);
        // The branch: the turns up to the answer, with both versions, version 1 shown.
        auto branched = f.store.messages(branch);
        QCOMPARE(branched.size(), 2);
        QCOMPARE(branched[0].content, QStringLiteral("Once upon a time"));
        QCOMPARE(branched[1].content, first.text);
        QCOMPARE(branched[1].versionIndex, 0);
        QCOMPARE(f.store.versions(branched[1].id).size(), 1);
        QCOMPARE(f.store.versions(branched[1].id)[0].content, second.text);
        QCOMPARE(f.store.conversations().size(), 2);

        // The branch goes on by itself; the original can be opened as it was.
        QVERIFY(f.answer([&] { return f.chat->send(" Later."); }));
        QCOMPARE(f.store.messages(branch).size(), 4);
        QCOMPARE(f.store.messages(original).size(), 4);
        QVERIFY(f.chat->openConversation(original));
        QCOMPARE(m->count(), 4);
        sameAnswer(m->at(1), second);
        QCOMPARE(m->at(3).text, thirdTurn);
    }

    // Branching from an earlier answer keeps the turns that followed it, as switching its version
    // does: they stay in the stored conversation, and the branch continues in a new one.
    void branchingFromAnEarlierAnswerKeepsTheLaterTurns() {
        Fixture f;
        QVERIFY(loadAndWait(*f.engine, bundledModel()));
        QVERIFY(f.answer("Once upon a time"));
        QVERIFY(f.answer(" The end."));
        const qint64 original = f.chat->conversationId();
        const ChatMessage firstAnswer = f.chat->messages()->at(1);
        const QString thirdTurn = f.chat->messages()->at(3).text;
        QCOMPARE(f.store.messages(original).size(), 4);

        const int k = 4;
        const int alternative = firstAnswer.steps[k].sample.top[1].id;
        QVERIFY(f.answer([&] { return f.chat->branchFrom(1, k, alternative); }));
        const qint64 branch = f.chat->conversationId();
        QVERIFY(branch != original);
        QCOMPARE(f.chat->title(), QStringLiteral("Once upon a time (version 2)"));
        QCOMPARE(f.chat->storeMessage(), QStringLiteral("Version 2 of that answer continues here, in “Once upon a time (version 2)”; "
                                                        "the turns that followed the other version stay in “Once upon a time”."));
        ChatModel* m = f.chat->messages();
        QCOMPARE(m->count(), 2);
        QCOMPARE(m->at(1).steps[size_t(k)].sample.id, alternative);
        // The footer and the panel count the same tokens (the kept ones and the new ones), and the
        // cache note says what the prefill did (it said "reused 0" and "ran only the new one"
        // when the new conversation's whole context was prefilled).
        const AnswerStats& st = m->at(1).stats;
        QCOMPARE(st.generatedTokens, int(m->at(1).steps.size()));
        QCOMPARE(st.keptTokens, k + 1);
        const int reused = st.reusedTokens, prefilled = st.prefilledTokens;
        // "ran only the new one" only when one token was prefilled.
        const QString note = prefilled == 1
                                 ? QStringLiteral("Branched at token %1: the KV cache was truncated there; reused %2 cached tokens and ran only the new one.")
                                       .arg(k + 1).arg(reused)
                                 : QStringLiteral("Branched at token %1: reused %2 cached tokens and prefilled %3.").arg(k + 1).arg(reused).arg(prefilled);
        QCOMPARE(f.chat->cacheNote(), note);
        // The original conversation, untouched in the database: all four turns, one version.
        const auto kept = f.store.messages(original);
        QCOMPARE(kept.size(), 4);
        QCOMPARE(kept[1].content, firstAnswer.text);
        QCOMPARE(kept[1].versionCount, 1);
        QCOMPARE(kept[2].content, QStringLiteral(" The end."));
        QCOMPARE(kept[3].content, thirdTurn);
        // The branch: the question, and the answer with both versions (the branch shown).
        const auto branched = f.store.messages(branch);
        QCOMPARE(branched.size(), 2);
        QCOMPARE(branched[1].content, m->at(1).text);
        QCOMPARE(branched[1].versionIndex, 1);
        QCOMPARE(f.store.versions(branched[1].id).size(), 1);
        QCOMPARE(f.store.versions(branched[1].id)[0].content, firstAnswer.text);
        QCOMPARE(f.store.conversations().size(), 2);
        // Reopened, the original shows all four turns again.
        QVERIFY(f.chat->openConversation(original));
        QCOMPARE(m->count(), 4);
        QCOMPARE(m->at(3).text, thirdTurn);
    }

    // Editing an earlier question keeps what followed it (later answers and their versions) in the
    // stored conversation; the edit continues in a new conversation with the turns before it.
    void editingAnEarlierQuestionKeepsTheLaterTurns() {
        Fixture f;
        ChatMessage first, second;
        answerTwice(f, first, second);
        if (QTest::currentTestFailed()) return;
        QVERIFY(f.answer(" The end."));
        const qint64 original = f.chat->conversationId();
        const QString thirdTurn = f.chat->messages()->at(3).text;

        QVERIFY(f.answer([&] { return f.chat->editAndResend(2, " Then a dog came."); }));
        const qint64 edited = f.chat->conversationId();
        QVERIFY(edited != original);
        QCOMPARE(f.chat->title(), QStringLiteral("Once upon a time (edited)"));
        QCOMPARE(f.chat->storeMessage(), QStringLiteral("The edited question continues here, in “Once upon a time (edited)”; "
                                                        "the turns that followed the original stay in “Once upon a time”."));
        // The original: four turns, the first answer's two versions.
        const auto kept = f.store.messages(original);
        QCOMPARE(kept.size(), 4);
        QCOMPARE(kept[1].versionCount, 2);
        QCOMPARE(f.store.versions(kept[1].id).size(), 1);
        QCOMPARE(kept[2].content, QStringLiteral(" The end."));
        QCOMPARE(kept[3].content, thirdTurn);
        // The edit: the first turn (with both versions), the edited question and its answer.
        const auto copy = f.store.messages(edited);
        QCOMPARE(copy.size(), 4);
        QCOMPARE(copy[1].content, second.text);
        QCOMPARE(copy[1].versionCount, 2);
        QCOMPARE(copy[2].content, QStringLiteral(" Then a dog came."));
        QCOMPARE(copy[3].content, f.chat->messages()->at(3).text);
        QCOMPARE(f.store.conversations().size(), 2);
    }

    void branchedVersionsSurviveReopening() {
        Fixture f;
        QVERIFY(loadAndWait(*f.engine, bundledModel()));
        QVERIFY(f.answer([&] { return f.chat->send("Once upon a time"); }));
        const ChatMessage original = f.chat->messages()->at(1);
        const int k = 4;
        QVERIFY(f.answer([&] { return f.chat->branchFrom(1, k, original.steps[k].sample.top[1].id); }));
        const ChatMessage branched = f.chat->messages()->at(1);
        QCOMPARE(branched.steps[size_t(k)].sample.id, original.steps[k].sample.top[1].id);
        const qint64 id = f.chat->conversationId();

        f.chat->newConversation();
        QVERIFY(f.chat->openConversation(id));
        ChatModel* m = f.chat->messages();
        QCOMPARE(m->at(1).variants.size(), size_t(2));
        QCOMPARE(m->at(1).activeVariant, 1);
        sameAnswer(m->at(1), branched);
        QCOMPARE(m->at(1).stats.branchedAt, k);
        QCOMPARE(m->at(1).steps[size_t(k) + 1].step, k + 1);  // numbered after the kept steps, as streamed
        QVERIFY(f.chat->showVariant(1, 0));
        sameAnswer(m->at(1), original);
        QCOMPARE(m->at(1).stats.branchedAt, -1);  // not a branch

        // Deleting the conversation takes the versions along.
        const qint64 answerId = f.store.messages(id)[1].id;
        QCOMPARE(f.store.versions(answerId).size(), 1);
        QVERIFY(f.chat->deleteConversation(id));
        QVERIFY(f.store.versions(answerId).isEmpty());
    }

    // The Settings' thread count reaches the engine with every answer and the labels follow it:
    // 1 says "1 thread", and 0 ("all cores") is restored rather than meaning "keep".
    void threadCountReachesTheEngineAndItsLabel() {
        Fixture f;
        QVERIFY(loadAndWait(*f.engine, bundledModel()));
        const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
        QSignalSpy labels(f.engine.get(), &EngineController::deviceChanged);
        f.sampling->setThreads(1);
        QVERIFY(f.answer("Once upon a time"));
        QTRY_VERIFY(f.engine->deviceDescription().endsWith(QStringLiteral(", 1 thread")));
        QVERIFY(labels.count() >= 1);
        f.sampling->setThreads(0);
        QVERIFY(f.answer(" The end."));
        QTRY_VERIFY2(f.engine->deviceDescription().endsWith(QStringLiteral(", %1 thread%2").arg(cores).arg(cores == 1 ? "" : "s")),
                     qPrintable(f.engine->deviceDescription()));
    }

    // The mode is an enum in C++ and QML; the store keeps the names it always kept, so a
    // conversation stored by an earlier version ("chat", "completion") opens in its mode, and a
    // change is stored by name.
    void modeIsStoredByName() {
        QCOMPARE(ChatController::modeName(ChatController::Mode::Chat), QStringLiteral("chat"));
        QCOMPARE(ChatController::modeName(ChatController::Mode::Completion), QStringLiteral("completion"));
        QCOMPARE(ChatController::modeFromName(QStringLiteral("completion")), ChatController::Mode::Completion);
        QCOMPARE(ChatController::modeFromName(QStringLiteral("Chat")), ChatController::Mode::Completion);  // names are exact
        Fixture f;
        QVERIFY(loadAndWait(*f.engine, bundledModel()));
        StoredConversation chat, completion;
        chat.title = QStringLiteral("a chat");
        chat.mode = QStringLiteral("chat");
        completion.title = QStringLiteral("a completion");
        completion.mode = QStringLiteral("completion");
        const auto chatId = f.store.createConversation(chat), completionId = f.store.createConversation(completion);
        QVERIFY(chatId && completionId);
        QVERIFY(f.chat->openConversation(*chatId));
        QCOMPARE(f.chat->mode(), ChatController::Mode::Chat);
        QCOMPARE(f.chat->effectiveTemplate(), QStringLiteral("llama2"));
        QVERIFY(f.chat->openConversation(*completionId));
        QCOMPARE(f.chat->mode(), ChatController::Mode::Completion);
        QCOMPARE(f.chat->effectiveTemplate(), QStringLiteral("completion"));
        QSignalSpy changed(f.chat.get(), &ChatController::settingsChanged);
        f.chat->setMode(ChatController::Mode::Chat);
        QCOMPARE(changed.count(), 1);
        QCOMPARE(f.store.conversation(*completionId)->mode, QStringLiteral("chat"));
        f.chat->setMode(ChatController::Mode::Chat);  // no change, no signal
        QCOMPARE(changed.count(), 1);
        // Through the meta-object, as QML sets it.
        QVERIFY(f.chat->setProperty("mode", QVariant::fromValue(ChatController::Mode::Completion)));
        QCOMPARE(f.store.conversation(*completionId)->mode, QStringLiteral("completion"));
    }

    // Ctrl+N: a new conversation keeps the mode, template and system prompt the user set.
    void newConversationKeepsModeAndSystemPrompt() {
        Fixture f;
        QVERIFY(loadAndWait(*f.engine, bundledModel()));
        f.chat->setMode(ChatController::Mode::Chat);
        f.chat->setTemplateChoice(QStringLiteral("chatml"));
        f.chat->setSystemPrompt(QStringLiteral("Answer briefly."));
        QVERIFY(f.answer("Hello"));
        f.chat->newConversation();
        QCOMPARE(f.chat->messages()->count(), 0);
        QCOMPARE(f.chat->mode(), ChatController::Mode::Chat);
        QCOMPARE(f.chat->templateChoice(), QStringLiteral("chatml"));
        QCOMPARE(f.chat->systemPrompt(), QStringLiteral("Answer briefly."));
    }

    void invalidSettingsBlockSending() {
        Fixture f;
        QVERIFY(loadAndWait(*f.engine, bundledModel()));
        f.chat->setSamplerOverride(std::nullopt);
        f.sampling->setTopP(1.5);
        QCOMPARE(f.sampling->validationError(), QStringLiteral("top-p must be in (0, 1], got 1.5"));
        QVERIFY(!f.chat->canSend());
        QVERIFY(!f.chat->send("Once"));
        f.sampling->setTopP(0.9);
        QVERIFY(f.chat->canSend());
    }
};

QTEST_GUILESS_MAIN(TestChatController)
#include "tst_chat_controller.moc"
