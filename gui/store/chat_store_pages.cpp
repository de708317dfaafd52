// Rows read straight from a damaged database file's table leaf pages, bypassing the b-trees: the
// last resort of recovery when a damaged interior page (or page 1) cuts SQLite's way to leaves
// that are still intact. Follows the SQLite file format (sqlite.org/fileformat2.html); the file is
// untrusted, so every offset, length, varint and page number is checked before use.
//
// Rows are recognised by shape: a conversations row has 8 columns, the first NULL (the id is the
// rowid), then 7 texts with two ISO-8601 times; a messages row has 10 columns with a known role
// and a time; a message_versions row has 8 columns, NULL, two integers, two texts and a JSON
// object. Nothing else in the file (schema, FTS5 tables, sqlite_sequence) has any of these shapes.
#include <QFile>
#include <QJsonDocument>
#include <climits>
#include <cstring>

#include "store/chat_store_sql.h"

namespace inferscope::store {
namespace {

quint32 be16(const uchar* p) { return quint32(p[0]) << 8 | p[1]; }
quint32 be32(const uchar* p) { return quint32(p[0]) << 24 | quint32(p[1]) << 16 | quint32(p[2]) << 8 | p[3]; }

// 1 to 9 bytes, big-endian groups of 7 bits; the 9th byte gives all 8.
bool readVarint(const uchar*& p, const uchar* end, quint64* value) {
    quint64 v = 0;
    for (int i = 0; i < 9; ++i) {
        if (p >= end) return false;
        const uchar byte = *p++;
        if (i == 8) {
            *value = (v << 8) | byte;
            return true;
        }
        v = (v << 7) | (byte & 0x7f);
        if (!(byte & 0x80)) break;
    }
    *value = v;
    return true;
}

struct Value {
    enum Kind { Missing, Null, Int, Float, Text, Blob } kind = Missing;  // Missing: past a broken overflow chain
    qint64 integer = 0;
    QByteArray bytes;
};

// A record: header of serial types, then the values. Values past the bytes available (the rest
// of the payload was unreadable) come back as Missing.
QList<Value> parseRecord(const QByteArray& payload) {
    const auto* begin = reinterpret_cast<const uchar*>(payload.constData());
    const uchar* end = begin + payload.size();
    const uchar* p = begin;
    quint64 headerSize = 0;
    if (!readVarint(p, end, &headerSize) || headerSize > quint64(payload.size()) || headerSize < quint64(p - begin))
        return {};
    const uchar* headerEnd = begin + headerSize;
    const uchar* body = headerEnd;
    QList<Value> values;
    while (p < headerEnd && values.size() < 64) {
        quint64 type = 0;
        if (!readVarint(p, headerEnd, &type) || type == 10 || type == 11) return {};
        static constexpr int kIntBytes[] = {0, 1, 2, 3, 4, 6, 8, 8, 0, 0};
        const quint64 length = type >= 12 ? (type - 12) / 2 : quint64(kIntBytes[type]);
        Value v;
        if (length > quint64(end - body)) {
            values.append(v);  // Missing
            body = end;
            continue;
        }
        if (type == 0) {
            v.kind = Value::Null;
        } else if (type <= 6) {
            v.kind = Value::Int;
            qint64 n = (body[0] & 0x80) ? -1 : 0;  // sign-extended big-endian
            for (quint64 i = 0; i < length; ++i) n = qint64(quint64(n) << 8 | body[i]);
            v.integer = n;
        } else if (type == 8 || type == 9) {
            v.kind = Value::Int;
            v.integer = type == 9 ? 1 : 0;
        } else if (type == 7) {
            v.kind = Value::Float;
        } else {
            v.kind = type % 2 ? Value::Text : Value::Blob;
            v.bytes = QByteArray(reinterpret_cast<const char*>(body), qsizetype(length));
        }
        body += length;
        values.append(v);
    }
    return values;
}

class LeafReader {
public:
    LeafReader(const uchar* file, qint64 size) : file_(file), size_(size) {
        // The header's page size if page 1 is readable enough to give one, else SQLite's default.
        if (size_ >= 100 && memcmp(file_, "SQLite format 3", 16) == 0) {
            const quint32 raw = be16(file_ + 16);
            const int reserved = file_[20];
            const int candidate = raw == 1 ? 65536 : int(raw);
            if (candidate >= 512 && candidate <= 65536 && (candidate & (candidate - 1)) == 0 && reserved < candidate - 480) {
                pageSize_ = candidate;
                usable_ = candidate - reserved;
            }
        }
        pages_ = size_ / pageSize_;
    }

