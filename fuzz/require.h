#pragma once
// A fuzz target's property checks: a broken property aborts, naming the target's file and the
// property, so that libFuzzer keeps the input that broke it.

#include <cstdio>
#include <cstdlib>

namespace inferscope::fuzz {
[[noreturn]] inline void brokenProperty(const char* file, const char* what) {
    std::fprintf(stderr, "%s: broken property: %s\n", file, what);
    std::abort();
}
}  // namespace inferscope::fuzz

#define FUZZ_REQUIRE(condition, what) ((condition) ? void() : ::inferscope::fuzz::brokenProperty(__FILE__, what))
