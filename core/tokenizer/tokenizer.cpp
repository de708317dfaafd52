#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>
#include <fstream>
#include <iterator>
#include <map>
#include <sentencepiece_processor.h>

#include "gguf/gguf_file.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/spm_bytes.h"
#include "tokenizer/spm_proto.h"

namespace inferscope {
namespace {

constexpr std::string_view kSpaceSymbol = "\xE2\x96\x81";  // U+2581, SentencePiece's escaped ' '
constexpr uint64_t kMaxModelFileBytes = uint64_t(256) << 20;  // real tokenizer.model files are < 5 MiB

// Encode/Decode on a loaded model fail only on invalid ids (filtered before) or a broken model
// (refused at load): a failure here is a broken invariant, so it is loud, not swallowed.
void checkInvariant(const sentencepiece::util::Status& status, const char* what) {
    if (status.ok()) return;
    std::fprintf(stderr, "inferscope: SentencePiece %s failed on a loaded model: %s\n", what, status.ToString().c_str());
    std::abort();
}

// SentencePiece reports a protobuf parse failure as the failing source line; say it plainly.
// Its other messages may quote a piece from the file ("byte piece <0x\xfa> is invalid."): escaped.
std::string loadErrorText(const sentencepiece::util::Status& status) {
    const std::string message = status.message();
    if (message.find("ParseFromArray") != std::string::npos) return "the data is not a serialized ModelProto";
    return shownText(message, 512);
}

// llama_detokenize's clean_spaces, three passes as llama.cpp makes them: drop the space before
// ? ! . ,; " ' " -> "'"; drop the space before 's 'm 're 've (not 't 'd 'll).
std::string cleanTokenizationSpaces(std::string_view in) {
    std::string a;
    for (size_t i = 0; i < in.size(); ++i) {
        const char x = in[i];
        if (i > 0 && in[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) a.pop_back();
        a.push_back(x);
    }
    std::string b;  // llama.cpp marks the skipped space after " ' " with a NUL: "x ' ' y" -> "x'' y"
    for (size_t i = 0; i < a.size(); ++i) {
        const char x = a[i];
        if (i > 0 && x == '\'' && i + 1 < a.size() && a[i - 1] == ' ' && a[i + 1] == ' ') {
            b.pop_back();  // the space before
            a[++i] = '\0';  // and the one after
        }
        b.push_back(x);
    }
    std::string c;
    for (size_t i = 0; i < b.size(); ++i) {
        const char x = b[i];
        if (i > 0 && b[i - 1] == ' ' && x == '\'' && i + 1 < b.size()) {
            const char x1 = b[i + 1];
            const char x2 = i + 2 < b.size() ? b[i + 2] : '\0';
            if (x1 == 's' || x1 == 'm' || (x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) c.pop_back();
        }
        c.push_back(x);
    }
    return c;
}

}  // namespace

Tokenizer::Tokenizer(Vocab vocab, std::unique_ptr<sentencepiece::SentencePieceProcessor> sp, std::unique_ptr<BpeModel> bpe)
    : vocab_(std::move(vocab)), sp_(std::move(sp)), bpe_(std::move(bpe)), specialsByFirstByte_(256) {
    for (int32_t id = 0; id < vocab_.size(); ++id) {
        const TokenType t = vocab_.types[id];
        if (t == TokenType::Control || t == TokenType::UserDefined || t == TokenType::Unknown)
            specialsByFirstByte_[uint8_t(vocab_.pieces[id][0])].push_back(id);
    }
    for (auto& bucket : specialsByFirstByte_)
        std::stable_sort(bucket.begin(), bucket.end(),
                         [this](int32_t a, int32_t b) { return vocab_.pieces[a].size() > vocab_.pieces[b].size(); });
}

Tokenizer::~Tokenizer() = default;  // SpmByteMerger is complete here

Result<std::unique_ptr<Tokenizer>> Tokenizer::fromGguf(const GgufFile& file) {
    auto vocab = readGgufVocab(file);
    if (!vocab) return std::unexpected(vocab.error());
    if (vocab->family == TokenizerFamily::BytePair) {
        auto bpe = BpeModel::create(*vocab);
        if (!bpe) return std::unexpected(bpe.error());
        return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(*vocab), nullptr, std::make_unique<BpeModel>(std::move(*bpe))));
    }
    auto sp = std::make_unique<sentencepiece::SentencePieceProcessor>();
    const auto status = sp->LoadFromSerializedProto(writeModelProto(*vocab));
    if (!status.ok())
        return fail(ErrorKind::BadFile, fmt::format("SentencePiece rejected the vocabulary: {}", loadErrorText(status)));
    std::unique_ptr<Tokenizer> tokenizer(new Tokenizer(std::move(*vocab), std::move(sp), nullptr));
    tokenizer->byteMerger_ = std::make_unique<SpmByteMerger>(tokenizer->vocab_);
    return tokenizer;
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::fromModelFile(const std::filesystem::path& path) {
    const std::string name = path.filename().string();
    std::error_code ec;
    const uint64_t size = std::filesystem::file_size(path, ec);
    if (ec) return fail(ErrorKind::Io, fmt::format("{}: cannot read: {}", path.string(), ec.message()));
    if (size > kMaxModelFileBytes)
        return fail(ErrorKind::BadFile, fmt::format("{}: {} bytes is too large for a SentencePiece model", name, size));
    std::string bytes(size_t(size), '\0');
    std::ifstream in(path, std::ios::binary);
    if (!in.read(bytes.data(), std::streamsize(size)))
        return fail(ErrorKind::Io, fmt::format("{}: cannot read {} bytes", path.string(), size));

    auto sp = std::make_unique<sentencepiece::SentencePieceProcessor>();
    const auto status = sp->LoadFromSerializedProto(withWhitespaceKept(bytes));
    if (!status.ok())
        return fail(ErrorKind::BadFile, fmt::format("{}: not a usable SentencePiece model: {}", name, loadErrorText(status)));
    // SentencePiece has no accessor for USER_DEFINED; read the piece types back ourselves.
    auto vocab = readModelProtoPieces(bytes);
    if (!vocab) return fail(vocab.error().kind, fmt::format("{}: {}", name, vocab.error().message));
    if (vocab->size() != sp->GetPieceSize())
        return fail(ErrorKind::BadFile, fmt::format("{}: {} pieces read, SentencePiece has {}", name, vocab->size(), sp->GetPieceSize()));
    for (int32_t id = 0; id < vocab->size(); ++id)
        if (vocab->types[id] == TokenType::Control && isOneCharacter(vocab->pieces[id]))
            return fail(ErrorKind::BadFile, fmt::format(
                "{}: piece {} is a control piece of a single character, which SentencePiece cannot encode around", name, id));
    vocab->bosId = sp->bos_id();
    vocab->eosId = sp->eos_id();
    vocab->unkId = sp->unk_id();
    vocab->padId = sp->pad_id();
    deriveEndOfGeneration(*vocab, FimIds{});
    return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(*vocab), std::move(sp), nullptr));
}

