#pragma once
// Two models whose vocabularies differ compared on the text itself: each reads the same bytes with
// its own tokenizer (teacher-forced, Engine::scoreRows), each token's surprisal −log2 p is spread
// over the bytes it produced, and the bytes are summed per word (a word with the whitespace before
// it), so the two models' figures line up word by word whatever their tokens. Totals in bits per
// byte compare models with different vocabularies (bits per token would not).

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace inferscope {

class Engine;

struct WordSurprisal {
    size_t begin = 0, end = 0;  // the word's bytes in the text (with the whitespace before it)
    double bitsA = 0, bitsB = 0;
};

struct TextComparison {
    std::vector<WordSurprisal> words;
    size_t bytes = 0;                 // the text's length
    double bitsA = 0, bitsB = 0;      // in all
    int32_t tokensA = 0, tokensB = 0; // each tokenizer's tokens for the text
    double bitsPerByteA() const { return bytes ? bitsA / double(bytes) : 0.0; }
    double bitsPerByteB() const { return bytes ? bitsB / double(bytes) : 0.0; }
};

// Each byte's share of the surprisal of the tokens that made `text` when it follows `context`
// (not scored). Error: a tokenizer whose tokens do not spell the text back (it normalised it).
// `cancel` (asked before every batch of rows) returning true stops it with ErrorKind::Cancelled.
Result<std::vector<double>> surprisalPerByte(Engine& e, std::string_view context, std::string_view text,
                                             const std::function<bool()>& cancel = {});

// Per token of an answer whose pieces (each token's bytes, in order) spell `text`, or a space and
// `text` (a SentencePiece dummy prefix the decoded text drops): the largest |bitsB − bitsA| of the
// words its bytes fall in (0 for a token of no byte of the text), what the app tints each token
// by. Empty when the pieces spell something else.
std::vector<float> tokenGaps(const TextComparison& c, const std::vector<std::string>& pieces, std::string_view text);

// Both models over `text` after `context`, word by word; `cancel` as above.
Result<TextComparison> compareOnText(Engine& a, Engine& b, std::string_view context, std::string_view text,
                                     const std::function<bool()>& cancel = {});

}  // namespace inferscope
