#pragma once
// Assembles streamed token bytes into text that is safe to show at every step.

#include <string>
#include <string_view>

namespace inferscope {

// Streaming output assembler: tokens' bytes arrive one by one (byte-fallback tokens split UTF-8
// characters); push() returns only complete, valid UTF-8; invalid sequences become U+FFFD (one per
// bad byte, as SentencePiece's decode does, so the streamed text equals decode()); flush() returns the rest.
class Utf8Stream {
public:
    std::string push(std::string_view bytes);
    std::string flush();

private:
    std::string pending_;  // the start of a character still waiting for its last bytes (< 4 bytes)
};

}  // namespace inferscope
