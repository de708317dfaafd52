#pragma once
// The tokenizer: a SentencePiece processor (the library, never a re-implementation) built from a
// GGUF vocabulary or loaded from a tokenizer.model, tokenizing the way llama.cpp does so that our
// ids match llama.cpp's golden data. Immutable once built; every const method may be called from
// any thread at once (SentencePiece's Encode/Decode are const and thread-safe).
//
// Ids outside [0, vocabSize()) are not an error anywhere: piece() and tokenBytes() give "",
// type() gives Unknown, decode() skips them.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "tokenizer/utf8_stream.h"
#include "tokenizer/vocab.h"

namespace sentencepiece { class SentencePieceProcessor; }

namespace inferscope {

class GgufFile;

class Tokenizer {
public:
    // Builds a SentencePiece model from tokenizer.ggml.{model,tokens,scores,token_type} and the special
    // ids (bos/eos/unk/padding, eot if present, add_bos_token, add_space_prefix) of a GGUF file.
    // tokenizer.ggml.model must be "llama" (SentencePiece BPE); anything else -> Unsupported error naming it.
    static Result<std::unique_ptr<Tokenizer>> fromGguf(const GgufFile& file);
    // Loads a SentencePiece tokenizer.model file (e.g. one given beside a model). Its normalizer is
    // kept except that runs of whitespace are never collapsed (llama.cpp's convention). Special ids
    // are SentencePiece's (bos/eos -1 unless they are control pieces); no EOT.
    static Result<std::unique_ptr<Tokenizer>> fromModelFile(const std::filesystem::path& path);
    ~Tokenizer();

    int32_t vocabSize() const;
    int32_t bosId() const;  int32_t eosId() const;  int32_t unkId() const;   // -1 when absent
    int32_t padId() const;  int32_t eotId() const;                            // -1 when absent
    bool addBosByDefault() const;                 // tokenizer.ggml.add_bos_token, default true
    bool isEndOfGeneration(int32_t id) const;     // EOS, or EOT (tokenizer.ggml.eot_token_id) when present
    // Id of a control, user-defined or unknown piece like "<|im_end|>" (what parseSpecial matches).
    std::optional<int32_t> findSpecial(std::string_view piece) const;

    // parseSpecial: control and user-defined pieces written in the text (e.g. "<|im_start|>") become
    // their single ids (longest match), the text between them is encoded normally - as llama.cpp does
    // (the dummy-prefix space is added again after a special token, like llama.cpp's SPM path).
    // As in llama.cpp, user-defined pieces split the text even without parseSpecial, and with it the
    // unknown piece ("<unk>") does too. Empty text gives no ids (only BOS if asked); addBos is
    // ignored when the vocabulary has no BOS. Invalid UTF-8 in the text is encoded as one U+FFFD
    // per bad byte (SentencePiece's normalizer does that), so it cannot round-trip.
    std::vector<int32_t> encode(std::string_view text, bool addBos, bool parseSpecial = false) const;
    std::string decode(std::span<const int32_t> ids) const;   // as SentencePiece DecodeIds
    std::string_view piece(int32_t id) const;   // as stored: "▁there", "<0x0A>", "<s>"
    std::string tokenBytes(int32_t id) const;   // what this token appends to the output text: "▁there" -> " there",
                                                // "<0x0A>" -> "\n" (one raw byte), control/unknown/unused -> ""
                                                // Joined, they equal decode() but for the leading dummy-prefix
                                                // space decode() drops and decode()'s " ⁇ " for unknown.
    TokenType type(int32_t id) const;

private:
    Tokenizer(Vocab vocab, std::unique_ptr<sentencepiece::SentencePieceProcessor> sp);
    bool valid(int32_t id) const { return id >= 0 && id < vocab_.size(); }
    // Id of the longest special piece starting at text[pos], or -1.
    int32_t matchSpecial(std::string_view text, size_t pos, bool parseSpecial) const;
    void encodeFragment(std::string_view text, std::vector<int32_t>& out) const;

    Vocab vocab_;
    std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
    // Ids of control, user-defined and unknown pieces by their first byte, longest first.
    std::vector<std::vector<int32_t>> specialsByFirstByte_;  // [256][...]
};

}  // namespace inferscope