    // Calls onRow(rowid, values) for every cell of every table leaf page.
    template <class RowFn>
    void scan(RowFn&& onRow) const {
        for (qint64 number = 1; number <= pages_; ++number) {
            const uchar* page = file_ + (number - 1) * pageSize_;
            const int header = number == 1 ? 100 : 0;
            if (page[header] != 0x0d) continue;  // not a table leaf
            const quint32 cells = be16(page + header + 3);
            const quint32 pointers = quint32(header) + 8;
            if (pointers + 2 * cells > quint32(usable_)) continue;
            for (quint32 c = 0; c < cells; ++c) {
                const quint32 offset = be16(page + pointers + 2 * c);
                if (offset < pointers + 2 * cells || offset >= quint32(usable_)) continue;
                readCell(page, offset, onRow);
            }
        }
    }

private:
    template <class RowFn>
    void readCell(const uchar* page, quint32 offset, RowFn&& onRow) const {
        const uchar* p = page + offset;
        const uchar* end = page + usable_;
        quint64 payloadSize = 0, rowid = 0;
        if (!readVarint(p, end, &payloadSize) || !readVarint(p, end, &rowid)) return;
        if (payloadSize > quint64(size_)) return;
        // How much of the payload lies on this page (the file format's rule for table leaves).
        const quint64 u = quint64(usable_), x = u - 35, m = ((u - 12) * 32 / 255) - 23;
        quint64 local = payloadSize;
        if (payloadSize > x) {
            const quint64 k = m + ((payloadSize - m) % (u - 4));
            local = k <= x ? k : m;
        }
        if (local > quint64(end - p) || (local < payloadSize && local + 4 > quint64(end - p))) return;
        QByteArray payload(reinterpret_cast<const char*>(p), qsizetype(local));
        if (local < payloadSize) {  // the rest is on a chain of overflow pages
            quint32 next = be32(p + local);
            for (qint64 hops = 0; next != 0 && quint64(payload.size()) < payloadSize; ++hops) {
                if (qint64(next) > pages_ || hops > pages_) break;  // broken chain: keep what was read
                const uchar* overflow = file_ + qint64(next - 1) * pageSize_;
                const quint64 take = std::min<quint64>(u - 4, payloadSize - quint64(payload.size()));
                payload.append(reinterpret_cast<const char*>(overflow + 4), qsizetype(take));
                next = be32(overflow);
            }
        }
        onRow(qint64(rowid), parseRecord(payload));
    }

