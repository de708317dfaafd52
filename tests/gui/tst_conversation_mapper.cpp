// The open conversation's rows to the store's and back (ConversationMapper), and an answer's
// figures as stored (AnswerStats): the JSON keeps the keys stored conversations have always had,
// and what is saved reads back as the same message, versions and steps. No model, no database.
#include <QJsonArray>
#include <QTest>

#include "chat/answer_stats.h"
#include "chat/conversation_mapper.h"

using namespace inferscope;

namespace {

StepRecord step(int32_t i, int32_t id, std::string piece) {
    StepRecord s;
    s.step = i;
    s.position = 10 + i;
    s.sample.id = id;
    s.piece = std::move(piece);
    return s;
}

GenerationSummary summary() {
    GenerationSummary g;
    g.reason = FinishReason::MaxTokens;
    g.prefill = {12, 8, 4, 2000};  // 12 prompt tokens, 8 reused, 4 run in 2 ms
    g.nGenerated = 5;
    g.nDecodePasses = 4;
    g.decodeUs = 40000;
    g.timeToFirstTokenUs = 3500;
    g.kv.bytesUsed = 1112320;
    g.kv.kvComputed = 17;
    g.kv.attentionScores = 150;
    return g;
}

SamplerParams sampler() {
    SamplerParams p;
    p.temperature = 0.7f;
    p.topK = 30;
    p.topP = 0.9f;
    p.minP = 0.1f;
    p.repeatPenalty = 1.1f;
    p.repeatLastN = 32;
    p.seed = 9223372036854775813ull;  // 2^63 + 5: more than a double holds
    return p;
}

QStringList keys(const QJsonObject& o) {
    QStringList k = o.keys();
    k.sort();
    return k;
}

}  // namespace

class TestConversationMapper : public QObject {
    Q_OBJECT
private slots:
    void aFinishedAnswersFiguresAsStored() {
        const AnswerStats s = AnswerStats::fromSummary(summary(), 0, sampler(), QStringLiteral("stories260K"), QStringLiteral("CPU"));
        const QJsonObject j = s.toJson();
        // The keys every stored answer has had since stats were kept (exports print them as they are).
        QCOMPARE(keys(j), (QStringList{"attentionScores", "decodeMs", "decodeTokensPerSecond", "device", "generatedTokens",
                                       "kvBytesUsed", "kvComputed", "minP", "model", "prefillMs", "prefillTokensPerSecond",
                                       "prefilledTokens", "promptTokens", "repeatLastN", "repeatPenalty", "reusedTokens", "seed",
                                       "temperature", "timeToFirstTokenMs", "topK", "topP"}));
        QCOMPARE(j.value("promptTokens").toInt(), 12);
        QCOMPARE(j.value("reusedTokens").toInt(), 8);
        QCOMPARE(j.value("prefilledTokens").toInt(), 4);
        QCOMPARE(j.value("prefillMs").toDouble(), 2.0);
        QCOMPARE(j.value("prefillTokensPerSecond").toDouble(), 2000.0);
        QCOMPARE(j.value("generatedTokens").toInt(), 5);
        QCOMPARE(j.value("decodeTokensPerSecond").toDouble(), 100.0);  // 4 passes in 40 ms
        QCOMPARE(j.value("timeToFirstTokenMs").toDouble(), 3.5);
        QCOMPARE(j.value("kvBytesUsed").toDouble(), 1112320.0);
        QCOMPARE(j.value("seed").toString(), QStringLiteral("9223372036854775813"));
        QCOMPARE(j.value("temperature").toDouble(), double(0.7f));
        const AnswerStats back = AnswerStats::fromJson(j);
        QVERIFY(back == s);
        QVERIFY(back.sampler);
        QCOMPARE(back.sampler->seed, 9223372036854775813ull);
        QCOMPARE(back.branchedAt, -1);
    }

    void aBranchCountsItsKeptSteps() {
        const AnswerStats s = AnswerStats::fromSummary(summary(), 3, sampler(), QString(), QString());
        QCOMPARE(s.generatedTokens, 8);  // 3 kept + 5 new, as the panels count its steps
        QCOMPARE(s.keptTokens, 3);
        QCOMPARE(s.branchedAt, 2);
        const QJsonObject j = s.toJson();
        QCOMPARE(j.value("branchedAt").toInt(), 2);
        QCOMPARE(j.value("keptTokens").toInt(), 3);
        QVERIFY(AnswerStats::fromJson(j) == s);
    }

    void anAnswerStillStreamingHasOnlyItsPrefill() {
        const AnswerStats s = AnswerStats::fromPrefill(summary().prefill);
        QVERIFY(!s.complete);
        QCOMPARE(keys(s.toJson()), (QStringList{"prefillMs", "prefillTokensPerSecond", "prefilledTokens", "promptTokens", "reusedTokens"}));
        QVERIFY(!AnswerStats::fromJson(s.toJson()).complete);
    }

    void olderStoredFiguresReadAsFarAsTheyGo() {
        // An answer stored before the penalty window was kept, and one with no sampler at all.
        QJsonObject old{{"generatedTokens", 1}, {"model", "TinyLlama"}, {"temperature", 0.0}, {"topK", 40},
                        {"topP", 0.95}, {"minP", 0.05}, {"repeatPenalty", 1.0}, {"seed", "7"}};
        AnswerStats s = AnswerStats::fromJson(old);
        QVERIFY(s.complete);
        QCOMPARE(s.model, QStringLiteral("TinyLlama"));
        QVERIFY(s.sampler);
        QCOMPARE(s.sampler->repeatLastN, SamplerParams{}.repeatLastN);
        QCOMPARE(s.sampler->seed, 7ull);
        old.remove("temperature");
        QVERIFY(!AnswerStats::fromJson(old).sampler);  // nothing to replay it with
        QVERIFY(!AnswerStats::fromJson(QJsonObject{}).complete);
    }

