// ChatStore exports: the exact Markdown of a small conversation; the JSON parsed back, with the
// per-token records decoded from real StepRecords; damaged records; atomic files.
#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTemporaryDir>
#include <QTest>

#include "tst_chat_store_helpers.h"

using namespace inferscope;
using namespace inferscope::testing;

namespace {

StoredConversation llamas() {
    StoredConversation c;
    c.id = 7;
    c.title = QStringLiteral("Llamas");
    c.modelName = QStringLiteral("stories260K");
    c.mode = QStringLiteral("chat");
    c.templateName = QStringLiteral("chatml");
    c.createdAt = QDateTime(QDate(2026, 11, 5), QTime(12, 34, 56, 789), Qt::UTC);
    c.updatedAt = QDateTime(QDate(2026, 11, 5), QTime(12, 40, 0, 5), Qt::UTC);
    c.systemPrompt = QStringLiteral("Be brief.\nUse plain words.");
    return c;
}

// Three steps: "Hello", " wor", and half of a UTF-8 character; step 1's second candidate is the
// id step 0 chose (so the export can name it), the others were never chosen.
std::vector<StepRecord> steps() {
    std::vector<StepRecord> s{makeStep(0, "Hello"), makeStep(1, " wor"), makeStep(2, "\xE2\x80")};
    s[1].sample.top[1].id = s[0].sample.id;
    s[2].endOfGeneration = true;
    return s;
}

QList<StoredMessage> exchange() {
    StoredMessage user = userMessage(7, QStringLiteral("What do llamas eat?"));
    user.id = 1;
    user.createdAt = QDateTime(QDate(2026, 11, 5), QTime(12, 35, 0, 0), Qt::UTC);
    StoredMessage answer = assistantMessage(7, QStringLiteral("Grass and hay.\n"));
    answer.id = 2;
    answer.position = 1;
    answer.createdAt = QDateTime(QDate(2026, 11, 5), QTime(12, 35, 1, 250), Qt::UTC);
    answer.stats = QJsonObject{{QStringLiteral("ttft_ms"), 120},
                               {QStringLiteral("decode_tps"), 41.5},
                               {QStringLiteral("sampler"), QJsonObject{{QStringLiteral("temperature"), 0.8},
                                                                        {QStringLiteral("top_k"), 40}}}};
    answer.tokenRecords = encode(steps());
    answer.tokens = {300, 301, 302};
    return {user, answer};
}

float f(const QJsonValue& v) { return float(v.toDouble()); }

}  // namespace

class TestChatStoreExport : public QObject {
    Q_OBJECT
private slots:
    void markdownIsExact();
    void markdownOfAnEmptyConversation();
    void jsonHasEveryFieldAndDecodedRecords();
    void jsonReportsDamagedRecords();
    void exportWritesFilesAtomically();
    void exportFailuresAreReported();
    void markdownNamesTheVersionShown();
    void jsonListsTheOtherVersions();
    void exportIncludesStoredVersions();
    void markdownPrintsWholeNumbersWhole();

private:
    QTemporaryDir dir_;
};

void TestChatStoreExport::markdownIsExact() {
    const QString expected = QStringLiteral(
        "# Llamas\n"
        "\n"
        "Model: stories260K · Mode: chat (template chatml) · Created: 2026-11-05 12:34 UTC\n"
        "\n"
        "> **System prompt:** Be brief.\n"
        "> Use plain words.\n"
        "\n"
        "## User\n"
        "\n"
        "What do llamas eat?\n"
        "\n"
        "## Assistant\n"
        "\n"
        "Grass and hay.\n"
        "\n"
        "`finish: eos · decode_tps: 41.5 · sampler.temperature: 0.8 · sampler.top_k: 40 · ttft_ms: 120`\n");
    QCOMPARE(ChatStore::toMarkdown(llamas(), exchange()), expected);
}

void TestChatStoreExport::markdownOfAnEmptyConversation() {
    StoredConversation c;
    QCOMPARE(ChatStore::toMarkdown(c, {}), QStringLiteral("# Untitled conversation\n"));
}