    const uchar* file_;
    qint64 size_;
    int pageSize_ = 4096;
    int usable_ = 4096;
    qint64 pages_ = 0;
};

bool isText(const Value& v) { return v.kind == Value::Text; }
QString text(const Value& v) { return QString::fromUtf8(v.bytes); }
bool isTime(const Value& v) { return isText(v) && fromStoredTime(text(v)).isValid(); }

void takeConversation(RawRows& rows, qint64 rowid, const QList<Value>& v) {
    if (v.size() != 8 || v[0].kind != Value::Null || !isTime(v[2]) || !isTime(v[3])) return;
    for (int i = 1; i < 8; ++i)
        if (!isText(v[i])) return;
    StoredConversation c;
    c.id = rowid;
    c.title = text(v[1]);
    c.createdAt = fromStoredTime(text(v[2]));
    c.updatedAt = fromStoredTime(text(v[3]));
    c.modelName = text(v[4]);
    c.systemPrompt = text(v[5]);
    c.mode = text(v[6]);
    c.templateName = text(v[7]);
    const auto it = rows.conversations.constFind(rowid);  // a stale copy of a changed row: keep the newest
    if (it == rows.conversations.constEnd() || it->updatedAt < c.updatedAt) rows.conversations.insert(rowid, c);
}

void takeMessage(RawRows& rows, qint64 rowid, const QList<Value>& v) {
    // Ten columns, eleven since schema 3 (origin; rows written before keep ten).
    if ((v.size() != 10 && v.size() != 11) || v[0].kind != Value::Null || v[1].kind != Value::Int || v[2].kind != Value::Int ||
        !isText(v[3]) || !isText(v[4]) || !isTime(v[5]) || !isText(v[6]) || !isText(v[7]))
        return;
    const QString role = text(v[3]);
    if (role != QLatin1String("user") && role != QLatin1String("assistant") && role != QLatin1String("system")) return;
    RawMessage m;
    m.message.id = rowid;
    m.message.conversationId = v[1].integer;
    m.message.position = int(v[2].integer);
    m.message.role = role;
    m.message.content = text(v[4]);
    m.message.createdAt = fromStoredTime(text(v[5]));
    m.message.finishReason = text(v[6]);
    m.message.stats = statsFromText(text(v[7]));
    m.blobsComplete = v[8].kind != Value::Missing && v[9].kind != Value::Missing;
    if (v[8].kind == Value::Blob) m.message.tokens = unpackTokens(v[8].bytes).value_or(QVector<qint32>{});
    if (v[9].kind == Value::Blob) m.message.tokenRecords = v[9].bytes;
    if (v.size() == 11 && isText(v[10])) m.message.origin = statsFromText(text(v[10]));
    if (!rows.messages.contains(rowid) || (m.blobsComplete && !rows.messages[rowid].blobsComplete))
        rows.messages.insert(rowid, m);
}

void takeVersion(RawRows& rows, qint64 rowid, const QList<Value>& v) {
    if ((v.size() != 8 && v.size() != 9) || v[0].kind != Value::Null || v[1].kind != Value::Int || v[2].kind != Value::Int ||
        v[2].integer < 0 || v[2].integer > INT_MAX || !isText(v[3]) || !isText(v[4]) || !isText(v[5]) ||
        !QJsonDocument::fromJson(v[5].bytes).isObject())
        return;
    RawVersion r;
    r.messageId = v[1].integer;
    r.version.index = int(v[2].integer);
    r.version.content = text(v[3]);
    r.version.finishReason = text(v[4]);
    r.version.stats = statsFromText(text(v[5]));
    r.blobsComplete = v[6].kind != Value::Missing && v[7].kind != Value::Missing;
    if (v[6].kind == Value::Blob) r.version.tokens = unpackTokens(v[6].bytes).value_or(QVector<qint32>{});
    if (v[7].kind == Value::Blob) r.version.tokenRecords = v[7].bytes;
    if (v.size() == 9 && isText(v[8])) r.version.origin = statsFromText(text(v[8]));
    if (!rows.versions.contains(rowid) || (r.blobsComplete && !rows.versions[rowid].blobsComplete))
        rows.versions.insert(rowid, r);
}

}  // namespace

RawRows scanLeafPages(const QString& path) {
    RawRows rows;
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly) || file.size() < 512) return rows;
    QByteArray copy;
    const uchar* bytes = file.map(0, file.size());
    if (!bytes) {
        copy = file.readAll();
        bytes = reinterpret_cast<const uchar*>(copy.constData());
    }
    LeafReader(bytes, file.size()).scan([&](qint64 rowid, const QList<Value>& values) {
        takeConversation(rows, rowid, values);
        takeMessage(rows, rowid, values);
        takeVersion(rows, rowid, values);
    });
    return rows;
}

}  // namespace inferscope::store
