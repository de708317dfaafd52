#pragma once
// Assembles streamed token bytes into text that is safe to show at every step.

#include <string>
#include <string_view>

namespace inferscope {

// The UTF-8 sequence at the start of `bytes`: its length when it is one whole valid character,
// 0 when it is the valid start of one that needs more bytes (or bytes is empty), -1 when invalid.
int utf8Sequence(std::string_view bytes);

// Streaming output assembler: tokens' bytes arrive one by one (byte-fallback tokens split UTF-8
// characters); push() returns only complete, valid UTF-8; invalid sequences become U+FFFD (one per
// bad byte, as SentencePiece's decode does, so the streamed text equals decode()); flush() returns the rest.
class Utf8Stream {
public:
    std::string push(std::string_view bytes);
    std::string flush();
    // Bytes pushed that wait for the rest of their character (0 when the text so far is whole).
    size_t pendingBytes() const { return pending_.size(); }

private:
    std::string pending_;  // the start of a character still waiting for its last bytes (< 4 bytes)
};

}  // namespace inferscope