void TestChatStoreExport::jsonHasEveryFieldAndDecodedRecords() {
    const std::vector<StepRecord> original = steps();
    const QByteArray bytes = ChatStore::toJson(llamas(), exchange());
    QJsonParseError error;
    const QJsonObject root = QJsonDocument::fromJson(bytes, &error).object();
    QCOMPARE(error.error, QJsonParseError::NoError);
    QCOMPARE(root[QStringLiteral("format")].toString(), QStringLiteral("inferscope.conversation"));
    QCOMPARE(root[QStringLiteral("format_version")].toInt(), 1);

    const QJsonObject c = root[QStringLiteral("conversation")].toObject();
    QCOMPARE(c[QStringLiteral("id")].toInt(), 7);
    QCOMPARE(c[QStringLiteral("title")].toString(), QStringLiteral("Llamas"));
    QCOMPARE(c[QStringLiteral("created_at")].toString(), QStringLiteral("2026-11-05T12:34:56.789Z"));
    QCOMPARE(c[QStringLiteral("updated_at")].toString(), QStringLiteral("2026-11-05T12:40:00.005Z"));
    QCOMPARE(c[QStringLiteral("model_name")].toString(), QStringLiteral("stories260K"));
    QCOMPARE(c[QStringLiteral("system_prompt")].toString(), QStringLiteral("Be brief.\nUse plain words."));
    QCOMPARE(c[QStringLiteral("mode")].toString(), QStringLiteral("chat"));
    QCOMPARE(c[QStringLiteral("template_name")].toString(), QStringLiteral("chatml"));
    QCOMPARE(c[QStringLiteral("message_count")].toInt(), 2);

    const QJsonArray messages = root[QStringLiteral("messages")].toArray();
    QCOMPARE(messages.size(), 2);
    const QJsonObject user = messages[0].toObject();
    QCOMPARE(user[QStringLiteral("role")].toString(), QStringLiteral("user"));
    QCOMPARE(user[QStringLiteral("position")].toInt(), 0);
    QCOMPARE(user[QStringLiteral("tokens")].toArray(), (QJsonArray{1, 518, 25580, 29962}));
    QVERIFY(!user.contains(QStringLiteral("token_records")));
    QVERIFY(!user.contains(QStringLiteral("token_records_error")));

    const QJsonObject answer = messages[1].toObject();
    QCOMPARE(answer[QStringLiteral("id")].toInt(), 2);
    QCOMPARE(answer[QStringLiteral("content")].toString(), QStringLiteral("Grass and hay.\n"));
    QCOMPARE(answer[QStringLiteral("created_at")].toString(), QStringLiteral("2026-11-05T12:35:01.250Z"));
    QCOMPARE(answer[QStringLiteral("finish_reason")].toString(), QStringLiteral("eos"));
    QCOMPARE(answer[QStringLiteral("stats")].toObject()[QStringLiteral("decode_tps")].toDouble(), 41.5);
    QCOMPARE(answer[QStringLiteral("tokens")].toArray(), (QJsonArray{300, 301, 302}));
    const QJsonArray records = answer[QStringLiteral("token_records")].toArray();
    QCOMPARE(records.size(), 3);
    for (int k = 0; k < 3; ++k) {
        const StepRecord& want = original[size_t(k)];
        const QJsonObject r = records[k].toObject();
        QCOMPARE(r[QStringLiteral("step")].toInt(), want.step);
        QCOMPARE(r[QStringLiteral("position")].toInt(), want.position);
        QCOMPARE(r[QStringLiteral("id")].toInt(), want.sample.id);
        QCOMPARE(f(r[QStringLiteral("p")]), want.sample.pRaw);  // floats come back exactly
        QCOMPARE(f(r[QStringLiteral("p_final")]), want.sample.pFinal);
        QCOMPARE(f(r[QStringLiteral("logit")]), want.sample.logit);
        QCOMPARE(r[QStringLiteral("rank")].toInt(), want.sample.rank);
        QCOMPARE(f(r[QStringLiteral("entropy_bits")]), want.sample.entropyBits);
        QCOMPARE(f(r[QStringLiteral("log_sum_exp")]), want.sample.logSumExp);
        QCOMPARE(r[QStringLiteral("survivors")].toObject()[QStringLiteral("top-k")].toInt(), 40);
        QCOMPARE(r[QStringLiteral("forward_us")].toInteger(), want.forwardUs);
        QCOMPARE(r[QStringLiteral("sample_us")].toInteger(), want.sampleUs);
        QCOMPARE(r[QStringLiteral("end_of_generation")].toBool(), k == 2);
        const QJsonArray top = r[QStringLiteral("top")].toArray();
        QCOMPARE(top.size(), qsizetype(want.sample.top.size()));
        for (qsizetype t = 0; t < top.size(); ++t) {
            const CandidateRecord& cand = want.sample.top[size_t(t)];
            const QJsonObject o = top[t].toObject();
            QCOMPARE(o[QStringLiteral("id")].toInt(), cand.id);
            QCOMPARE(f(o[QStringLiteral("logit")]), cand.logit);
            QCOMPARE(f(o[QStringLiteral("p")]), cand.p[0]);
            const QJsonObject stages = o[QStringLiteral("stages")].toObject();
            QCOMPARE(stages.size(), 7);
            const char* names[] = {"raw", "penalty", "grammar", "top-k", "top-p", "min-p", "temperature"};
            for (int s = 0; s < 7; ++s) QCOMPARE(f(stages[QLatin1String(names[s])]), cand.p[size_t(s)]);
        }
    }
    const auto top = [&](int k, int t) { return records[k].toObject()[QStringLiteral("top")].toArray()[t].toObject(); };
    QCOMPARE(records[0].toObject()[QStringLiteral("piece")].toString(), QStringLiteral("Hello"));
    QCOMPARE(top(0, 0)[QStringLiteral("piece")].toString(), QStringLiteral("Hello"));  // the chosen one
    QCOMPARE(top(1, 1)[QStringLiteral("piece")].toString(), QStringLiteral("Hello"));  // chosen at step 0
    QVERIFY(!top(0, 1).contains(QStringLiteral("piece")));  // never chosen: id and logit only
    const QJsonObject partial = records[2].toObject();
    QCOMPARE(partial[QStringLiteral("piece_bytes")].toString(), QStringLiteral("e2 80"));
    QVERIFY(!records[1].toObject().contains(QStringLiteral("piece_bytes")));
    // Short numbers, not float noise (0.75f, not 0.75000000000000000).
    QVERIFY(bytes.contains("\"p_final\":0.75,"));  // compact JSON
}

