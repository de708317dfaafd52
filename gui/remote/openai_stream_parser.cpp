#include "remote/openai_stream_parser.h"

#include <QJsonArray>
#include <QHash>
#include <QJsonDocument>

#include <algorithm>

namespace inferscope {
namespace {

// What a server says is shown in the window: bounded, one line, no control characters.
QString shownText(QString text) {
    text.replace(QLatin1Char('\n'), QLatin1Char(' '));
    text.removeIf([](QChar c) { return c.category() == QChar::Other_Control || c.category() == QChar::Other_Format; });
    if (text.size() > kMaxErrorChars) text = text.left(kMaxErrorChars) + QStringLiteral("…");
    return text;
}

// An error's text as shown; never empty, even when the server's message is nothing but control
// characters (the window would otherwise show an error that says nothing).
QString errorText(const QJsonValue& error) {
    QString shown;
    if (error.isString()) {
        shown = shownText(error.toString());
    } else {
        const QJsonObject o = error.toObject();
        const QString message = o.value(QLatin1String("message")).toString();
        shown = shownText(message.isEmpty() ? QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact)) : message);
    }
    if (shown.trimmed().isEmpty()) return QStringLiteral("The server reported an error without a readable message.");
    return shown;
}

// The kMaxAlternatives most probable alternatives, each byte string once (its highest logprob),
// most probable first (ties: the server's order). Linear in what the server listed.
std::vector<RemoteAlternative> topAlternatives(const QJsonArray& listed) {
    QHash<QByteArray, qsizetype> seen;  // bytes -> index in all
    std::vector<RemoteAlternative> all;
    for (const QJsonValue& v : listed) {
        const QJsonObject alt = v.toObject();
        const QJsonValue lp = alt.value(QLatin1String("logprob"));
        if (!lp.isDouble()) continue;  // a null alternative says nothing
        RemoteAlternative a{tokenBytes(alt), lp.toDouble()};
        if (auto it = seen.constFind(a.bytes); it != seen.cend()) {
            all[size_t(*it)].logprob = std::max(all[size_t(*it)].logprob, a.logprob);
            continue;
        }
        seen.insert(a.bytes, qsizetype(all.size()));
        all.push_back(std::move(a));
    }
    const auto byLogprob = [](const RemoteAlternative& a, const RemoteAlternative& b) { return a.logprob > b.logprob; };
    if (all.size() > kMaxAlternatives) {
        std::stable_sort(all.begin(), all.end(), byLogprob);
        all.resize(kMaxAlternatives);
    } else {
        std::stable_sort(all.begin(), all.end(), byLogprob);
    }
    return all;
}

RemoteToken tokenOf(const QJsonObject& entry) {
    RemoteToken t;
    t.bytes = tokenBytes(entry);
    const QJsonValue lp = entry.value(QLatin1String("logprob"));
    if (lp.isDouble()) t.logprob = lp.toDouble();
    t.top = topAlternatives(entry.value(QLatin1String("top_logprobs")).toArray());
    t.extension = entry.value(QLatin1String("inferscope")).toObject();
    return t;
}

}  // namespace

QByteArray tokenBytes(const QJsonObject& entry) {
    const QJsonValue bytes = entry.value(QLatin1String("bytes"));
    if (bytes.isArray()) {
        QByteArray out;
        for (const QJsonValue& b : bytes.toArray()) {
            const int v = b.toInt(-1);
            if (v < 0 || v > 255) return entry.value(QLatin1String("token")).toString().toUtf8().left(kMaxTokenBytes);
            if (out.size() == kMaxTokenBytes) break;
            out.append(char(v));
        }
        return out;
    }
    return entry.value(QLatin1String("token")).toString().toUtf8().left(kMaxTokenBytes);
}

