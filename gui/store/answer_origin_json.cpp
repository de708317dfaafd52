#include "store/answer_origin_json.h"

#include <cmath>

#include <QByteArray>
#include <algorithm>

namespace inferscope {
namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }
std::string str(const QJsonValue& v) { return v.toString().toStdString(); }

}  // namespace

QJsonObject originToJson(const AnswerOrigin& o) {
    if (!o.known()) return {};
    QJsonObject json{{"backend", QString::fromLatin1(answerBackendName(o.backend).data())},
                     {"model_name", qs(o.modelName)},
                     {"device", qs(o.device)},
                     {"timed_by", QString::fromLatin1(o.timedBy().data(), qsizetype(o.timedBy().size()))}};
    if (!o.modelFile.empty()) json["model_file"] = qs(o.modelFile);
    if (o.vocabularyHash != 0) json["vocabulary_hash"] = QString::number(o.vocabularyHash, 16).rightJustified(16, QLatin1Char('0'));
    if (o.vocabularySize > 0) json["vocabulary_size"] = o.vocabularySize;
    if (!o.serverUrl.empty()) json["server_url"] = qs(o.serverUrl);
    if (o.remote()) json["stages_reported"] = o.stagesReported;
    if (!o.kvType.empty()) {
        json["kv_type"] = qs(o.kvType);
        json["kv_bytes_per_token"] = double(o.kvBytesPerToken);
        json["kv_bytes_reserved"] = double(o.kvBytesReserved);
    }
    if (o.contextLength > 0) json["context_length"] = o.contextLength;
    if (o.cost.known())
        json["pass_cost"] = QJsonObject{{"weight_bytes_per_token", o.cost.weightBytesPerToken},
                                        {"kv_bytes_per_token", o.cost.kvBytesPerToken},
                                        {"macs_per_token", o.cost.macsPerToken},
                                        {"lm_head_macs", o.cost.lmHeadMacs},
                                        {"attention_flops_per_key", o.cost.attentionFlopsPerKey}};
    if (o.structured.active()) {
        QJsonObject structured{{"kind", QString::fromLatin1(structuredKindName(o.structured.kind).data())}};
        if (!o.structured.text.empty()) structured["text"] = qs(o.structured.text);
        json["structured_output"] = structured;
    }
    QJsonObject tokens, labels;
    for (const auto& [id, t] : o.tokens) {
        const QString key = QString::number(id);
        if (!t.bytes.empty() || t.label.empty())
            tokens[key] = QString::fromLatin1(QByteArray::fromStdString(t.bytes).toBase64());
        else
            labels[key] = qs(t.label);
    }
    if (!tokens.isEmpty()) json["tokens"] = tokens;
    if (!labels.isEmpty()) json["labels"] = labels;
    return json;
}

AnswerOrigin originFromJson(const QJsonObject& json) {
    AnswerOrigin o;
    o.backend = answerBackendFromName(str(json.value("backend")));
    if (!o.known()) return o;
    o.modelFile = str(json.value("model_file"));
    o.modelName = str(json.value("model_name"));
    bool ok = false;
    const quint64 hash = json.value("vocabulary_hash").toString().toULongLong(&ok, 16);
    o.vocabularyHash = ok ? hash : 0;
    o.vocabularySize = std::max(0, json.value("vocabulary_size").toInt());
    o.serverUrl = str(json.value("server_url"));
    o.stagesReported = json.value("stages_reported").toBool();
    o.device = str(json.value("device"));
    o.kvType = str(json.value("kv_type"));
    o.kvBytesPerToken = uint64_t(std::max(0.0, json.value("kv_bytes_per_token").toDouble()));
    o.kvBytesReserved = uint64_t(std::max(0.0, json.value("kv_bytes_reserved").toDouble()));
    o.contextLength = std::max(0, json.value("context_length").toInt());
    // A figure that is not a finite number >= 0 leaves the whole cost unknown (a file edited by hand).
    const QJsonObject cost = json.value("pass_cost").toObject();
    PassCostFigures f;
    bool costOk = !cost.isEmpty();
    auto figure = [&](const char* key, double& out) {
        const double v = cost.value(QLatin1String(key)).toDouble(-1);
        costOk = costOk && std::isfinite(v) && v >= 0;
        out = v;
    };
    figure("weight_bytes_per_token", f.weightBytesPerToken);
    figure("kv_bytes_per_token", f.kvBytesPerToken);
    figure("macs_per_token", f.macsPerToken);
    figure("lm_head_macs", f.lmHeadMacs);
    figure("attention_flops_per_key", f.attentionFlopsPerKey);
    if (costOk) o.cost = f;
    const QJsonObject structured = json.value("structured_output").toObject();
    o.structured.kind = structuredKindFromName(str(structured.value("kind")));
    if (o.structured.active()) o.structured.text = str(structured.value("text"));
    const QJsonObject tokens = json.value("tokens").toObject();
    for (auto it = tokens.begin(); it != tokens.end(); ++it) {
        const int id = it.key().toInt(&ok);
        if (!ok) continue;
        const auto decoded = QByteArray::fromBase64Encoding(it.value().toString().toLatin1(), QByteArray::AbortOnBase64DecodingErrors);
        if (decoded) o.tokens[id].bytes = decoded.decoded.toStdString();
    }
    const QJsonObject labels = json.value("labels").toObject();
    for (auto it = labels.begin(); it != labels.end(); ++it) {
        const int id = it.key().toInt(&ok);
        if (ok) o.tokens[id] = {std::string(), str(it.value())};
    }
    return o;
}

}  // namespace inferscope
