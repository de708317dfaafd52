#pragma once
// The end-of-generation set, as llama.cpp derives it (llama_vocab::impl::load): from the file's
// ids and, since converters rarely write them, from token texts.

#include <cstdint>
#include <string_view>

#include "tokenizer/vocab.h"

namespace inferscope {

// FIM ids from tokenizer.ggml.fim_{pad,rep,sep}_token_id, -1 when absent: they end generation too.
struct FimIds {
    int32_t pad = -1, rep = -1, sep = -1;
};

// Fills vocab.eotId and eomId when the file had none, and vocab.eogIds; every token found by its
// text is made Control (llama.cpp does the same, so it is never produced from plain text).
void deriveEndOfGeneration(Vocab& vocab, FimIds fim);

// llama.cpp's name rule: when general.name contains "phi3" or "phi-3" (any case), every control,
// user-defined and unknown piece and </s> eat the whitespace after them, except <unk>, <s> and
// <|endoftext|>: "<|user|>\nHi<|end|>" tokenizes as <|user|> "Hi" <|end|>.
void applyNameRules(Vocab& vocab, std::string_view generalName);

}  // namespace inferscope
