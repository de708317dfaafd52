#pragma once
// The heat map's modes, the setting AppSettings keeps and ChatModel tints the answers by
// (chat/token_heatmap.h builds the tints). Here, below both, so the settings need no chat code.

#include <QString>

namespace inferscope {

enum class HeatMode { Off, Probability, Surprisal, Entropy, Replay, KvCost, Fight, Compare, Draft };
// "off", "probability", "surprisal", "entropy", "replay", "kvcost" (KL per token of another KV cache
// type), "fight" (structured output: how little the model wanted the token the grammar let through),
// "compare" (KL per token of a second model, flips marked), "draft" (speculative decoding: each
// token accepted, corrected, a bonus or undrafted)
HeatMode heatModeFromName(const QString& name);
QString heatModeName(HeatMode mode);

}  // namespace inferscope