void TestChatStoreExport::jsonReportsDamagedRecords() {
    QList<StoredMessage> messages = exchange();
    messages[1].tokenRecords = QByteArray("ISR1\xff\xff\xff\x7f garbage", 16);
    StoredMessage truncated = messages[1];
    truncated.tokenRecords = encode(steps()).left(100);
    messages.append(truncated);
    const QJsonArray list = QJsonDocument::fromJson(ChatStore::toJson(llamas(), messages))
                                .object()[QStringLiteral("messages")].toArray();
    QCOMPARE(list.size(), 3);
    for (int i : {1, 2}) {
        const QJsonObject m = list[i].toObject();
        QVERIFY(!m.contains(QStringLiteral("token_records")));
        QVERIFY2(m[QStringLiteral("token_records_error")].toString().startsWith(QStringLiteral("token records:")),
                 qPrintable(m[QStringLiteral("token_records_error")].toString()));
        QCOMPARE(m[QStringLiteral("content")].toString(), QStringLiteral("Grass and hay.\n"));  // the rest is there
    }
}

void TestChatStoreExport::exportWritesFilesAtomically() {
    ChatStore store;
    QVERIFY(store.open(QStringLiteral(":memory:")).ok);
    StoredConversation c = llamas();
    const qint64 id = *store.createConversation(c);
    for (StoredMessage m : exchange()) {
        m.conversationId = id;
        QVERIFY(store.appendMessage(m));
    }
    c = *store.conversation(id);
    const QList<StoredMessage> messages = store.messages(id);

    const QString md = dir_.filePath(QStringLiteral("llamas.md"));
    QVERIFY(writeAll(md, QByteArray(100000, 'x')));  // replaced whole, not overwritten in place
    QVERIFY2(store.exportConversation(id, md, QStringLiteral("markdown")), qPrintable(store.lastError()));
    QCOMPARE(readAll(md), ChatStore::toMarkdown(c, messages).toUtf8());

    const QString json = dir_.filePath(QStringLiteral("llamas.json"));
    QVERIFY2(store.exportConversation(id, json, QStringLiteral("JSON")), qPrintable(store.lastError()));
    QCOMPARE(readAll(json), ChatStore::toJson(c, messages));
    const QJsonObject root = QJsonDocument::fromJson(readAll(json)).object();
    QCOMPARE(root[QStringLiteral("messages")].toArray()[1].toObject()[QStringLiteral("token_records")].toArray().size(), 3);
    QCOMPARE(QDir(dir_.path()).entryList(QDir::Files | QDir::Hidden).size(), 2);  // no temporary files left
}

