#include "tokenizer/gguf_vocab.h"

#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <unordered_map>

namespace inferscope {
namespace {

constexpr std::string_view kModelKey = "tokenizer.ggml.model";
constexpr std::string_view kTokensKey = "tokenizer.ggml.tokens";
constexpr std::string_view kScoresKey = "tokenizer.ggml.scores";
constexpr std::string_view kTypesKey = "tokenizer.ggml.token_type";

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

}  // namespace

Result<Vocab> readGgufVocab(const GgufFile& file) {
    auto model = file.getString(kModelKey);
    if (!model) return std::unexpected(model.error());
    if (!*model) return std::unexpected(badFile(fmt::format("no tokenizer in this GGUF file: {} is missing", kModelKey)));
    if (**model != "llama")
        return fail(ErrorKind::Unsupported,
                    fmt::format("tokenizer model \"{}\" is not supported: only \"llama\" (SentencePiece BPE) is", shownText(**model)));

    auto tokens = findArray(file, kTokensKey, [](GgufType t) { return t == GgufType::String; }, "an array of strings");
    if (!tokens) return std::unexpected(tokens.error());
    const uint64_t n = (*tokens)->count;
    if (n == 0) return std::unexpected(badFile(fmt::format("{} is empty: the vocabulary has no tokens", kTokensKey)));
    if (n > kMaxVocabSize)
        return std::unexpected(badFile(fmt::format("{} has {} tokens, more than the {} a vocabulary may have", kTokensKey, n, kMaxVocabSize)));

    auto scores = findArray(file, kScoresKey, [](GgufType t) { return t == GgufType::F32 || t == GgufType::F64; },
                            "an array of f32");
    if (!scores) return std::unexpected(scores.error());
    auto types = findArray(file, kTypesKey, isIntegerType, "an array of i32");
    if (!types) return std::unexpected(types.error());
    for (const auto& [key, array] : {std::pair{kScoresKey, *scores}, std::pair{kTypesKey, *types}})
        if (array->count != n)
            return std::unexpected(badFile(fmt::format("{} has {} entries but {} has {}: the vocabulary arrays disagree",
                                                       key, array->count, kTokensKey, n)));

    Vocab vocab;
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
        const double score = (*scores)->numberAt(id);
        if (std::isnan(score)) return std::unexpected(badFile(fmt::format("{}: token {} has score NaN", kScoresKey, id)));
        const int64_t type = (*types)->intAt(id);
        if (type < 1 || type > 6)
            return std::unexpected(badFile(fmt::format("{}: token {} {} has type {} (valid types are 1 to 6)", kTypesKey, id, quoted(piece), type)));
        if (type == int64_t(TokenType::Control) && isOneCharacter(piece))
            return std::unexpected(badFile(fmt::format(
                "{}: token {} {} is a control token of a single character, which SentencePiece cannot encode around",
                kTypesKey, id, quoted(piece))));
        vocab.pieces.emplace_back(piece);
        vocab.scores.push_back(float(score));
        vocab.types.push_back(TokenType(type));
    }

    struct Special { std::string_view key; int32_t* id; };
    for (const Special& s : {Special{"tokenizer.ggml.bos_token_id", &vocab.bosId},
                             Special{"tokenizer.ggml.eos_token_id", &vocab.eosId},
                             Special{"tokenizer.ggml.unknown_token_id", &vocab.unkId},
                             Special{"tokenizer.ggml.padding_token_id", &vocab.padId},
                             Special{"tokenizer.ggml.eot_token_id", &vocab.eotId}}) {
        auto id = readSpecialId(file, s.key, n);
        if (!id) return std::unexpected(id.error());
        *s.id = *id;
    }
    auto addBos = file.getBool("tokenizer.ggml.add_bos_token");
    if (!addBos) return std::unexpected(addBos.error());
    vocab.addBos = addBos->value_or(true);
    auto addSpace = file.getBool("tokenizer.ggml.add_space_prefix");
    if (!addSpace) return std::unexpected(addSpace.error());
    vocab.addSpacePrefix = addSpace->value_or(true);
    return vocab;
}

}  // namespace inferscope
