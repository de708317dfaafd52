#pragma once
// Shared by the ChatStore tests: realistic step records, messages, a populated store, and raw
// SQLite access beside the store (a second connection, as another program would have).

#include <QFile>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QTest>
#include <vector>

#include "store/chat_store.h"
#include "record/step_record_codec.h"

namespace inferscope::testing {

// A step whose every field differs from its neighbours' and from zero, so a swapped or dropped
// field shows. Candidate 0 is the chosen token; the others are ids 1000 + 10k + c.
inline StepRecord makeStep(int k, const std::string& piece, int nTop = 5) {
    StepRecord r;
    r.step = k;
    r.position = 17 + k;
    r.piece = piece;
    r.endOfGeneration = false;
    r.forwardUs = 1000 + k;
    r.sampleUs = 30 + k;
    SampleRecord& s = r.sample;
    s.id = 300 + k;
    s.logit = 12.5f - 0.25f * float(k);
    s.pRaw = 0.5f + 0.01f * float(k);
    s.pFinal = 0.75f;
    s.rank = 1 + (k % 3);
    s.entropyBits = 1.25f + 0.125f * float(k);
    s.logSumExp = 13.0f;
    s.survivors = {32000, 32000, 32000, 40, 7, 5, 5};  // raw, penalty, grammar (no grammar: all), top-k, ...
    for (int c = 0; c < nTop; ++c) {
        CandidateRecord cand;
        cand.id = c == 0 ? s.id : 1000 + 10 * k + c;
        cand.logit = s.logit - float(c);
        cand.p = {0.5f / float(c + 1), 0.5f / float(c + 1), 0.5f / float(c + 1), 0.6f / float(c + 1), 0.7f / float(c + 1),
                  c < 3 ? 0.8f / float(c + 1) : 0.0f, c < 3 ? 0.9f / float(c + 1) : 0.0f};
        s.top.push_back(cand);
    }
    return r;
}

inline QByteArray encode(const std::vector<StepRecord>& steps) {
    const std::vector<uint8_t> bytes = encodeStepRecords(steps);
    return QByteArray(reinterpret_cast<const char*>(bytes.data()), qsizetype(bytes.size()));
}

inline StoredMessage userMessage(qint64 conversationId, const QString& text) {
    StoredMessage m;
    m.conversationId = conversationId;
    m.role = QStringLiteral("user");
    m.content = text;
    m.tokens = {1, 518, 25580, 29962};
    return m;
}

// An assistant answer of nSteps tokens with their records (top nTop each).
inline StoredMessage assistantMessage(qint64 conversationId, const QString& text, int nSteps = 3, int nTop = 5) {
    StoredMessage m;
    m.conversationId = conversationId;
    m.role = QStringLiteral("assistant");
    m.content = text;
    m.finishReason = QStringLiteral("eos");
    m.stats = QJsonObject{{QStringLiteral("decode_tps"), 41.5}, {QStringLiteral("n_generated"), nSteps}};
    std::vector<StepRecord> steps;
    for (int k = 0; k < nSteps; ++k) {
        steps.push_back(makeStep(k, " w" + std::to_string(k), nTop));
        m.tokens.append(steps.back().sample.id);
    }
    m.tokenRecords = encode(steps);
    return m;
}

// nConversations conversations of nPairs user/assistant exchanges each, with distinct text.
inline QList<qint64> populate(ChatStore& store, int nConversations, int nPairs, int nSteps = 3, int nTop = 5) {
    QList<qint64> ids;
    for (int c = 0; c < nConversations; ++c) {
        StoredConversation conversation;
        conversation.title = QStringLiteral("Conversation %1").arg(c);
        conversation.modelName = QStringLiteral("stories260K");
        const std::optional<qint64> id = store.createConversation(conversation);
        if (!id) return {};
        ids.append(*id);
        for (int p = 0; p < nPairs; ++p) {
            store.appendMessage(userMessage(*id, QStringLiteral("question %1 of conversation %2").arg(p).arg(c)));
            store.appendMessage(assistantMessage(*id, QStringLiteral("answer %1 of conversation %2").arg(p).arg(c),
                                                 nSteps, nTop));
        }
    }
    return ids;
}

// A plain QSQLITE connection to file (another program's view); removed on destruction.
class RawConnection {
public:
    explicit RawConnection(const QString& file, const QString& name = QStringLiteral("raw")) : name_(name) {
        QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), name_);
        db.setDatabaseName(file);
        db.setConnectOptions(QStringLiteral("QSQLITE_BUSY_TIMEOUT=100"));
        opened_ = db.open();
    }
    ~RawConnection() {
        {
            QSqlDatabase db = QSqlDatabase::database(name_, false);
            db.close();
        }
        QSqlDatabase::removeDatabase(name_);
    }
    bool opened() const { return opened_; }
    QSqlDatabase db() const { return QSqlDatabase::database(name_, false); }
    // Runs one statement; returns the first column of the first row (invalid if none or error).
    QVariant exec(const QString& sql, QString* error = nullptr) const {
        QSqlQuery query(db());
        if (!query.exec(sql)) {
            if (error) *error = query.lastError().text();
            return {};
        }
        return query.next() ? query.value(0) : QVariant();
    }

private:
    QString name_;
    bool opened_ = false;
};

inline QByteArray readAll(const QString& path) {
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

inline bool writeAll(const QString& path, const QByteArray& bytes) {
    QFile file(path);
    return file.open(QIODevice::WriteOnly) && file.write(bytes) == bytes.size();
}

}  // namespace inferscope::testing
