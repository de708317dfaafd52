#include "inspection_json.h"

namespace inferscope::cli {

nlohmann::ordered_json lensJson(const LogitLens& lens, const Tokenizer& tokenizer) {
    nlohmann::ordered_json layers = nlohmann::ordered_json::array();
    for (size_t l = 0; l < lens.layers.size(); ++l) {
        const LensLayer& row = lens.layers[l];
        nlohmann::ordered_json top = nlohmann::ordered_json::array();
        for (const LensCandidate& c : row.top)
            top.push_back({{"id", c.id}, {"piece", tokenizer.tokenBytes(c.id)}, {"logit", c.logit}, {"p", c.p}});
        layers.push_back({{"layer", l}, {"residual_norm", row.residualNorm}, {"entropy_bits", row.entropyBits}, {"top", std::move(top)}});
    }
    return {{"first_top1_layer", lens.firstTop1Layer}, {"settled_layer", lens.settledLayer}, {"layers", std::move(layers)}};
}

nlohmann::ordered_json attentionEventJson(const StepRecord& step, const AttentionMap& a, std::span<const int32_t> tokens) {
    nlohmann::ordered_json kvHead = nlohmann::ordered_json::array();
    for (int32_t h = 0; h < a.nHead; ++h) kvHead.push_back(a.kvHeadOf(h));
    nlohmann::ordered_json weights = nlohmann::ordered_json::array();
    for (int32_t l = 0; l < a.nLayer; ++l) {
        nlohmann::ordered_json heads = nlohmann::ordered_json::array();
        for (int32_t h = 0; h < a.nHead; ++h) {
            const auto row = a.row(l, h);
            heads.push_back(nlohmann::ordered_json(std::vector<float>(row.begin(), row.end())));
        }
        weights.push_back(std::move(heads));
    }
    const int32_t position = a.nKeys - 1;
    return {{"event", "attention"},
            {"step", step.step},
            {"position", position},
            {"token", tokens[size_t(position)]},
            {"n_layer", a.nLayer},
            {"n_head", a.nHead},
            {"n_head_kv", a.nHeadKv},
            {"kv_head", std::move(kvHead)},
            {"window", a.window},
            {"tokens", std::vector<int32_t>(tokens.begin(), tokens.begin() + a.nKeys)},
            {"weights", std::move(weights)}};
}

}  // namespace inferscope::cli
