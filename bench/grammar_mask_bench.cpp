// The grammar mask's cost per token (core/grammar): a GGUF file's vocabulary as a token trie, a
// GBNF grammar, and a JSON text fed byte by byte as generation would feed it token by token; at
// every byte the allowed-token mask over the whole vocabulary is computed once as a generation
// step would (the matcher's caches as the steps before left them: "step") and then again
// ("repeat", every transition cached). Prints the median, 90th percentile and maximum of each.
//
//   grammar_mask_bench MODEL.gguf GRAMMAR.gbnf [TEXT]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "grammar/grammar_matcher.h"
#include "tokenizer/tokenizer.h"

using namespace inferscope;
using Clock = std::chrono::steady_clock;

namespace {
double percentile(std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, size_t(q * double(v.size())))];
}
}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s MODEL.gguf GRAMMAR.gbnf [TEXT]\n", argv[0]);
        return 2;
    }
    auto file = GgufFile::open(argv[1]);
    if (!file) return std::fprintf(stderr, "%s\n", file.error().message.c_str()), 1;
    auto tok = Tokenizer::fromGguf(*file);
    if (!tok) return std::fprintf(stderr, "%s\n", tok.error().message.c_str()), 1;
    std::ifstream in(argv[2]);
    std::stringstream ss;
    ss << in.rdbuf();
    auto parsed = grammar::parseGbnf(ss.str());
    if (!parsed) return std::fprintf(stderr, "%s\n", parsed.error().message.c_str()), 1;
    const std::string text = argc > 3 ? argv[3]
        : R"({"name": "Ada Lovelace", "born": 1815, "tags": ["math", "poetry", "engines"], "notes": "first published algorithm, 1843", "score": -12.5e3, "alive": false, "child": {"id": 7, "list": [1, 2, 3]}})";

    std::vector<std::string> bytes((*tok)->vocabSize());
    for (size_t id = 0; id < bytes.size(); ++id) bytes[id] = (*tok)->tokenBytes(int32_t(id));
    const auto t0 = Clock::now();
    const grammar::TokenTrie trie = grammar::TokenTrie::build(bytes);
    const double buildMs = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();

    grammar::GrammarMatcher matcher(std::make_shared<const grammar::Grammar>(std::move(*parsed)));
    std::vector<uint8_t> mask(bytes.size());
    std::vector<double> first, repeat;
    std::vector<size_t> visited, bulk;
    size_t allowedSum = 0;
    for (size_t i = 0; i <= text.size(); ++i) {
        auto a = Clock::now();
        matcher.fillMask(trie, mask);
        auto b = Clock::now();
        matcher.fillMask(trie, mask);
        auto c = Clock::now();
        visited.push_back(matcher.lastNodesVisited());
        bulk.push_back(matcher.lastSubtreesAllowed());
        first.push_back(std::chrono::duration<double, std::micro>(b - a).count());
        repeat.push_back(std::chrono::duration<double, std::micro>(c - b).count());
        for (uint8_t m : mask) allowedSum += m;
        if (i < text.size() && !matcher.acceptBytes(std::string_view(text).substr(i, 1)))
            return std::fprintf(stderr, "the text leaves the grammar at byte %zu\n", i), 1;
    }
    if (std::getenv("GRAMMAR_BENCH_SLOWEST"))
        for (size_t i = 0; i < repeat.size(); ++i)
            if (repeat[i] > 4 * percentile(repeat, 0.5))
                std::printf("  after %zu bytes (...%s): %.0f us, %zu nodes stepped, %zu subtrees whole\n", i,
                            text.substr(i >= 12 ? i - 12 : 0, std::min<size_t>(i, 12)).c_str(), repeat[i], visited[i], bulk[i]);
    std::printf("vocabulary %zu tokens, trie %zu nodes built in %.1f ms; %zu states (one per byte of the text), "
                "%.0f tokens allowed on average, %zu automaton states\n",
                bytes.size(), trie.nodes().size(), buildMs, first.size(), double(allowedSum) / double(first.size()),
                matcher.stateCount());
    std::printf("mask per step  (caches as generation leaves them): median %.0f us, p90 %.0f us, max %.0f us\n",
                percentile(first, 0.5), percentile(first, 0.9), percentile(first, 1.0));
    std::printf("mask repeated  (every transition cached):          median %.0f us, p90 %.0f us, max %.0f us\n",
                percentile(repeat, 0.5), percentile(repeat, 0.9), percentile(repeat, 1.0));
    return 0;
}
