#pragma once
// `inferscope-cli bench --draft MODEL | --draft-ngram N`: plain against speculative decoding of the
// same greedy answer, interleaved round by round (bench_speculative.cpp).
#include <string>

#include "engine_choices.h"

namespace inferscope::cli {

struct SpeculativeBenchArgs {
    std::string model, compute = "auto", kv = "f16", prompt;
    DraftChoices draft;
    int32_t genTokens = 64, threads = 0, repeat = 5;
    double maxBusy = 0.05, waitQuiet = 30;
    bool noMmap = false, json = false;
};

int runSpeculativeBench(const SpeculativeBenchArgs& a);

}  // namespace inferscope::cli
