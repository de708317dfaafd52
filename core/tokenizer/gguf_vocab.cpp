#include "tokenizer/gguf_vocab.h"

#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <unordered_map>

#include "tokenizer/special_tokens.h"

namespace inferscope {
namespace {

constexpr std::string_view kModelKey = "tokenizer.ggml.model";
constexpr std::string_view kTokensKey = "tokenizer.ggml.tokens";
constexpr std::string_view kScoresKey = "tokenizer.ggml.scores";
constexpr std::string_view kTypesKey = "tokenizer.ggml.token_type";
constexpr std::string_view kMergesKey = "tokenizer.ggml.merges";
constexpr std::string_view kPreKey = "tokenizer.ggml.pre";
// Real merge lists have 50,000 (GPT-2) to 280,147 (Llama 3) entries; the bound only keeps a
// hostile count from driving allocations.
constexpr uint64_t kMaxMerges = uint64_t(1) << 23;

Error badFile(std::string message) { return Error{ErrorKind::BadFile, std::move(message)}; }

std::string describe(const GgufValue& v) {
    if (v.type == GgufType::Array) return fmt::format("array of {}", ggufTypeName(v.elemType));
    return std::string(ggufTypeName(v.type));
}

bool isIntegerType(GgufType t) {
    GgufValue probe;
    probe.type = t;
    return probe.isInteger();
}

// A piece as it can be shown in a message: quoted, escaped like every name from a file (control
// bytes and invalid UTF-8 as \xNN: a piece may hold any bytes).
std::string quoted(std::string_view piece) { return fmt::format("\"{}\"", shownText(piece)); }

// One of the three parallel arrays: present, an array of the wanted element kind, and (for
// scores and types) as long as the token list.
Result<const GgufValue*> findArray(const GgufFile& file, std::string_view key, bool (*elemOk)(GgufType),
                                   std::string_view expected) {
    const GgufValue* v = file.find(key);
    if (!v) return std::unexpected(badFile(fmt::format("metadata key {} is missing", key)));
    if (v->type != GgufType::Array || !elemOk(v->elemType))
        return std::unexpected(badFile(fmt::format("metadata key {} has type {}, expected {}", key, describe(*v), expected)));
    return v;
}

// A special token id: absent, or -1 / 0xFFFFFFFF (how converters write "none") -> -1;
// anything else must name a token of the vocabulary.
Result<int32_t> readSpecialId(const GgufFile& file, std::string_view key, uint64_t nVocab) {
    const GgufValue* v = file.find(key);
    if (!v) return -1;
    if (!v->isInteger())
        return std::unexpected(badFile(fmt::format("metadata key {} has type {}, expected an integer", key, describe(*v))));
    if (v->isSigned ? v->i == -1 : (v->u == 0xFFFFFFFFu || v->u == std::numeric_limits<uint64_t>::max())) return -1;
    if ((v->isSigned && v->i < 0) || v->u >= nVocab) {
        const std::string shown = v->isSigned ? fmt::format("{}", v->i) : fmt::format("{}", v->u);
        return std::unexpected(badFile(fmt::format("{} is {}, outside the vocabulary of {} tokens", key, shown, nVocab)));
    }
    return int32_t(v->u);
}

// tokenizer.ggml.pre (which regexes, ignore_merges, the add_bos default) and the merges.
Result<void> readBpeFields(const GgufFile& file, Vocab& vocab) {
    auto pre = file.getString(kPreKey);
    if (!pre) return std::unexpected(pre.error());
    vocab.preTokenizerName = std::string(pre->value_or(""));
    const auto spec = findPreTokenizer(vocab.preTokenizerName);
    if (!spec)
        return fail(ErrorKind::Unsupported,
                    fmt::format("pre-tokenizer \"{}\" ({}) is not supported: llama-bpe/llama3, qwen2, gpt-2 and their "
                                "aliases are", shownText(vocab.preTokenizerName), kPreKey));
    vocab.preTokenizer = *spec;
    auto merges = findArray(file, kMergesKey, [](GgufType t) { return t == GgufType::String; }, "an array of strings");
    if (!merges) return std::unexpected(merges.error());
    if ((*merges)->count > kMaxMerges)
        return fail(ErrorKind::BadFile, fmt::format("{} has {} entries, more than the {} accepted", kMergesKey, (*merges)->count, kMaxMerges));
    vocab.merges.assign((*merges)->strings.begin(), (*merges)->strings.end());
    return {};
}

}  // namespace

Result<Vocab> readGgufVocab(const GgufFile& file) {
    auto model = file.getString(kModelKey);
    if (!model) return std::unexpected(model.error());
    if (!*model) return std::unexpected(badFile(fmt::format("no tokenizer in this GGUF file: {} is missing", kModelKey)));
    Vocab vocab;
    if (**model == "gpt2") {
        vocab.family = TokenizerFamily::BytePair;
    } else if (**model != "llama") {
        return fail(ErrorKind::Unsupported,
                    fmt::format("tokenizer model \"{}\" is not supported: only \"llama\" (SentencePiece) and \"gpt2\" "
                                "(byte-level BPE) are", shownText(**model)));
    }
    const bool bpe = vocab.family == TokenizerFamily::BytePair;

    auto tokens = findArray(file, kTokensKey, [](GgufType t) { return t == GgufType::String; }, "an array of strings");
    if (!tokens) return std::unexpected(tokens.error());
    const uint64_t n = (*tokens)->count;
    if (n == 0) return std::unexpected(badFile(fmt::format("{} is empty: the vocabulary has no tokens", kTokensKey)));
    if (n > kMaxVocabSize)
        return std::unexpected(badFile(fmt::format("{} has {} tokens, more than the {} a vocabulary may have", kTokensKey, n, kMaxVocabSize)));

    // SentencePiece needs scores and types; a BPE file may omit both (0 and Normal, as llama.cpp).
    const GgufValue* scores = nullptr;
    const GgufValue* types = nullptr;
    if (!bpe || file.find(kScoresKey)) {
        auto found = findArray(file, kScoresKey, [](GgufType t) { return t == GgufType::F32 || t == GgufType::F64; },
                               "an array of f32");
        if (!found) return std::unexpected(found.error());
        scores = *found;
    }
    if (!bpe || file.find(kTypesKey)) {
        auto found = findArray(file, kTypesKey, isIntegerType, "an array of i32");
        if (!found) return std::unexpected(found.error());
        types = *found;
    }
    for (const auto& [key, array] : {std::pair{kScoresKey, scores}, std::pair{kTypesKey, types}})
        if (array && array->count != n)
            return std::unexpected(badFile(fmt::format("{} has {} entries but {} has {}: the vocabulary arrays disagree",
                                                       key, array->count, kTokensKey, n)));

    vocab.pieces.reserve(n);
    vocab.scores.reserve(n);
    vocab.types.reserve(n);
    std::unordered_map<std::string_view, uint64_t> firstId;  // piece -> id, to report duplicates
    firstId.reserve(n);
    for (uint64_t id = 0; id < n; ++id) {
        const std::string_view piece = (*tokens)->strings[id];
        if (piece.empty()) return std::unexpected(badFile(fmt::format("{}: token {} is empty", kTokensKey, id)));
        auto [it, inserted] = firstId.emplace(piece, id);
        if (!inserted)
            return std::unexpected(badFile(fmt::format("{}: token {} {} duplicates token {}", kTokensKey, id, quoted(piece), it->second)));
        const double score = scores ? scores->numberAt(id) : 0.0;
        if (std::isnan(score)) return std::unexpected(badFile(fmt::format("{}: token {} has score NaN", kScoresKey, id)));
        const int64_t type = types ? types->intAt(id) : int64_t(TokenType::Normal);
        if (type < 1 || type > 6)
            return std::unexpected(badFile(fmt::format("{}: token {} {} has type {} (valid types are 1 to 6)", kTypesKey, id, quoted(piece), type)));
        if (!bpe && type == int64_t(TokenType::Control) && isOneCharacter(piece))
            return std::unexpected(badFile(fmt::format(
                "{}: token {} {} is a control token of a single character, which SentencePiece cannot encode around",
                kTypesKey, id, quoted(piece))));
        vocab.pieces.emplace_back(piece);
        vocab.scores.push_back(float(score));
        vocab.types.push_back(TokenType(type));
    }

    FimIds fim;
    struct Special { std::string_view key; int32_t* id; };
    for (const Special& s : {Special{"tokenizer.ggml.bos_token_id", &vocab.bosId},
                             Special{"tokenizer.ggml.eos_token_id", &vocab.eosId},
                             Special{"tokenizer.ggml.unknown_token_id", &vocab.unkId},
                             Special{"tokenizer.ggml.padding_token_id", &vocab.padId},
                             Special{"tokenizer.ggml.eot_token_id", &vocab.eotId},
                             Special{"tokenizer.ggml.eom_token_id", &vocab.eomId},
                             Special{"tokenizer.ggml.fim_pad_token_id", &fim.pad},
                             Special{"tokenizer.ggml.fim_rep_token_id", &fim.rep},
                             Special{"tokenizer.ggml.fim_sep_token_id", &fim.sep}}) {
        auto id = readSpecialId(file, s.key, n);
        if (!id) return std::unexpected(id.error());
        *s.id = *id;
    }
    if (bpe) {
        auto pre = readBpeFields(file, vocab);
        if (!pre) return std::unexpected(pre.error());
    }
    auto addBos = file.getBool("tokenizer.ggml.add_bos_token");
    if (!addBos) return std::unexpected(addBos.error());
    vocab.addBos = addBos->value_or(bpe ? vocab.preTokenizer.addBos.value_or(false) : true);
    auto addEos = file.getBool("tokenizer.ggml.add_eos_token");
    if (!addEos) return std::unexpected(addEos.error());
    vocab.addEos = addEos->value_or(false);
    auto addSpace = file.getBool("tokenizer.ggml.add_space_prefix");
    if (!addSpace) return std::unexpected(addSpace.error());
    vocab.addSpacePrefix = addSpace->value_or(!bpe);
    deriveEndOfGeneration(vocab, fim);
    auto name = file.getString("general.name");
    if (!name) return std::unexpected(name.error());
    applyNameRules(vocab, name->value_or(""));
    return vocab;
}

}  // namespace inferscope
