#include "engine/compare_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <optional>

#include "engine/engine.h"
#include "engine/perplexity.h"
#include "tokenizer/tokenizer.h"

namespace inferscope {
namespace {

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// How many bytes a tokenizer's pieces, put together (`spelled`), run ahead of the text they read:
// 0 when they spell it, 1 when they spell a space and it (SentencePiece's dummy prefix, a space
// before the first word that the text does not have); none when they spell something else.
std::optional<size_t> dummyPrefixShift(std::string_view spelled, std::string_view text) {
    if (spelled == text) return 0;
    if (spelled.size() == text.size() + 1 && spelled[0] == ' ' && spelled.substr(1) == text) return 1;
    return std::nullopt;
}

}  // namespace

Result<std::vector<double>> surprisalPerByte(Engine& e, std::string_view context, std::string_view text,
                                             const std::function<bool()>& cancel) {
    const Tokenizer& tok = e.tokenizer();
    const std::string whole = std::string(context) + std::string(text);
    const bool bos = tok.addBosByDefault() && tok.bosId() >= 0;
    const std::vector<int32_t> ids = tok.encode(whole, bos);
    // Where each token's bytes fall in `whole`: the pieces spell it back, but for SentencePiece's
    // dummy prefix (a space before the first word that the text does not have).
    std::string spelled;
    std::vector<size_t> start(ids.size() + 1, 0);
    for (size_t i = 0; i < ids.size(); ++i) {
        start[i] = spelled.size();
        spelled += tok.tokenBytes(ids[i]);
    }
    start[ids.size()] = spelled.size();
    const std::optional<size_t> spelledShift = dummyPrefixShift(spelled, whole);
    if (!spelledShift) return fail(ErrorKind::InvalidArgument, "this model's tokenizer does not spell the text back byte for byte (it normalises it): it cannot be compared on the text");
    const size_t shift = *spelledShift;
    std::vector<double> perByte(text.size(), 0.0);
    const size_t textStart = context.size();
    const int32_t n = int32_t(ids.size());
    std::vector<float> rows;
    const size_t vocab = size_t(tok.vocabSize());
    const int32_t step = e.maxScoreRows();
    for (int32_t from = 0; from < n - 1; from += step) {
        if (cancel && cancel()) return fail(ErrorKind::Cancelled, "cancelled");
        const int32_t count = std::min(step, n - 1 - from);
        if (auto ok = e.scoreRows(ids, from, count, rows); !ok) return std::unexpected(ok.error());
        for (int32_t r = 0; r < count; ++r) {
            const int32_t t = from + r + 1;  // the token these logits predict
            // Its bytes in `whole` (the dummy prefix's space belongs to no byte of the text).
            const size_t b0 = std::max(start[size_t(t)], shift) - shift, b1 = std::max(start[size_t(t) + 1], shift) - shift;
            if (b1 <= textStart || b1 <= b0) continue;
            const std::span<const float> logits(rows.data() + size_t(r) * vocab, vocab);
            const double bits = (logSumExp(logits) - double(logits[size_t(ids[size_t(t)])])) / std::numbers::ln2;
            const double perTokenByte = bits / double(b1 - b0);
            for (size_t b = std::max(b0, textStart); b < b1; ++b) perByte[b - textStart] += perTokenByte;
        }
    }
    return perByte;
}

Result<TextComparison> compareOnText(Engine& a, Engine& b, std::string_view context, std::string_view text,
                                     const std::function<bool()>& cancel) {
    if (text.empty()) return fail(ErrorKind::InvalidArgument, "the text to compare is empty");
    // A model's error named by the model ("model A: ..."); a cancel passes as it is.
    auto named = [](std::string_view model, const Error& err) {
        return err.kind == ErrorKind::Cancelled ? std::unexpected(err) : fail(err.kind, std::string(model) + ": " + err.message);
    };
    auto pa = surprisalPerByte(a, context, text, cancel);
    if (!pa) return named("model A", pa.error());
    auto pb = surprisalPerByte(b, context, text, cancel);
    if (!pb) return named("model B", pb.error());
    TextComparison c;
    c.bytes = text.size();
    c.tokensA = int32_t(a.tokenizer().encode(text, false).size());
    c.tokensB = int32_t(b.tokenizer().encode(text, false).size());
    // Words: a run of non-space bytes with the whitespace before it.
    size_t i = 0;
    while (i < text.size()) {
        WordSurprisal w;
        w.begin = i;
        while (i < text.size() && isSpace(text[i])) ++i;
        while (i < text.size() && !isSpace(text[i])) ++i;
        w.end = i;
        for (size_t k = w.begin; k < w.end; ++k) {
            w.bitsA += (*pa)[k];
            w.bitsB += (*pb)[k];
        }
        c.bitsA += w.bitsA;
        c.bitsB += w.bitsB;
        c.words.push_back(w);
    }
    return c;
}

std::vector<float> tokenGaps(const TextComparison& c, const std::vector<std::string>& pieces, std::string_view text) {
    std::string spelled;
    for (const std::string& p : pieces) spelled += p;
    const std::optional<size_t> spelledShift = dummyPrefixShift(spelled, text);
    if (!spelledShift) return {};
    const size_t shift = *spelledShift;
    std::vector<float> gaps(pieces.size(), 0.0f);
    size_t at = 0, w = 0;  // the token's first byte in `spelled`; the first word not wholly before it
    for (size_t t = 0; t < pieces.size(); ++t) {
        const size_t end = at + pieces[t].size();
        const size_t b0 = std::max(at, shift) - shift, b1 = std::max(end, shift) - shift;  // in `text`
        at = end;
        if (b1 <= b0) continue;  // no byte of the text (the dummy prefix's space, an empty piece)
        while (w < c.words.size() && c.words[w].end <= b0) ++w;
        double gap = 0;
        for (size_t v = w; v < c.words.size() && c.words[v].begin < b1; ++v) gap = std::max(gap, std::abs(c.words[v].bitsB - c.words[v].bitsA));
        gaps[t] = float(gap);
    }
    return gaps;
}

}  // namespace inferscope
