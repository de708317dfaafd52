#pragma once
// The tokenizer, tokenizing the way llama.cpp does so that our ids match llama.cpp's golden data:
// - SentencePiece vocabularies (tokenizer.ggml.model "llama": Llama 2, Mistral, Phi-3): a
//   SentencePiece processor (the library, never a re-implementation) built from the GGUF
//   vocabulary, or loaded from a tokenizer.model;
// - byte-level BPE ("gpt2": Llama 3, Qwen, GPT-2): BpeModel (PCRE2 pre-tokenizer + merges).
// Special-token splitting, BOS/EOS and the end-of-generation set are shared. Immutable once built;
// every const method may be called from any thread at once (SentencePiece's Encode/Decode are
// const and thread-safe, BpeModel keeps no state).
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
class BpeModel;
class SpmByteMerger;

class Tokenizer {
public:
    // From tokenizer.ggml.{model,tokens,scores,token_type} (+ merges and pre for "gpt2") and the special
    // ids (bos/eos/unk/padding/eot/eom/fim, add_bos_token, add_eos_token, add_space_prefix) of a GGUF file.
    // tokenizer.ggml.model must be "llama" or "gpt2"; anything else -> Unsupported error naming it.
    static Result<std::unique_ptr<Tokenizer>> fromGguf(const GgufFile& file);
    // Loads a SentencePiece tokenizer.model file (e.g. one given beside a model). Its normalizer is
    // kept except that runs of whitespace are never collapsed (llama.cpp's convention). Special ids
    // are SentencePiece's (bos/eos -1 unless they are control pieces); no EOT.
    static Result<std::unique_ptr<Tokenizer>> fromModelFile(const std::filesystem::path& path);
    ~Tokenizer();

    int32_t vocabSize() const;
    int32_t bosId() const;  int32_t eosId() const;  int32_t unkId() const;   // -1 when absent
    int32_t padId() const;  int32_t eotId() const;                            // -1 when absent
    int32_t eomId() const;                                                    // -1 when absent
    bool addBosByDefault() const;                 // tokenizer.ggml.add_bos_token (default: SPM true, BPE by pre-tokenizer)
    bool addEosByDefault() const;                 // tokenizer.ggml.add_eos_token, default false
    // Whether sampling `id` ends the answer: llama.cpp's end-of-generation set (EOS, EOT, EOM,
    // FIM pad/repo/sep, <|im_end|>, <end_of_turn>, <|end|>, <|endoftext|>, ... by their text).
    bool isEndOfGeneration(int32_t id) const;
    std::span<const int32_t> endOfGenerationIds() const { return vocab_.eogIds; }  // sorted
    TokenizerFamily family() const { return vocab_.family; }
    // "sentencepiece" or "bpe", and for BPE the pre-tokenizer as the file names it ("llama-bpe",
    // "qwen2"; "" when absent): what a user is told about the vocabulary.
    std::string_view familyName() const;
    std::string_view preTokenizerName() const { return vocab_.preTokenizerName; }
    // Id of a control, user-defined or unknown piece like "<|im_end|>" (what parseSpecial matches).
    std::optional<int32_t> findSpecial(std::string_view piece) const;

    // parseSpecial: control and user-defined pieces written in the text (e.g. "<|im_start|>") become
    // their single ids (longest match), the text between them is encoded normally - as llama.cpp does
    // (the dummy-prefix space is added again after a special token, like llama.cpp's SPM path).
    // As in llama.cpp, user-defined pieces split the text even without parseSpecial, and with it the
    // unknown piece ("<unk>") does too. Empty text gives no ids (only BOS if asked); addBos is
    // ignored when the vocabulary has no BOS (addEos likewise for EOS, appended). Invalid UTF-8 in
    // the text: SentencePiece vocabularies of a GGUF file keep its bytes as byte-fallback tokens,
    // as llama.cpp does (spm_bytes.h); byte-level BPE, and a tokenizer.model, encode one U+FFFD
    // per bad byte (llama.cpp's BPE and SentencePiece's normalizer do that).
    std::vector<int32_t> encode(std::string_view text, bool addBos, bool parseSpecial = false, bool addEos = false) const;
    // SentencePiece: as its DecodeIds. BPE: as llama_detokenize (no special text): the tokens'
    // bytes joined, then llama.cpp's clean-up of " ." " ," " 's" ... where the vocabulary asks for it.
    std::string decode(std::span<const int32_t> ids) const;
    std::string_view piece(int32_t id) const;   // as stored: "▁there", "<0x0A>", "<s>"
    std::string tokenBytes(int32_t id) const;   // what this token appends to the output text: "▁there" -> " there",
                                                // "<0x0A>" -> "\n" (one raw byte), BPE "Ġthere" -> " there",
                                                // control/unknown/unused -> ""
                                                // Joined, they equal decode() but for the leading dummy-prefix
                                                // space decode() drops and decode()'s " ⁇ " for unknown.
    TokenType type(int32_t id) const;

private:
    Tokenizer(Vocab vocab, std::unique_ptr<sentencepiece::SentencePieceProcessor> sp, std::unique_ptr<BpeModel> bpe);
    bool valid(int32_t id) const { return id >= 0 && id < vocab_.size(); }
    // A special piece found in the text: [begin, end) (end past the white space an rstrip piece takes).
    struct SpecialClaim {
        size_t begin = 0, end = 0;
        int32_t id = -1;
    };
    bool splitsText(int32_t id, bool parseSpecial) const;
    // The special pieces that split the text, in text order, as llama.cpp partitions it.
    std::vector<SpecialClaim> claimSpecials(std::string_view text, bool parseSpecial) const;
    void encodeFragment(std::string_view text, std::vector<int32_t>& out) const;

    Vocab vocab_;
    std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;  // SentencePiece vocabularies
    std::unique_ptr<BpeModel> bpe_;                               // byte-level BPE vocabularies
    // SentencePiece vocabularies from a GGUF file: text that is not well-formed UTF-8 goes through
    // llama.cpp's merge, which keeps its bytes (byte-fallback tokens) where SentencePiece writes U+FFFD.
    std::unique_ptr<SpmByteMerger> byteMerger_;
    // Ids of control, user-defined and unknown pieces by their first byte, longest first.
    std::vector<std::vector<int32_t>> specialsByFirstByte_;  // [256][...]
};

}  // namespace inferscope
