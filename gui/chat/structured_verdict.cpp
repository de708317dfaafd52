#include "chat/structured_verdict.h"

#include <QCoreApplication>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "chat/chat_message.h"
#include "grammar/structured_check.h"

namespace inferscope {
namespace {

QString tr(const char* text) { return QCoreApplication::translate("StructuredVerdict", text); }

// What it was asked to be, for the sentences: "the schema", "a JSON object", "the grammar".
QString askedFor(StructuredKind kind) {
    return kind == StructuredKind::JsonSchema ? tr("the JSON schema") : kind == StructuredKind::Json ? tr("a JSON object") : tr("the grammar");
}

QVariantMap computeVerdict(const StructuredConstraint& c, const std::string& bytes);

}  // namespace

QVariantMap structuredVerdict(const ChatMessage& m) {
    const StructuredConstraint& c = m.origin.structured;
    if (!c.active() || m.role != Message::Assistant || m.streaming) return {};
    std::string bytes;
    for (const StepRecord& s : m.steps) bytes += s.piece;
    if (m.steps.empty()) bytes = m.text.toStdString();
    // The view asks again each time a delegate is made (scrolling, a version shown again): the
    // verdicts of the last answers are kept, keyed by everything they depend on. GUI thread only.
    static std::unordered_map<std::string, QVariantMap> kept;
    std::string key = std::string(structuredKindName(c.kind)) + '\0' + c.text + '\0' + bytes;
    if (const auto it = kept.find(key); it != kept.end()) return it->second;
    if (kept.size() >= 64) kept.clear();
    return kept[std::move(key)] = computeVerdict(c, bytes);
}

namespace {

QVariantMap computeVerdict(const StructuredConstraint& c, const std::string& bytes) {
    const grammar::StructuredCheck check = grammar::checkStructured(c, bytes);
    QVariantMap v{{"kind", QString::fromLatin1(structuredKindName(c.kind).data())}};
    using Verdict = grammar::StructuredCheck::Verdict;
    switch (check.verdict) {
        case Verdict::Valid:
            v["verdict"] = QStringLiteral("valid");
            v["summary"] = c.kind == StructuredKind::Gbnf ? tr("✓ Matches the grammar it was asked to follow")
                         : c.kind == StructuredKind::Json ? tr("✓ A valid JSON object")
                                                          : tr("✓ Valid JSON matching the schema it was asked to follow");
            if (c.kind != StructuredKind::Gbnf) {
                // The grammar accepted it, so it parses; ordered_json keeps the answer's key order.
                const auto json = nlohmann::ordered_json::parse(bytes, nullptr, false);
                if (!json.is_discarded()) v["formatted"] = QString::fromStdString(json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
            }
            break;
        case Verdict::Refused: {
            // Characters, not bytes, for the person reading: those of the bytes before the refused one.
            const qsizetype character = QString::fromUtf8(bytes.data(), qsizetype(check.offset)).size();
            v["verdict"] = QStringLiteral("refused");
            v["summary"] = tr("✗ Does not match %1: it departs from it at character %2 of %3")
                               .arg(askedFor(c.kind)).arg(character + 1).arg(QString::fromUtf8(bytes).size());
            break;
        }
        case Verdict::Incomplete:
            v["verdict"] = QStringLiteral("incomplete");
            v["summary"] = tr("✗ Incomplete: the answer ends before %1 does").arg(askedFor(c.kind));
            break;
        case Verdict::Unchecked:
            v["verdict"] = QStringLiteral("unchecked");
            v["summary"] = tr("Not checked against %1: %2").arg(askedFor(c.kind), QString::fromStdString(check.error));
            break;
    }
    return v;
}

}  // namespace

}  // namespace inferscope
