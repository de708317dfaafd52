#pragma once
// Reads and validates the SentencePiece vocabulary of a GGUF file (tokenizer.ggml.*).
// The file is hostile input: every array's presence, type and length, every token type and
// special id is checked here, so that what reaches SentencePiece is well-formed.

#include "common/error.h"
#include "gguf/gguf_file.h"
#include "tokenizer/vocab.h"

namespace inferscope {

// tokenizer.ggml.model must be "llama" (SentencePiece) or "gpt2" (byte-level BPE, with its merges and
// a tokenizer.ggml.pre we implement); anything else is Unsupported. Derives the end-of-generation set.
Result<Vocab> readGgufVocab(const GgufFile& file);

}  // namespace inferscope