void TestChatStoreExport::exportFailuresAreReported() {
    ChatStore store;
    QVERIFY(store.open(QStringLiteral(":memory:")).ok);
    const qint64 id = *store.createConversation({});
    const QString nowhere = dir_.filePath(QStringLiteral("missing/folder/out.md"));
    QVERIFY(!store.exportConversation(id, nowhere, QStringLiteral("markdown")));
    QVERIFY(store.lastError().contains(nowhere));
    QVERIFY(!QFile::exists(nowhere));
    QVERIFY(!store.exportConversation(id, dir_.filePath(QStringLiteral("out.csv")), QStringLiteral("csv")));
    QVERIFY(store.lastError().contains(QStringLiteral("csv")));
    QVERIFY(!store.exportConversation(id + 1, dir_.filePath(QStringLiteral("none.md")), QStringLiteral("markdown")));
    QVERIFY(!QFile::exists(dir_.filePath(QStringLiteral("none.md"))));
}

void TestChatStoreExport::markdownNamesTheVersionShown() {
    QList<StoredMessage> messages = exchange();
    messages[1].versionIndex = 1;
    messages[1].versionCount = 3;
    QString expected = ChatStore::toMarkdown(llamas(), exchange());
    expected.replace(QStringLiteral("## Assistant\n"), QStringLiteral("## Assistant (version 2 of 3)\n"));
    QCOMPARE(ChatStore::toMarkdown(llamas(), messages), expected);
    QVERIFY(expected.contains(QStringLiteral("\n## User\n")));  // single versions say nothing
}

void TestChatStoreExport::jsonListsTheOtherVersions() {
    // Version 0 chose " llama" (id 307) where the shown version only had it as a candidate.
    const std::vector<StepRecord> first{makeStep(7, " llama"), makeStep(8, "s")};
    std::vector<StepRecord> shownSteps = steps();
    shownSteps[0].sample.top[3].id = first[0].sample.id;
    QList<StoredMessage> messages = exchange();
    messages[1].tokenRecords = encode(shownSteps);
    messages[1].versionIndex = 1;
    messages[1].versionCount = 3;
    StoredVersion v0;
    v0.index = 0;
    v0.content = QStringLiteral("Leaves.");
    v0.finishReason = QStringLiteral("stop");
    v0.stats = QJsonObject{{QStringLiteral("seed"), QStringLiteral("7")}};
    v0.tokens = {307, 308, 2};
    v0.tokenRecords = encode(first);
    StoredVersion v2 = v0;
    v2.index = 2;
    v2.content = QStringLiteral("Damaged.");
    v2.tokenRecords = encode(first).left(40);
    const QHash<qint64, QList<StoredVersion>> versions{{messages[1].id, {v0, v2}}};

    const QJsonArray list = QJsonDocument::fromJson(ChatStore::toJson(llamas(), messages, versions))
                                .object()[QStringLiteral("messages")].toArray();
    QCOMPARE(list.size(), 2);
    const QJsonObject user = list[0].toObject();
    for (const char* key : {"version_index", "version_count", "versions"}) QVERIFY(!user.contains(QLatin1String(key)));
    const QJsonObject answer = list[1].toObject();
    QCOMPARE(answer[QStringLiteral("content")].toString(), QStringLiteral("Grass and hay.\n"));  // the shown one
    QCOMPARE(answer[QStringLiteral("version_index")].toInt(), 1);
    QCOMPARE(answer[QStringLiteral("version_count")].toInt(), 3);
    const QJsonArray shownRecords = answer[QStringLiteral("token_records")].toArray();
    QCOMPARE(shownRecords[0].toObject()[QStringLiteral("top")].toArray()[3].toObject()[QStringLiteral("piece")].toString(),
             QStringLiteral(" llama"));  // named by the version that chose it
    const QJsonArray others = answer[QStringLiteral("versions")].toArray();
    QCOMPARE(others.size(), 2);
    const QJsonObject o0 = others[0].toObject();
    QCOMPARE(o0[QStringLiteral("index")].toInt(), 0);
    QCOMPARE(o0[QStringLiteral("content")].toString(), QStringLiteral("Leaves."));
    QCOMPARE(o0[QStringLiteral("finish_reason")].toString(), QStringLiteral("stop"));
    QCOMPARE(o0[QStringLiteral("stats")].toObject()[QStringLiteral("seed")].toString(), QStringLiteral("7"));
    QCOMPARE(o0[QStringLiteral("tokens")].toArray(), (QJsonArray{307, 308, 2}));
    const QJsonArray records = o0[QStringLiteral("token_records")].toArray();
    QCOMPARE(records.size(), 2);
    for (int k = 0; k < 2; ++k) {
        const QJsonObject r = records[k].toObject();
        QCOMPARE(r[QStringLiteral("id")].toInt(), first[size_t(k)].sample.id);
        QCOMPARE(r[QStringLiteral("piece")].toString(), QString::fromStdString(first[size_t(k)].piece));
        QCOMPARE(f(r[QStringLiteral("p")]), first[size_t(k)].sample.pRaw);
        QCOMPARE(r[QStringLiteral("top")].toArray().size(), 5);
    }
    const QJsonObject o2 = others[1].toObject();
    QCOMPARE(o2[QStringLiteral("index")].toInt(), 2);
    QVERIFY(!o2.contains(QStringLiteral("token_records")));
    QVERIFY(o2[QStringLiteral("token_records_error")].toString().startsWith(QStringLiteral("token records:")));
}