StreamEvent parseStreamData(const QByteArray& data) {
    StreamEvent e;
    if (data.trimmed() == "[DONE]") {
        e.kind = StreamEvent::Kind::Done;
        return e;
    }
    QJsonParseError err{};
    const QJsonDocument doc = QJsonDocument::fromJson(data, &err);
    if (err.error != QJsonParseError::NoError || !doc.isObject()) {
        e.kind = StreamEvent::Kind::Error;
        e.error = QStringLiteral("The server sent an event that is not JSON: %1").arg(shownText(QString::fromUtf8(data.left(200))));
        return e;
    }
    const QJsonObject o = doc.object();
    if (o.contains(QLatin1String("error"))) {
        e.kind = StreamEvent::Kind::Error;
        e.error = errorText(o.value(QLatin1String("error")));
        return e;
    }
    if (const QJsonValue u = o.value(QLatin1String("usage")); u.isObject())
        e.usage = RemoteUsage{u[QLatin1String("prompt_tokens")].toInt(), u[QLatin1String("completion_tokens")].toInt()};
    const QJsonArray choices = o.value(QLatin1String("choices")).toArray();
    if (choices.isEmpty()) return e;
    const QJsonObject choice = choices.first().toObject();
    // A streamed chunk's "delta", or a whole answer's "message" (a server that ignored stream: true).
    const QJsonObject delta = choice.value(QLatin1String(choice.contains(QLatin1String("delta")) ? "delta" : "message")).toObject();
    e.content = delta.value(QLatin1String("content")).toString();  // null or absent: ""
    if (choice.contains(QLatin1String("text"))) e.content = choice.value(QLatin1String("text")).toString();  // /v1/completions
    e.finishReason = choice.value(QLatin1String("finish_reason")).toString();
    const QJsonObject logprobs = choice.value(QLatin1String("logprobs")).toObject();
    for (const QJsonValue& v : logprobs.value(QLatin1String("content")).toArray()) e.tokens.push_back(tokenOf(v.toObject()));
    return e;
}

std::vector<StreamEvent> OpenAiStreamParser::feed(const QByteArray& bytes) {
    std::vector<StreamEvent> out;
    if (done_) return out;  // nothing counts after [DONE] or an error that ends the stream
    pending_.append(bytes);
    qsizetype start = 0;
    for (qsizetype nl; !done_ && (nl = pending_.indexOf('\n', start)) >= 0; start = nl + 1) {
        QByteArray line = pending_.mid(start, nl - start);
        if (line.endsWith('\r')) line.chop(1);
        takeLine(std::move(line), out);
    }
    pending_.remove(0, start);
    if (!done_ && (pending_.size() > kMaxEventBytes || data_.size() > kMaxEventBytes)) tooLarge(out);
    if (done_) pending_.clear();
    return out;
}

void OpenAiStreamParser::tooLarge(std::vector<StreamEvent>& out) {
    StreamEvent e;
    e.kind = StreamEvent::Kind::Error;
    e.error = QStringLiteral("The server sent an event of more than %1 MiB: not an answer this app reads.").arg(kMaxEventBytes >> 20);
    out.push_back(std::move(e));
    pending_.clear();
    data_.clear();
    hasData_ = false;
    done_ = true;
}

std::vector<StreamEvent> OpenAiStreamParser::finish() {
    std::vector<StreamEvent> out;
    if (!pending_.isEmpty()) {
        QByteArray line = std::exchange(pending_, {});
        if (line.endsWith('\r')) line.chop(1);
        takeLine(std::move(line), out);
    }
    dispatch(out);
    return out;
}

void OpenAiStreamParser::takeLine(QByteArray line, std::vector<StreamEvent>& out) {
    if (line.isEmpty()) {
        dispatch(out);
        return;
    }
    if (line.startsWith(':')) return;  // a comment (keep-alive)
    const qsizetype colon = line.indexOf(':');
    const QByteArray field = colon < 0 ? line : line.left(colon);
    if (field != "data") return;
    QByteArray value = colon < 0 ? QByteArray() : line.mid(colon + 1);
    if (value.startsWith(' ')) value.remove(0, 1);
    if (hasData_) data_.append('\n');
    data_.append(value);
    hasData_ = true;
    if (data_.size() > kMaxEventBytes) tooLarge(out);
}

void OpenAiStreamParser::dispatch(std::vector<StreamEvent>& out) {
    if (!hasData_) return;
    const QByteArray data = std::exchange(data_, {});
    hasData_ = false;
    if (done_) return;  // nothing counts after [DONE]
    StreamEvent e = parseStreamData(data);
    if (e.kind == StreamEvent::Kind::Done) done_ = true;
    out.push_back(std::move(e));
}

std::optional<QStringList> parseModelList(const QByteArray& body) {
    const QJsonDocument doc = QJsonDocument::fromJson(body);
    if (!doc.isObject() || !doc.object().value(QLatin1String("data")).isArray()) return std::nullopt;
    QStringList ids;
    for (const QJsonValue& v : doc.object().value(QLatin1String("data")).toArray()) {
        const QString id = v.toObject().value(QLatin1String("id")).toString();
        if (!id.isEmpty()) ids << id;
    }
    return ids;
}

QString errorMessageOf(const QByteArray& body) {
    const QJsonDocument doc = QJsonDocument::fromJson(body);
    if (!doc.isObject() || !doc.object().contains(QLatin1String("error"))) return {};
    return errorText(doc.object().value(QLatin1String("error")));
}

}  // namespace inferscope
