// The one JSON schema of step records (core/record/step_record_json.h), which the CLI's --json
// token events and the app's conversation export both write: every field of a hand-made record,
// floats as their shortest decimal, pieces that are part of a character, unknown top pieces.
#include <gtest/gtest.h>

#include <cmath>

#include "record/step_record_json.h"

namespace inferscope {
namespace {

StepRecord handMade() {
    StepRecord r;
    r.step = 2;
    r.position = 7;
    r.piece = " hay";
    r.forwardUs = 1500;
    r.sampleUs = 42;
    r.sample.id = 300;
    r.sample.logit = 12.5f;
    r.sample.pRaw = 0.1f;
    r.sample.pFinal = 0.75f;
    r.sample.rank = 2;
    r.sample.entropyBits = 1.25f;
    r.sample.logSumExp = 13.0f;
    r.sample.survivors = {512, 512, 300, 40, 3, 2, 2};
    r.sample.constrained = true;
    r.sample.grammarMassRemoved = 0.5f;
    r.sample.pBeforeGrammar = 0.125f;
    r.sample.top = {CandidateRecord{301, 13.5f, {0.25f, 0.25f, 0.5f, 0.5f, 0.6f, 0.6f, 0.25f}},
                    CandidateRecord{300, 12.5f, {0.125f, 0.125f, 0.1f, 0.1f, 0.2f, 0.2f, 0.75f}}};
    return r;
}

TEST(StepRecordJson, EveryFieldInTheSchemasOrder) {
    const auto json = stepRecordJson(handMade(), [](int32_t id) -> std::optional<std::string> {
        if (id == 300) return std::string(" hay");
        return std::nullopt;  // 301 was never produced: id and logit only
    });
    EXPECT_EQ(json.dump(),
              R"({"step":2,"position":7,"id":300,"piece":" hay","p":0.1,"p_final":0.75,"logit":12.5,"rank":2,)"
              R"("entropy_bits":1.25,"log_sum_exp":13.0,)"
              R"("survivors":{"raw":512,"penalty":512,"grammar":300,"top-k":40,"top-p":3,"min-p":2,"temperature":2},)"
              R"("grammar":{"mass_removed":0.5,"p_before":0.125,"forced":false},)"
              R"("forward_us":1500,"sample_us":42,"end_of_generation":false,"top":[)"
              R"({"id":301,"logit":13.5,"p":0.25,"stages":{"raw":0.25,"penalty":0.25,"grammar":0.5,"top-k":0.5,"top-p":0.6,"min-p":0.6,"temperature":0.25}},)"
              R"({"id":300,"piece":" hay","logit":12.5,"p":0.125,"stages":{"raw":0.125,"penalty":0.125,"grammar":0.1,"top-k":0.1,"top-p":0.2,"min-p":0.2,"temperature":0.75}}]})");
    // Without a lookup no top candidate has a piece.
    // (Kept in a variable: a range-for over a member of a temporary reads it after it is destroyed.)
    const auto withoutLookup = stepRecordJson(handMade());
    for (const auto& c : withoutLookup["top"]) EXPECT_FALSE(c.contains("piece"));
}

TEST(StepRecordJson, PartOfACharacterAndNonFiniteFloats) {
    StepRecord r = handMade();
    r.piece = "\xe2\x80";  // the first two bytes of "…"
    r.endOfGeneration = true;
    r.sample.logit = -INFINITY;
    r.sample.pRaw = NAN;
    const auto json = stepRecordJson(r);
    EXPECT_EQ(json["piece_bytes"], "e2 80");
    EXPECT_TRUE(json["logit"].is_null());
    EXPECT_TRUE(json["p"].is_null());
    EXPECT_EQ(json["end_of_generation"], true);
    // Dumped with the replace handler, the bytes that are not UTF-8 become U+FFFD.
    const std::string text = json.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    EXPECT_NE(text.find(R"("piece":")" "\xef\xbf\xbd" R"(","piece_bytes":"e2 80")"), std::string::npos) << text;
    // Whole characters have no piece_bytes.
    r.piece = "\xe2\x80\xa6";
    EXPECT_FALSE(stepRecordJson(r).contains("piece_bytes"));
}

}  // namespace
}  // namespace inferscope
