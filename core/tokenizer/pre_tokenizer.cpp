#include "tokenizer/pre_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <array>
#include <fmt/format.h>

#include "tokenizer/byte_level.h"

namespace inferscope {
namespace {

// llama.cpp's whitespace (its own Unicode table): PCRE2's \s under UCP also has U+180E and lacks
// nothing llama.cpp has, so \s and \S are spelled out with this set instead.
#define WS "\\t-\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"

// llama.cpp's adaptation of Llama 3's tokenizer.json regex (case-insensitive contractions spelled
// out); Qwen2's differs only in single digits.
constexpr const char* kLlama3 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}"
    "| ?[^" WS "\\p{L}\\p{N}]+[\\r\\n]*|[" WS "]*[\\r\\n]+|[" WS "]+(?![^" WS "])|[" WS "]+";
constexpr const char* kQwen2 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}"
    "| ?[^" WS "\\p{L}\\p{N}]+[\\r\\n]*|[" WS "]*[\\r\\n]+|[" WS "]+(?![^" WS "])|[" WS "]+";
// GPT-2's, with the trailing "|\s+" of the original that llama.cpp's hand-written matcher applies.
constexpr const char* kGpt2 =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" WS "\\p{L}\\p{N}]+|[" WS "]+(?![^" WS "])|[" WS "]+";
constexpr const char* kDefaultPunctuation = "[\\p{P}\\$\\+<=>\\^~\\|]+";
constexpr const char* kDefaultNumbers = "\\p{N}+";
constexpr const char* kDefaultThreeDigits = "[0-9][0-9][0-9]";

std::vector<const char*> patternsOf(PreTokenizerKind kind) {
    switch (kind) {
        case PreTokenizerKind::Llama3: return {kLlama3};
        case PreTokenizerKind::Qwen2: return {kQwen2};
        case PreTokenizerKind::Gpt2: return {kGpt2};
        case PreTokenizerKind::Default: return {kDefaultPunctuation, kGpt2, kDefaultNumbers, kDefaultThreeDigits};
    }
    return {};
}

}  // namespace

struct PreTokenizer::Regex {
    pcre2_code* code = nullptr;
    ~Regex() { pcre2_code_free(code); }
};

std::optional<PreTokenizerSpec> findPreTokenizer(std::string_view name) {
    using K = PreTokenizerKind;
    auto spec = [](K kind, bool ignoreMerges = false, std::optional<bool> addBos = std::nullopt, bool cleanSpaces = true) {
        return PreTokenizerSpec{kind, ignoreMerges, addBos, cleanSpaces};
    };
    if (name.empty() || name == "default") return spec(K::Default);
    if (name == "llama3" || name == "llama-v3" || name == "llama-bpe" || name == "falcon3")
        return spec(K::Llama3, true, true);
    if (name == "dbrx" || name == "smaug-bpe") return spec(K::Llama3);
    if (name == "qwen2" || name == "deepseek-r1-qwen") return spec(K::Qwen2, false, std::nullopt, false);
    if (name == "stablelm2") return spec(K::Qwen2);
    if (name == "gpt-2" || name == "phi-2" || name == "roberta-bpe" || name == "gigachat" || name == "jina-es" ||
        name == "jina-de" || name == "jina-v1-en" || name == "jina-v2-es" || name == "jina-v2-de" ||
        name == "jina-v2-code" || name == "mpt" || name == "olmo" || name == "jais")
        return spec(K::Gpt2);
    return std::nullopt;
}

std::string_view preTokenizerName(PreTokenizerKind kind) {
    switch (kind) {
        case PreTokenizerKind::Llama3: return "llama3";
        case PreTokenizerKind::Qwen2: return "qwen2";
        case PreTokenizerKind::Gpt2: return "gpt-2";
        case PreTokenizerKind::Default: return "default";
    }
    return "?";
}

Result<PreTokenizer> PreTokenizer::create(PreTokenizerKind kind) {
    PreTokenizer pre;
    pre.kind_ = kind;
    for (const char* pattern : patternsOf(kind)) {
        int errorCode = 0;
        PCRE2_SIZE errorOffset = 0;
        auto regex = std::make_shared<Regex>();
        regex->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern), PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP,
                                    &errorCode, &errorOffset, nullptr);
        if (!regex->code) {
            std::array<PCRE2_UCHAR, 256> message{};
            pcre2_get_error_message(errorCode, message.data(), message.size());
            return fail(ErrorKind::Unsupported, fmt::format("this PCRE2 cannot compile the pre-tokenizer regex does not compile at {}: {}", errorOffset,
                                                         reinterpret_cast<const char*>(message.data())));
        }
        pcre2_jit_compile(regex->code, PCRE2_JIT_COMPLETE);  // optional: pcre2_match interprets without it
        pre.regexes_.push_back(std::move(regex));
    }
    return pre;
}

std::vector<std::string_view> PreTokenizer::split(std::string_view text) const {
    std::vector<std::string_view> pieces{text};
    if (text.empty()) return {};
    // PCRE2 refuses surrogates (llama.cpp keeps them): match on a same-length copy without them.
    const std::string subjectCopy = byte_level::withoutSurrogates(text);
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(subjectCopy.data());
    for (const auto& regex : regexes_) {
        std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> match(
            pcre2_match_data_create_from_pattern(regex->code, nullptr), &pcre2_match_data_free);
        std::vector<std::string_view> next;
        next.reserve(pieces.size());
        for (std::string_view piece : pieces) {
            const size_t begin = size_t(piece.data() - text.data());
            const size_t end = begin + piece.size();
            size_t pos = begin;
            while (pos < end) {
                // The piece is the subject (length `end`), so lookahead stops at its end as llama.cpp's does.
                const int rc = pcre2_match(regex->code, subject, end, pos, PCRE2_NO_UTF_CHECK, match.get(), nullptr);
                if (rc < 0) break;  // no further match (or a resource limit): the rest stays one piece
                const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match.get());
                const size_t matchBegin = ovector[0], matchEnd = ovector[1];
                if (matchEnd <= matchBegin) break;  // the patterns cannot match empty; guard anyway
                if (matchBegin > pos) next.push_back(text.substr(pos, matchBegin - pos));
                next.push_back(text.substr(matchBegin, matchEnd - matchBegin));
                pos = matchEnd;
            }
            if (pos < end) next.push_back(text.substr(pos, end - pos));
        }
        pieces = std::move(next);
    }
    return pieces;
}

}  // namespace inferscope
