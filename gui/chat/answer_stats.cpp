#include "chat/answer_stats.h"

namespace inferscope {

AnswerStats AnswerStats::fromPrefill(const PrefillStats& prefill) {
    AnswerStats s;
    s.promptTokens = prefill.nPrompt;
    s.reusedTokens = prefill.nReused;
    s.prefilledTokens = prefill.nComputed;
    s.prefillMs = double(prefill.us) / 1000.0;
    s.prefillTokensPerSecond = prefill.tokensPerSecond();
    return s;
}

AnswerStats AnswerStats::fromSummary(const GenerationSummary& summary, int keptSteps, const SamplerParams& sampler,
                                     const QString& model, const QString& device) {
    AnswerStats s = fromPrefill(summary.prefill);
    s.complete = true;
    // The answer's tokens are the kept ones and the new ones, as the panels count its steps.
    s.generatedTokens = keptSteps + summary.nGenerated;
    if (keptSteps > 0) {
        s.keptTokens = keptSteps;
        s.branchedAt = keptSteps - 1;
    }
    s.decodeMs = double(summary.decodeUs) / 1000.0;
    s.decodeTokensPerSecond = summary.decodeTokensPerSecond();
    s.timeToFirstTokenMs = double(summary.timeToFirstTokenUs) / 1000.0;
    s.kvBytesUsed = double(summary.kv.bytesUsed);
    s.kvComputed = double(summary.kv.kvComputed);
    s.attentionScores = double(summary.kv.attentionScores);
    s.model = model;
    s.device = device;
    s.sampler = sampler;
    return s;
}

QJsonObject AnswerStats::toJson() const {
    QJsonObject j{{"promptTokens", promptTokens},
                  {"reusedTokens", reusedTokens},
                  {"prefilledTokens", prefilledTokens},
                  {"prefillMs", prefillMs},
                  {"prefillTokensPerSecond", prefillTokensPerSecond}};
    if (complete) {
        j.insert("generatedTokens", generatedTokens);
        j.insert("decodeMs", decodeMs);
        j.insert("decodeTokensPerSecond", decodeTokensPerSecond);
        j.insert("timeToFirstTokenMs", timeToFirstTokenMs);
        j.insert("kvBytesUsed", kvBytesUsed);
        j.insert("kvComputed", kvComputed);
        j.insert("attentionScores", attentionScores);
    }
    // Also for an interrupted answer (not complete): which model wrote it, to continue it with.
    if (!model.isEmpty()) j.insert("model", model);
    if (!device.isEmpty()) j.insert("device", device);
    if (branchedAt >= 0) {
        j.insert("branchedAt", branchedAt);
        j.insert("keptTokens", keptTokens);
    }
    if (sampler) {
        // Floats as the double closest to them, as they always went to JSON.
        j.insert("temperature", double(sampler->temperature));
        j.insert("topK", sampler->topK);
        j.insert("topP", double(sampler->topP));
        j.insert("minP", double(sampler->minP));
        j.insert("repeatPenalty", double(sampler->repeatPenalty));
        j.insert("repeatLastN", sampler->repeatLastN);
        j.insert("seed", QString::number(sampler->seed));  // 64 bits: more than a JSON number holds exactly
    }
    return j;
}

AnswerStats AnswerStats::fromJson(const QJsonObject& j) {
    AnswerStats s;
    s.promptTokens = j.value("promptTokens").toInt();
    s.reusedTokens = j.value("reusedTokens").toInt();
    s.prefilledTokens = j.value("prefilledTokens").toInt();
    s.prefillMs = j.value("prefillMs").toDouble();
    s.prefillTokensPerSecond = j.value("prefillTokensPerSecond").toDouble();
    s.complete = j.contains("generatedTokens");
    s.generatedTokens = j.value("generatedTokens").toInt();
    s.decodeMs = j.value("decodeMs").toDouble();
    s.decodeTokensPerSecond = j.value("decodeTokensPerSecond").toDouble();
    s.timeToFirstTokenMs = j.value("timeToFirstTokenMs").toDouble();
    s.kvBytesUsed = j.value("kvBytesUsed").toDouble();
    s.kvComputed = j.value("kvComputed").toDouble();
    s.attentionScores = j.value("attentionScores").toDouble();
    s.model = j.value("model").toString();
    s.device = j.value("device").toString();
    if (j.contains("branchedAt")) {
        s.branchedAt = j.value("branchedAt").toInt();
        s.keptTokens = j.value("keptTokens").toInt();
    }
    if (j.contains("temperature")) {
        SamplerParams p;
        p.temperature = float(j.value("temperature").toDouble());
        p.topK = j.value("topK").toInt();
        p.topP = float(j.value("topP").toDouble());
        p.minP = float(j.value("minP").toDouble());
        p.repeatPenalty = float(j.value("repeatPenalty").toDouble());
        // Answers stored before the penalty window was recorded ran with the default.
        p.repeatLastN = j.value("repeatLastN").toInt(SamplerParams{}.repeatLastN);
        p.seed = j.value("seed").toString().toULongLong();
        s.sampler = p;
    }
    return s;
}

bool AnswerStats::operator==(const AnswerStats& o) const {
    const auto samplerEq = [](const std::optional<SamplerParams>& a, const std::optional<SamplerParams>& b) {
        if (a.has_value() != b.has_value()) return false;
        if (!a) return true;
        return a->temperature == b->temperature && a->topK == b->topK && a->topP == b->topP && a->minP == b->minP &&
               a->repeatPenalty == b->repeatPenalty && a->repeatLastN == b->repeatLastN && a->seed == b->seed;
    };
    return complete == o.complete && promptTokens == o.promptTokens && reusedTokens == o.reusedTokens &&
           prefilledTokens == o.prefilledTokens && prefillMs == o.prefillMs && prefillTokensPerSecond == o.prefillTokensPerSecond &&
           generatedTokens == o.generatedTokens && keptTokens == o.keptTokens && branchedAt == o.branchedAt &&
           decodeMs == o.decodeMs && decodeTokensPerSecond == o.decodeTokensPerSecond && timeToFirstTokenMs == o.timeToFirstTokenMs &&
           kvBytesUsed == o.kvBytesUsed && kvComputed == o.kvComputed && attentionScores == o.attentionScores &&
           model == o.model && device == o.device && samplerEq(sampler, o.sampler);
}

AnswerOrigin originOfLegacy(const AnswerStats& stats) {
    AnswerOrigin o;
    if (stats.device.isEmpty() && stats.model.isEmpty()) return o;
    static const QString server = QStringLiteral("server ");
    if (stats.device.startsWith(server)) {
        o.backend = AnswerBackend::Remote;
        o.serverUrl = stats.device.mid(server.size()).toStdString();
    } else {
        o.backend = AnswerBackend::Local;
    }
    o.modelName = stats.model.toStdString();
    o.device = stats.device.toStdString();
    return o;
}

}  // namespace inferscope
