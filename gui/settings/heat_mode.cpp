#include "settings/heat_mode.h"

namespace inferscope {

HeatMode heatModeFromName(const QString& name) {
    if (name == QLatin1String("probability")) return HeatMode::Probability;
    if (name == QLatin1String("surprisal")) return HeatMode::Surprisal;
    if (name == QLatin1String("entropy")) return HeatMode::Entropy;
    if (name == QLatin1String("replay")) return HeatMode::Replay;
    if (name == QLatin1String("kvcost")) return HeatMode::KvCost;
    if (name == QLatin1String("fight")) return HeatMode::Fight;
    if (name == QLatin1String("compare")) return HeatMode::Compare;
    if (name == QLatin1String("draft")) return HeatMode::Draft;
    return HeatMode::Off;
}

QString heatModeName(HeatMode mode) {
    switch (mode) {
        case HeatMode::Probability: return QStringLiteral("probability");
        case HeatMode::Surprisal: return QStringLiteral("surprisal");
        case HeatMode::Entropy: return QStringLiteral("entropy");
        case HeatMode::Replay: return QStringLiteral("replay");
        case HeatMode::KvCost: return QStringLiteral("kvcost");
        case HeatMode::Fight: return QStringLiteral("fight");
        case HeatMode::Compare: return QStringLiteral("compare");
        case HeatMode::Draft: return QStringLiteral("draft");
        case HeatMode::Off: break;
    }
    return QStringLiteral("off");
}

}  // namespace inferscope
