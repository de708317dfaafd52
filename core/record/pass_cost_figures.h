#pragma once
// What model/pass_cost.h's PassCost is made of, as plain numbers: the record keeps them with an
// answer (answer_origin.h) without depending on the model code that computes them.

namespace inferscope {

// The five numbers a PassCost is made of, as an answer keeps them (record/answer_origin.h): its
// GB/s and GFLOP/s stay what they were after another model is loaded.
struct PassCostFigures {
    double weightBytesPerToken = 0, kvBytesPerToken = 0, macsPerToken = 0, lmHeadMacs = 0, attentionFlopsPerKey = 0;
    bool known() const { return weightBytesPerToken > 0; }
    bool operator==(const PassCostFigures&) const = default;
};

}  // namespace inferscope
