#include "remote/slot_report.h"

#include <QCoreApplication>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLocale>
#include <cmath>
#include <optional>
#include <set>

namespace inferscope {
namespace {

QString tr(const char* text) { return QCoreApplication::translate("ServerSlots", text); }
// "4,096", as the app's units print counts (Qt Core only: the fuzz target links no QML).
QString count(int64_t n) { return QLocale(QLocale::English, QLocale::UnitedStates).toString(qlonglong(n)); }

std::optional<int64_t> wholeNumber(const QJsonValue& v, int64_t max) {
    if (!v.isDouble()) return std::nullopt;
    const double d = v.toDouble();
    if (!std::isfinite(d) || d < 0 || d > double(max) || d != std::floor(d)) return std::nullopt;
    return int64_t(d);
}

// Reads whole numbers from one JSON object; the first one missing or out of range is the reason.
struct Fields {
    const QJsonObject& object;
    QString owner;  // "" for the report itself, else "slot 3"
    QString why;
    int64_t read(const char* key, int64_t max) {
        const auto v = wholeNumber(object.value(QLatin1String(key)), max);
        if (!v && why.isEmpty()) {
            const QString field = owner.isEmpty() ? QStringLiteral("\u201c%1\u201d").arg(QLatin1String(key))
                                                  : QStringLiteral("%1's \u201c%2\u201d").arg(owner, QLatin1String(key));
            why = tr("%1 is missing or not a whole number from 0 to %2").arg(field, count(max));
        }
        return v.value_or(0);
    }
};

std::expected<SlotFigures, QString> readSlot(const QJsonValue& value, int index) {
    const QString owner = tr("slot %1").arg(index);
    if (!value.isObject()) return std::unexpected(tr("%1 is not an object").arg(owner));
    const QJsonObject o = value.toObject();
    Fields f{o, owner, {}};
    SlotFigures s;
    s.id = f.read("id", kMaxCount);
    s.kvTokens = f.read("kv_tokens", kMaxSlotTokens);
    s.kvCapacity = f.read("kv_capacity", kMaxSlotTokens);
    s.kvBytesUsed = f.read("kv_bytes_used", kMaxSlotBytes);
    s.kvBytesReserved = f.read("kv_bytes_reserved", kMaxSlotBytes);
    s.requests = f.read("requests", kMaxCount);
    if (!f.why.isEmpty()) return std::unexpected(f.why);
    const QJsonValue state = o.value(QLatin1String("state"));
    if (state != QJsonValue(QStringLiteral("idle")) && state != QJsonValue(QStringLiteral("generating")))
        return std::unexpected(tr("%1's \u201cstate\u201d is neither \u201cidle\u201d nor \u201cgenerating\u201d").arg(owner));
    s.generating = state.toString() == QLatin1String("generating");
    if (s.kvTokens > s.kvCapacity)
        return std::unexpected(tr("%1 holds %2 tokens in a share of %3").arg(owner, count(s.kvTokens), count(s.kvCapacity)));
    if (s.kvBytesUsed > s.kvBytesReserved)
        return std::unexpected(tr("%1 uses more bytes than it reserves").arg(owner));
    return s;
}

}  // namespace

std::expected<SlotReport, SlotReportError> parseSlotReport(const QByteArray& body) {
    QJsonParseError error{};
    const QJsonDocument doc = QJsonDocument::fromJson(body, &error);
    if (error.error != QJsonParseError::NoError) return std::unexpected(SlotReportError{tr("it is not JSON")});
    if (doc.isArray()) return std::unexpected(SlotReportError{tr("a list of slots, as llama.cpp's server answers"), true});
    if (!doc.isObject()) return std::unexpected(SlotReportError{tr("it is not a JSON object")});
    const QJsonObject o = doc.object();
    const QJsonValue listed = o.value(QLatin1String("slots"));
    if (!listed.isArray()) return std::unexpected(SlotReportError{tr("\u201cslots\u201d is missing or not a list")});
    const QJsonArray list = listed.toArray();
    if (list.size() > kMaxSlots)
        return std::unexpected(SlotReportError{tr("it lists %1 slots, more than the %2 this app shows").arg(count(list.size())).arg(kMaxSlots)});

    SlotReport r;
    std::set<int64_t> ids;
    int64_t capacity = 0, used = 0, reserved = 0;
    for (int i = 0; i < list.size(); ++i) {
        auto slot = readSlot(list[i], i);
        if (!slot) return std::unexpected(SlotReportError{slot.error()});
        if (!ids.insert(slot->id).second) return std::unexpected(SlotReportError{tr("two slots have the id %1").arg(slot->id)});
        capacity += slot->kvCapacity;
        used += slot->kvBytesUsed;
        reserved += slot->kvBytesReserved;
        r.perSlot.push_back(*slot);
    }
    const int64_t n = int64_t(r.perSlot.size());
    Fields f{o, {}, {}};
    r.budgetTokens = f.read("kv_budget_tokens", kMaxSlotTokens * kMaxSlots);
    r.bytesUsed = f.read("kv_bytes_used", kMaxSlotBytes * kMaxSlots);
    r.bytesReserved = f.read("kv_bytes_reserved", kMaxSlotBytes * kMaxSlots);
    r.queue = f.read("queue", kMaxCount);
    r.decoding = f.read("decoding", n);
    r.lastBatch = f.read("last_batch", n);
    r.largestBatch = f.read("largest_batch", n);
    if (o.contains(QLatin1String("prefix_copies")) || o.contains(QLatin1String("prefix_tokens_copied"))) {
        r.prefixCopies = f.read("prefix_copies", kMaxCount);
        r.prefixTokensCopied = f.read("prefix_tokens_copied", kMaxCount);
    }
    if (!f.why.isEmpty()) return std::unexpected(SlotReportError{f.why});
    const QJsonValue rate = o.value(QLatin1String("decode_tokens_per_second"));
    if (!rate.isDouble() || !std::isfinite(rate.toDouble()) || rate.toDouble() < 0 || rate.toDouble() > kMaxTokensPerSecond)
        return std::unexpected(SlotReportError{tr("\u201cdecode_tokens_per_second\u201d is missing or not a number from 0 to %1").arg(count(int64_t(kMaxTokensPerSecond)))});
    r.decodeTokensPerSecond = rate.toDouble();
    if (r.lastBatch > r.largestBatch)
        return std::unexpected(SlotReportError{tr("its last batch (%1) is larger than its largest (%2)").arg(r.lastBatch).arg(r.largestBatch)});
    if (capacity != r.budgetTokens || used != r.bytesUsed || reserved != r.bytesReserved)
        return std::unexpected(SlotReportError{tr("its totals are not the sums of its slots")});
    return r;
}

}  // namespace inferscope