void TestChatStoreExport::exportIncludesStoredVersions() {
    ChatStore store;
    QVERIFY(store.open(QStringLiteral(":memory:")).ok);
    const qint64 id = *store.createConversation(llamas());
    QList<StoredMessage> messages = exchange();
    messages[0].conversationId = messages[1].conversationId = id;
    QVERIFY(store.appendMessage(messages[0]));
    messages[1].versionIndex = 0;
    StoredVersion later;
    later.index = 1;
    later.content = QStringLiteral("Hay, mostly.");
    later.tokenRecords = encode({makeStep(0, "Hay")});
    QVERIFY(store.appendMessage(messages[1], {later}));

    const QString md = dir_.filePath(QStringLiteral("versions.md"));
    QVERIFY(store.exportConversation(id, md, QStringLiteral("markdown")));
    QVERIFY(readAll(md).contains("## Assistant (version 1 of 2)\n\nGrass and hay."));
    // The other versions follow the one shown, each with its own heading.
    QVERIFY2(readAll(md).contains("### Version 2 of 2\n\nHay, mostly.\n"), readAll(md).constData());
    const QString json = dir_.filePath(QStringLiteral("versions.json"));
    QVERIFY(store.exportConversation(id, json, QStringLiteral("json")));
    // Compact: token records are most of the file (indented, 854 tokens took 10.9 MB).
    QVERIFY(!readAll(json).contains('\n'));
    const QJsonObject answer = QJsonDocument::fromJson(readAll(json)).object()[QStringLiteral("messages")].toArray()[1].toObject();
    QCOMPARE(answer[QStringLiteral("version_count")].toInt(), 2);
    const QJsonObject other = answer[QStringLiteral("versions")].toArray()[0].toObject();
    QCOMPARE(other[QStringLiteral("content")].toString(), QStringLiteral("Hay, mostly."));
    QCOMPARE(other[QStringLiteral("token_records")].toArray()[0].toObject()[QStringLiteral("piece")].toString(),
             QStringLiteral("Hay"));
}

// Byte counts and token counts are whole numbers: "1112320", not "1.11232e+06".
void TestChatStoreExport::markdownPrintsWholeNumbersWhole() {
    QList<StoredMessage> messages = exchange();
    messages[1].stats = QJsonObject{{QStringLiteral("kvBytesUsed"), 1112320.0},
                                    {QStringLiteral("ratio"), 0.123456789},
                                    {QStringLiteral("rate"), 1234567.891}};
    const QString md = ChatStore::toMarkdown(llamas(), messages);
    QVERIFY2(md.contains(QStringLiteral("`finish: eos · kvBytesUsed: 1112320 · rate: 1234567.9 · ratio: 0.123457`")), qPrintable(md));
}

QTEST_GUILESS_MAIN(TestChatStoreExport)
#include "tst_chat_store_export.moc"
