#include "record/step_record_json.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>

namespace inferscope {
namespace {

// The shortest decimal that reads back as the same float, as a double (0.1f -> 0.1).
nlohmann::ordered_json jsonFloat(float value) {
    if (!std::isfinite(value)) return nullptr;
    char buffer[32];
    const auto end = std::to_chars(buffer, buffer + sizeof buffer, value).ptr;
    return std::strtod(std::string(buffer, end).c_str(), nullptr);
}

// Whole, shortest-form UTF-8 (no surrogates, nothing past U+10FFFF).
bool isUtf8(std::string_view s) {
    for (size_t i = 0; i < s.size();) {
        const auto c = uint8_t(s[i]);
        const size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
        if (len == 0 || i + len > s.size()) return false;
        uint32_t cp = c & (0x7fu >> len);
        for (size_t k = 1; k < len; ++k) {
            if ((uint8_t(s[i + k]) & 0xc0) != 0x80) return false;
            cp = cp << 6 | (uint8_t(s[i + k]) & 0x3f);
        }
        constexpr uint32_t kMinCodePoint[] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < kMinCodePoint[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
        i += len;
    }
    return true;
}

void putPiece(nlohmann::ordered_json& object, const std::string& piece) {
    object["piece"] = piece;
    if (isUtf8(piece)) return;
    std::string hex;
    for (unsigned char c : piece) hex += fmt::format("{}{:02x}", hex.empty() ? "" : " ", c);
    object["piece_bytes"] = hex;
}

nlohmann::ordered_json perStage(auto value) {
    nlohmann::ordered_json o = nlohmann::ordered_json::object();
    for (int i = 0; i < kSamplerStageCount; ++i) o[std::string(samplerStageName(SamplerStage(i)))] = value(size_t(i));
    return o;
}

}  // namespace

nlohmann::ordered_json stepRecordJson(const StepRecord& step, const StepPieceLookup& pieceOf) {
    const SampleRecord& s = step.sample;
    nlohmann::ordered_json o = nlohmann::ordered_json::object();
    o["step"] = step.step;
    o["position"] = step.position;
    o["id"] = s.id;
    putPiece(o, step.piece);
    o["p"] = jsonFloat(s.pRaw);
    o["p_final"] = jsonFloat(s.pFinal);
    o["logit"] = jsonFloat(s.logit);
    o["rank"] = s.rank;
    o["entropy_bits"] = jsonFloat(s.entropyBits);
    o["log_sum_exp"] = jsonFloat(s.logSumExp);
    o["survivors"] = perStage([&](size_t i) { return s.survivors[i]; });
    if (s.constrained) {  // the grammar stage's own figures
        nlohmann::ordered_json g = nlohmann::ordered_json::object();
        g["mass_removed"] = jsonFloat(s.grammarMassRemoved);
        g["p_before"] = jsonFloat(s.pBeforeGrammar);
        g["forced"] = s.forced();
        o["grammar"] = std::move(g);
    }
    o["forward_us"] = step.forwardUs;
    o["sample_us"] = step.sampleUs;
    o["end_of_generation"] = step.endOfGeneration;
    nlohmann::ordered_json top = nlohmann::ordered_json::array();
    for (const CandidateRecord& c : s.top) {
        nlohmann::ordered_json candidate = nlohmann::ordered_json::object();
        candidate["id"] = c.id;
        if (pieceOf)
            if (auto piece = pieceOf(c.id)) putPiece(candidate, *piece);
        candidate["logit"] = jsonFloat(c.logit);
        candidate["p"] = jsonFloat(c.p[size_t(SamplerStage::Raw)]);
        candidate["stages"] = perStage([&](size_t i) { return jsonFloat(c.p[i]); });
        top.push_back(std::move(candidate));
    }
    o["top"] = std::move(top);
    return o;
}

nlohmann::ordered_json draftRecordJson(const DraftRecord& d, const StepPieceLookup& pieceOf) {
    auto withPiece = [&pieceOf](nlohmann::ordered_json o, int32_t id) {
        if (pieceOf)
            if (auto piece = pieceOf(id)) putPiece(o, *piece);
        return o;
    };
    const bool drafted = d.fate == DraftRecord::Fate::Accepted || d.fate == DraftRecord::Fate::Corrected;
    nlohmann::ordered_json j{{"fate", draftFateName(d.fate)}, {"drafted", drafted},
                             {"accepted", d.fate == DraftRecord::Fate::Accepted}, {"corrected", d.fate == DraftRecord::Fate::Corrected}};
    if (drafted) {
        j["draft_id"] = d.draftedId;
        if (pieceOf)
            if (auto piece = pieceOf(d.draftedId)) j["draft_piece"] = *piece;
        j.update({{"q", jsonFloat(d.q)}, {"p", jsonFloat(d.p)}, {"accept_probability", jsonFloat(d.acceptProbability)},
                  {"draft_index", d.draftIndex}, {"draft_length", d.draftLength}});
        auto candidates = nlohmann::ordered_json::array();
        for (const DraftCandidate& c : d.candidates)
            candidates.push_back(withPiece({{"id", c.id}, {"p", jsonFloat(c.p)}, {"q", jsonFloat(c.q)}}, c.id));
        j["candidates"] = std::move(candidates);
        if (d.fate == DraftRecord::Fate::Corrected) {
            auto residual = nlohmann::ordered_json::array();
            for (const DraftResidual& e : d.residual) residual.push_back(withPiece({{"id", e.id}, {"r", jsonFloat(e.r)}}, e.id));
            j["residual"] = std::move(residual);
            j["residual_mass"] = jsonFloat(d.residualMass);
        }
    }
    if (d.verifyRows > 0)
        j.update({{"draft_ms", double(d.draftUs) / 1000.0}, {"verify_ms", double(d.verifyUs) / 1000.0}, {"verify_rows", d.verifyRows}});
    return j;
}

}  // namespace inferscope
