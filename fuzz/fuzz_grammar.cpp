// libFuzzer target: GBNF text and JSON schemas as a server client sends them (fuzz/grammar_target.h).
// Run with -max_len at the server's limit (256 KiB) and a small stack (scripts/ci-fuzz.sh): groups
// and schemas nested without end must be refused, not recursed into.
#include "grammar_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    inferscope::fuzz::runGrammarInput({data, size});
    return 0;
}