    void anAnswerWithVersionsRoundTrips() {
        ChatMessage m;
        m.storeId = 41;
        m.role = Message::Assistant;
        m.finishReason = Message::MaxTokens;
        for (int v = 0; v < 3; ++v) {
            AnswerVariant a;
            a.text = QStringLiteral("version %1").arg(v);
            a.finishReason = v == 2 ? Message::EndOfGeneration : Message::MaxTokens;
            a.stats = AnswerStats::fromSummary(summary(), v, sampler(), QStringLiteral("m"), QStringLiteral("d"));
            a.tokens = {100 + v, 200 + v};
            a.steps = {step(0, 100 + v, "ver"), step(1, 200 + v, "sion")};
            // Each version keeps what made it: versions 0 and 2 a local model, version 1 a server.
            a.origin.backend = v == 1 ? AnswerBackend::Remote : AnswerBackend::Local;
            a.origin.modelName = "model-" + std::to_string(v);
            if (v == 1) a.origin.serverUrl = "http://127.0.0.1:8080";
            else a.origin.modelFile = "/models/m" + std::to_string(v) + ".gguf", a.origin.vocabularyHash = 0xabc0u + uint64_t(v);
            a.origin.tokens = {{100 + v, {"ver", {}}}, {200 + v, {"sion", {}}}, {2, {{}, "</s>"}}};
            m.variants.push_back(a);
        }
        m.activeVariant = 1;  // the shown one is mirrored in the message's own fields
        const AnswerVariant& shown = m.variants[1];
        m.text = shown.text;
        m.finishReason = shown.finishReason;
        m.stats = shown.stats;
        m.tokens = shown.tokens;
        m.steps = shown.steps;
        m.origin = shown.origin;

        const StoredRow row = ConversationMapper::toStored(m, 7, 3);
        QCOMPARE(row.message.conversationId, 7);
        QCOMPARE(row.message.position, 3);
        QCOMPARE(row.message.role, QStringLiteral("assistant"));  // the store keeps the names
        QCOMPARE(row.message.content, QStringLiteral("version 1"));
        QCOMPARE(row.message.versionIndex, 1);
        QCOMPARE(row.message.tokens, (QVector<qint32>{101, 201}));
        QCOMPARE(row.otherVersions.size(), 2);
        QCOMPARE(row.otherVersions[0].index, 0);
        QCOMPARE(row.otherVersions[1].index, 2);
        QCOMPARE(row.otherVersions[1].finishReason, QStringLiteral("eos"));

        // Read back as the store gives it (its id, the count of versions, the others in any order).
        StoredMessage stored = row.message;
        stored.id = 41;
        stored.versionCount = 3;
        const QList<StoredVersion> others{row.otherVersions[1], row.otherVersions[0]};
        const ChatMessage back = ConversationMapper::fromStored(stored, others, true);
        QCOMPARE(back.storeId, 41);
        QCOMPARE(back.text, m.text);
        QCOMPARE(back.activeVariant, 1);
        QCOMPARE(back.variants.size(), size_t(3));
        for (size_t v = 0; v < 3; ++v) {
            QCOMPARE(back.variants[v].text, m.variants[v].text);
            QCOMPARE(back.variants[v].finishReason, m.variants[v].finishReason);
            QVERIFY(back.variants[v].stats == m.variants[v].stats);
            QCOMPARE(back.variants[v].tokens, m.variants[v].tokens);
            QCOMPARE(back.variants[v].steps.size(), size_t(2));
            QCOMPARE(back.variants[v].steps[1].sample.id, m.variants[v].steps[1].sample.id);
            QCOMPARE(back.variants[v].steps[1].piece, std::string("sion"));
            QVERIFY(back.variants[v].origin == m.variants[v].origin);
        }
        QVERIFY(back.origin == m.origin);
        QVERIFY(back.origin.remote());
        // Another model is loaded: the tokens are not its, and are made again from the text.
        const ChatMessage otherModel = ConversationMapper::fromStored(stored, others, false);
        QVERIFY(otherModel.tokens.empty());
        QVERIFY(otherModel.variants[0].tokens.empty());
        QCOMPARE(otherModel.steps.size(), size_t(2));  // the records stay: they are what the panels show
    }

    void aQuestionHasNoVersions() {
        ChatMessage q;
        q.role = Message::User;
        q.text = QStringLiteral("Hi");
        q.tokens = {1, 2};
        const StoredRow row = ConversationMapper::toStored(q, 1, 0);
        QVERIFY(row.otherVersions.isEmpty());
        QVERIFY(row.message.tokenRecords.isEmpty());
        StoredMessage s = row.message;
        const ChatMessage back = ConversationMapper::fromStored(s, {}, true);
        QCOMPARE(back.text, QStringLiteral("Hi"));
        QVERIFY(back.variants.empty());
        QCOMPARE(back.tokens, (std::vector<int32_t>{1, 2}));
    }

    void undecodableRecordsReadAsNoSteps() {
        QVERIFY(ConversationMapper::decodeSteps(QByteArray("not step records")).empty());
        QVERIFY(ConversationMapper::encodeSteps({}).isEmpty());
    }
};

QTEST_GUILESS_MAIN(TestConversationMapper)
#include "tst_conversation_mapper.moc"