int32_t Tokenizer::vocabSize() const { return vocab_.size(); }
int32_t Tokenizer::bosId() const { return vocab_.bosId; }
int32_t Tokenizer::eosId() const { return vocab_.eosId; }
int32_t Tokenizer::unkId() const { return vocab_.unkId; }
int32_t Tokenizer::padId() const { return vocab_.padId; }
int32_t Tokenizer::eotId() const { return vocab_.eotId; }
int32_t Tokenizer::eomId() const { return vocab_.eomId; }
bool Tokenizer::addBosByDefault() const { return vocab_.addBos; }
bool Tokenizer::addEosByDefault() const { return vocab_.addEos; }

bool Tokenizer::isEndOfGeneration(int32_t id) const {
    return std::binary_search(vocab_.eogIds.begin(), vocab_.eogIds.end(), id);
}

std::string_view Tokenizer::familyName() const {
    return vocab_.family == TokenizerFamily::BytePair ? "bpe" : "sentencepiece";
}

std::optional<int32_t> Tokenizer::findSpecial(std::string_view piece) const {
    if (piece.empty()) return std::nullopt;
    for (int32_t id : specialsByFirstByte_[uint8_t(piece[0])])
        if (vocab_.pieces[id] == piece) return id;
    return std::nullopt;
}

bool Tokenizer::splitsText(int32_t id, bool parseSpecial) const {
    // llama.cpp: user-defined pieces always split the text, control and unknown ones only when
    // special tokens are parsed.
    return parseSpecial || vocab_.types[id] == TokenType::UserDefined;
}

