#include "remote/remote_vocabulary.h"

#include <QJsonArray>
#include <QJsonObject>
#include <algorithm>
#include <cmath>
#include <limits>

namespace inferscope {
namespace {

// Bytes of an extension candidate: "piece_bytes" (hex, when not whole UTF-8) or "piece".
QByteArray extensionBytes(const QJsonObject& c) {
    const QString hex = c.value(QLatin1String("piece_bytes")).toString();
    if (!hex.isEmpty()) return QByteArray::fromHex(hex.toLatin1());
    return c.value(QLatin1String("piece")).toString().toUtf8();
}

float number(const QJsonValue& v) {
    return v.isDouble() ? float(v.toDouble()) : std::numeric_limits<float>::quiet_NaN();
}

}  // namespace

int32_t RemoteVocabulary::intern(const QByteArray& bytes) {
    if (auto it = ids_.constFind(bytes); it != ids_.cend()) return *it;
    uint32_t h = 2166136261u;  // FNV-1a
    for (char c : bytes) h = (h ^ uint8_t(c)) * 16777619u;
    int32_t id = kFirstId | int32_t(h & (uint32_t(kFirstId) - 1));
    while (bytes_.contains(id)) id = kFirstId | ((id + 1) & (kFirstId - 1));  // a collision: the next free id
    ids_.insert(bytes, id);
    bytes_.insert(id, bytes);
    return id;
}

std::optional<std::string> RemoteVocabulary::bytesOf(int32_t id) const {
    if (auto it = bytes_.constFind(id); it != bytes_.cend()) return it->toStdString();
    return std::nullopt;
}

StepRecord remoteStep(const RemoteToken& token, int32_t step, int32_t position, RemoteVocabulary& vocabulary) {
    StepRecord r;
    r.step = step;
    r.position = position;
    r.piece = token.bytes.toStdString();
    SampleRecord& s = r.sample;
    s.id = vocabulary.intern(token.bytes);
    const double chosenLp = token.logprob.value_or(std::numeric_limits<double>::quiet_NaN());
    s.logit = float(chosenLp);
    s.logSumExp = 0;
    s.pRaw = float(std::exp(chosenLp));
    s.pFinal = s.pRaw;

    // Candidates: the parser's (at most kMaxAlternatives, each byte string once, most probable
    // first), and the pick when the server did not list it.
    std::vector<RemoteAlternative> alts = token.top;
    if (token.logprob && std::none_of(alts.begin(), alts.end(), [&](const RemoteAlternative& b) { return b.bytes == token.bytes; })) {
        alts.push_back({token.bytes, *token.logprob});
        std::stable_sort(alts.begin(), alts.end(), [](const RemoteAlternative& a, const RemoteAlternative& b) { return a.logprob > b.logprob; });
    }

    // The extension's stage probabilities, matched to candidates by bytes.
    QHash<QByteArray, QJsonObject> stagesOf;
    for (const QJsonValue& v : token.extension.value(QLatin1String("top")).toArray())
        stagesOf.insert(extensionBytes(v.toObject()), v.toObject().value(QLatin1String("stages")).toObject());

    double entropy = 0;
    s.rank = 1;
    for (const RemoteAlternative& a : alts) {
        CandidateRecord c;
        c.id = vocabulary.intern(a.bytes);
        c.logit = float(a.logprob);
        const float p = float(std::exp(a.logprob));
        c.p.fill(p);
        if (auto it = stagesOf.constFind(a.bytes); it != stagesOf.cend())
            for (int st = 0; st < kSamplerStageCount; ++st) {
                const QJsonValue v = it->value(QLatin1String(samplerStageName(SamplerStage(st)).data()));
                // A server from before the grammar stage: nothing was masked, the penalty's value stands.
                c.p[size_t(st)] = v.isUndefined() && st > 0 ? c.p[size_t(st) - 1] : number(v);
            }
        if (p > 0) entropy -= double(p) * std::log2(double(p));
        if (a.logprob > chosenLp) ++s.rank;
        s.top.push_back(c);
    }
    s.entropyBits = float(entropy);  // over the listed alternatives only (a lower bound)
    s.survivors.fill(int32_t(alts.size()));

    const QJsonObject& ext = token.extension;
    if (!ext.isEmpty()) {
        if (ext.value(QLatin1String("p_final")).isDouble()) s.pFinal = number(ext.value(QLatin1String("p_final")));
        if (ext.value(QLatin1String("rank")).isDouble()) s.rank = ext.value(QLatin1String("rank")).toInt();
        if (ext.value(QLatin1String("entropy_bits")).isDouble()) s.entropyBits = number(ext.value(QLatin1String("entropy_bits")));
        const QJsonObject survivors = ext.value(QLatin1String("survivors")).toObject();
        for (int st = 0; st < kSamplerStageCount; ++st) {
            if (const QJsonValue v = survivors.value(QLatin1String(samplerStageName(SamplerStage(st)).data())); v.isDouble())
                s.survivors[size_t(st)] = v.toInt();
            else if (st > 0 && !survivors.isEmpty())  // a stage the server does not name (an older one): kept all
                s.survivors[size_t(st)] = s.survivors[size_t(st) - 1];
        }
        r.sampleUs = qint64(ext.value(QLatin1String("sample_us")).toDouble());
    }
    return r;
}

StepRecord remoteTextStep(const QByteArray& text, int32_t step, int32_t position, RemoteVocabulary& vocabulary) {
    StepRecord r;
    r.step = step;
    r.position = position;
    r.piece = text.toStdString();
    r.sample.id = vocabulary.intern(text);
    r.sample.logit = r.sample.pRaw = r.sample.pFinal = std::numeric_limits<float>::quiet_NaN();
    return r;
}

}  // namespace inferscope
