#pragma once
// Just enough of SentencePiece's ModelProto wire format (protobuf) to build a model from a GGUF
// vocabulary and to read the piece types back from a tokenizer.model. The library ships no
// sentencepiece_model.pb.h and has protobuf-lite compiled in, so linking libprotobuf is not an option.
//
// Field numbers (sentencepiece_model.proto, 0.1.97):
//   ModelProto      pieces=1 (repeated SentencePiece), trainer_spec=2, normalizer_spec=3
//   SentencePiece   piece=1 (string), score=2 (float), type=3 (enum, = TokenType)
//   TrainerSpec     model_type=3 (BPE=2), vocab_size=4, byte_fallback=35,
//                   unk_id=40, bos_id=41, eos_id=42, pad_id=43
//   NormalizerSpec  name=1, add_dummy_prefix=3, remove_extra_whitespaces=4, escape_whitespaces=5

#include <string>
#include <string_view>

#include "common/error.h"
#include "tokenizer/vocab.h"

namespace inferscope {

// A BPE ModelProto the way llama.cpp tokenizes Llama vocabularies: "identity" normalizer with no
// charsmap, dummy prefix = vocab.addSpacePrefix, whitespace kept as written (no collapsing),
// spaces escaped to U+2581, byte fallback when the vocabulary has BYTE tokens.
std::string writeModelProto(const Vocab& vocab);

// Appends a second normalizer_spec holding only remove_extra_whitespaces = false. Protobuf merges
// repeated occurrences of a message field, so the model's own normalizer is kept but whitespace
// is no longer collapsed - llama.cpp never collapses it, whatever the tokenizer.model says.
std::string withWhitespaceKept(std::string serialized);

// The pieces, scores and types of a serialized ModelProto (other fields are skipped). Special ids
// and flags are left at their defaults: SentencePiece itself knows those.
Result<Vocab> readModelProtoPieces(std::string_view serialized);

}  // namespace inferscope