// llama.cpp's tokenizer_st_partition: the special pieces, longest first, each split the text no
// longer piece has claimed at every occurrence from the left. A shorter piece that overlaps a
// longer one therefore loses even where it starts first ("ab" and "bcd" in "abcd": "a" + "bcd").
// Here every occurrence is found in one pass over the text (by first byte) and the claims are
// made in that order, which gives the same split.
std::vector<Tokenizer::SpecialClaim> Tokenizer::claimSpecials(std::string_view text, bool parseSpecial) const {
    std::vector<SpecialClaim> found;  // every occurrence: [begin, begin + piece length)
    for (size_t pos = 0; pos < text.size(); ++pos)
        for (int32_t id : specialsByFirstByte_[uint8_t(text[pos])])
            if (splitsText(id, parseSpecial) && text.substr(pos).starts_with(vocab_.pieces[id]))
                found.push_back({pos, pos + vocab_.pieces[id].size(), id});
    if (found.empty()) return found;
    std::stable_sort(found.begin(), found.end(), [](const SpecialClaim& a, const SpecialClaim& b) {
        const size_t la = a.end - a.begin, lb = b.end - b.begin;
        return la != lb ? la > lb : a.id != b.id ? a.id < b.id : a.begin < b.begin;
    });
    std::map<size_t, SpecialClaim> claimed;  // by begin
    for (SpecialClaim c : found) {
        auto next = claimed.lower_bound(c.begin);
        if (next != claimed.end() && next->first < c.end) continue;
        if (next != claimed.begin() && std::prev(next)->second.end > c.begin) continue;
        // Phi-3's rule: the white space after the piece, up to the next claim, goes with it.
        if (!vocab_.rstrip.empty() && vocab_.rstrip[c.id]) {
            const size_t limit = next == claimed.end() ? text.size() : next->first;
            while (c.end < limit && std::isspace(uint8_t(text[c.end]))) ++c.end;
        }
        claimed.emplace(c.begin, c);
    }
    std::vector<SpecialClaim> out;
    out.reserve(claimed.size());
    for (const auto& [begin, c] : claimed) out.push_back(c);
    return out;
}

void Tokenizer::encodeFragment(std::string_view text, std::vector<int32_t>& out) const {
    if (text.empty()) return;
    if (bpe_) return bpe_->encode(text, out);
    if (byteMerger_ && !isWellFormedUtf8(text)) {  // what SentencePiece would turn into U+FFFD
        std::string escaped;
        if (vocab_.addSpacePrefix) escaped = kSpaceSymbol;
        for (char c : text) {
            if (c == ' ') escaped += kSpaceSymbol;
            else escaped.push_back(c);
        }
        return byteMerger_->encode(escaped, out);
    }
    std::vector<int> ids;
    checkInvariant(sp_->Encode(text, &ids), "Encode");
    out.insert(out.end(), ids.begin(), ids.end());
}

// Text between special pieces is encoded on its own, so SentencePiece adds the dummy-prefix space
// to each fragment - what llama.cpp's SPM path does after every special token.
std::vector<int32_t> Tokenizer::encode(std::string_view text, bool addBos, bool parseSpecial, bool addEos) const {
    std::vector<int32_t> out;
    if (addBos && vocab_.bosId >= 0) out.push_back(vocab_.bosId);
    size_t fragmentStart = 0;
    for (const SpecialClaim& c : claimSpecials(text, parseSpecial)) {
        encodeFragment(text.substr(fragmentStart, c.begin - fragmentStart), out);
        out.push_back(c.id);
        fragmentStart = c.end;
    }
    encodeFragment(text.substr(fragmentStart), out);
    if (addEos && vocab_.eosId >= 0) out.push_back(vocab_.eosId);
    return out;
}

std::string Tokenizer::decode(std::span<const int32_t> ids) const {
    if (bpe_) {
        std::string text;
        for (int32_t id : ids) text += tokenBytes(id);
        return vocab_.preTokenizer.cleanSpaces ? cleanTokenizationSpaces(text) : text;
    }
    std::vector<int> known;
    known.reserve(ids.size());
    for (int32_t id : ids)
        if (valid(id)) known.push_back(id);
    std::string text;
    checkInvariant(sp_->Decode(known, &text), "Decode");
    return text;
}

std::string_view Tokenizer::piece(int32_t id) const {
    return valid(id) ? std::string_view(vocab_.pieces[id]) : std::string_view();
}

TokenType Tokenizer::type(int32_t id) const { return valid(id) ? vocab_.types[id] : TokenType::Unknown; }

std::string Tokenizer::tokenBytes(int32_t id) const {
    if (!valid(id)) return {};
    const std::string& p = vocab_.pieces[id];
    if (bpe_) {  // as llama.cpp's token_to_piece without special text
        if (vocab_.types[id] == TokenType::Normal) return byte_level::decodeText(p);
        if (vocab_.types[id] == TokenType::UserDefined) return p;
        return {};
    }
    switch (vocab_.types[id]) {
        case TokenType::Normal:
        case TokenType::UserDefined: {  // SentencePiece's decode unescapes both
            std::string out;
            for (size_t i = 0; i < p.size();) {
                if (std::string_view(p).substr(i).starts_with(kSpaceSymbol)) {
                    out.push_back(' ');
                    i += kSpaceSymbol.size();
                } else {
                    out.push_back(p[i++]);
                }
            }
            return out;
        }
        case TokenType::Byte: {  // "<0x0A>"; SentencePiece refuses any other spelling at load
            unsigned value = 0;
            if (p.size() == 6 && p.starts_with("<0x") && p.ends_with(">") &&
                std::from_chars(p.data() + 3, p.data() + 5, value, 16).ptr == p.data() + 5)
                return std::string(1, char(value));
            return {};
        }
        default:  // control, unknown, unused: nothing visible
            return {};
    }
}

}  // namespace inferscope
