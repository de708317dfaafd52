#pragma once
// The grammar engine on untrusted text (core/grammar): what a server client sends as `grammar` or
// as a JSON schema. Shared by the libFuzzer target (fuzz_grammar.cpp) and ctest
// (test_fuzz_regressions: the seeds and hostile inputs at the server's limits).
//
// The input is tried as GBNF and as a JSON schema (strict when its first byte is odd), with the
// server's limits (server/openai_request.h: 256 KiB of text, messages that repeat nothing). Checked
// beyond the sanitizers: a refusal is a message of the parser's own (printable ASCII, so nothing
// of the text), and a grammar that compiles is followed for a few tokens over a small vocabulary:
// each mask is sound (every token it allows is accepted byte by byte), or the matcher says it
// passed its bounds. A broken property aborts.

#include <cstddef>
#include <cstdint>
#include <span>

namespace inferscope::fuzz {

inline constexpr size_t kGrammarTextLimit = 256 * 1024;  // server/openai_request.h's kMaxGrammarBytes

void runGrammarInput(std::span<const uint8_t> input);

}  // namespace inferscope::fuzz
