#include "settings/sampling_settings.h"

#include <QRandomGenerator>
#include <QSettings>

namespace inferscope {
namespace {


struct Preset {
    const char* name;
    SamplerParams params;
};

// Built-in presets: what each strategy of the inference story looks like.
SamplerParams makeParams(float t, int k, float p, float minP) {
    SamplerParams s;
    s.temperature = t;
    s.topK = k;
    s.topP = p;
    s.minP = minP;
    return s;
}
const Preset kBuiltIn[] = {
    {"Greedy", makeParams(0.0f, 40, 0.95f, 0.05f)},
    {"Balanced", SamplerParams{}},
    {"Precise", makeParams(0.3f, 20, 0.9f, 0.05f)},
    {"Creative", makeParams(1.1f, 100, 0.98f, 0.02f)},
};

// The fields a preset and the saved settings share, in the current QSettings group.
void writeParams(QSettings& s, const SamplerParams& p, int seed, int maxTokens) {
    s.setValue("temperature", p.temperature);
    s.setValue("topK", p.topK);
    s.setValue("topP", p.topP);
    s.setValue("minP", p.minP);
    s.setValue("repeatPenalty", p.repeatPenalty);
    s.setValue("repeatLastN", p.repeatLastN);
    s.setValue("topN", p.topN);
    s.setValue("seed", seed);
    s.setValue("maxTokens", maxTokens);
}

void readParams(const QSettings& s, SamplerParams& p, int& seed, int& maxTokens) {
    p.temperature = s.value("temperature", p.temperature).toFloat();
    p.topK = s.value("topK", p.topK).toInt();
    p.topP = s.value("topP", p.topP).toFloat();
    p.minP = s.value("minP", p.minP).toFloat();
    p.repeatPenalty = s.value("repeatPenalty", p.repeatPenalty).toFloat();
    p.repeatLastN = s.value("repeatLastN", p.repeatLastN).toInt();
    p.topN = s.value("topN", p.topN).toInt();
    seed = s.value("seed", seed).toInt();
    maxTokens = s.value("maxTokens", maxTokens).toInt();
}

}  // namespace

SamplingSettings::SamplingSettings(QObject* parent) : QObject(parent) { load(); }

void SamplingSettings::load() {
    QSettings s;
    s.beginGroup("sampling");
    readParams(s, p_, seed_, maxTokens_);
    threads_ = s.value("threads", threads_).toInt();
    currentPreset_ = s.value("preset", QStringLiteral("Balanced")).toString();
}

void SamplingSettings::touch() {
    QSettings s;
    s.beginGroup("sampling");
    writeParams(s, p_, seed_, maxTokens_);
    s.setValue("threads", threads_);
    s.setValue("preset", currentPreset_);
    emit changed();
}

#define SETTER(name, field, type)            \
    void SamplingSettings::name(type v) {    \
        if (field == v) return;              \
        field = v;                           \
        currentPreset_.clear();              \
        touch();                             \
    }
SETTER(setTopK, p_.topK, int)
SETTER(setRepeatLastN, p_.repeatLastN, int)
SETTER(setSeed, seed_, int)
SETTER(setMaxTokens, maxTokens_, int)
SETTER(setThreads, threads_, int)
SETTER(setTopN, p_.topN, int)
#undef SETTER

#define FLOAT_SETTER(name, field)                    \
    void SamplingSettings::name(double v) {          \
        if (field == float(v)) return;               \
        field = float(v);                            \
        currentPreset_.clear();                      \
        touch();                                     \
    }
FLOAT_SETTER(setTemperature, p_.temperature)
FLOAT_SETTER(setTopP, p_.topP)
FLOAT_SETTER(setMinP, p_.minP)
FLOAT_SETTER(setRepeatPenalty, p_.repeatPenalty)
#undef FLOAT_SETTER

QString SamplingSettings::validationError() const {
    if (auto ok = validateSamplerParams(p_); !ok) return QString::fromStdString(ok.error().message);
    if (maxTokens_ < 1) return tr("max tokens must be at least 1, got %1").arg(maxTokens_);
    if (threads_ < 0 || threads_ > 1024) return tr("threads must be between 1 and 1024 (0 = all cores), got %1").arg(threads_);
    if (seed_ < -1) return tr("seed must be -1 (random) or a number >= 0, got %1").arg(seed_);
    return {};
}

SamplerParams SamplingSettings::params() const {
    SamplerParams p = p_;
    p.seed = seed_ >= 0 ? uint64_t(seed_) : QRandomGenerator::global()->generate64();
    return p;
}

QStringList SamplingSettings::presetNames() const {
    QStringList names;
    for (const Preset& p : kBuiltIn) names << QString::fromLatin1(p.name);
    QSettings s;
    s.beginGroup("presets");
    for (const QString& g : s.childGroups())
        if (!names.contains(g)) names << g;
    return names;
}

bool SamplingSettings::applyPreset(const QString& name) {
    for (const Preset& p : kBuiltIn)
        if (name == QLatin1String(p.name)) {
            p_ = p.params;
            currentPreset_ = name;
            touch();
            return true;
        }
    QSettings s;
    s.beginGroup("presets");
    if (!s.childGroups().contains(name)) return false;
    s.beginGroup(name);
    p_ = SamplerParams{};
    seed_ = -1;
    readParams(s, p_, seed_, maxTokens_);
    currentPreset_ = name;
    touch();
    return true;
}

bool SamplingSettings::savePreset(const QString& name) {
    const QString n = name.trimmed();
    if (n.isEmpty() || n.contains('/') || n.contains('\\')) return false;
    for (const Preset& p : kBuiltIn)
        if (n == QLatin1String(p.name)) return false;
    QSettings s;
    s.beginGroup("presets");
    s.beginGroup(n);
    writeParams(s, p_, seed_, maxTokens_);
    s.endGroup();
    currentPreset_ = n;
    touch();
    emit presetsChanged();
    return true;
}

bool SamplingSettings::deletePreset(const QString& name) {
    for (const Preset& p : kBuiltIn)
        if (name == QLatin1String(p.name)) return false;
    QSettings s;
    s.beginGroup("presets");
    if (!s.childGroups().contains(name)) return false;
    s.remove(name);
    if (currentPreset_ == name) currentPreset_.clear();
    emit presetsChanged();
    emit changed();
    return true;
}

void SamplingSettings::resetDefaults() {
    p_ = SamplerParams{};
    seed_ = -1;
    maxTokens_ = 512;
    threads_ = 0;
    currentPreset_ = QStringLiteral("Balanced");
    touch();
}

}  // namespace inferscope
