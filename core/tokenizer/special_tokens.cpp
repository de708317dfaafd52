#include "tokenizer/special_tokens.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <span>
#include <string_view>

namespace inferscope {
namespace {

// llama.cpp walks an unordered map and keeps the first EOT-looking token it meets; where a
// vocabulary has several (Qwen: <|im_end|> and <|endoftext|>; Phi-3: <|end|> and <|endoftext|>),
// the result it prints is the turn end, so this list is in that order of preference.
constexpr std::array<std::string_view, 7> kEotTexts = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>",
                                                       "<|endoftext|>", "<EOT>",
                                                       "<\xEF\xBD\x9C" "end\xE2\x96\x81" "of\xE2\x96\x81" "sentence\xEF\xBD\x9C>"};
constexpr std::array<std::string_view, 7> kEogTexts = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>",
                                                       "<|endoftext|>", "<|eom_id|>", "<EOT>"};
constexpr std::array<std::string_view, 1> kEomTexts = {"<|eom_id|>"};
constexpr std::array<std::string_view, 3> kFimPadTexts = {"<|fim_pad|>", "<fim-pad>", "<PAD>"};
constexpr std::array<std::string_view, 4> kFimRepTexts = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>"};
constexpr std::array<std::string_view, 1> kFimSepTexts = {"<|file_sep|>"};

template <size_t N>
bool isOneOf(std::string_view text, const std::array<std::string_view, N>& list) {
    return std::find(list.begin(), list.end(), text) != list.end();
}

// The first id whose text is in `texts`, by the list's order; -1 when none.
int32_t findByText(const Vocab& vocab, std::span<const std::string_view> texts) {
    for (std::string_view wanted : texts)
        for (int32_t id = 0; id < vocab.size(); ++id)
            if (vocab.pieces[id] == wanted) return id;
    return -1;
}

}  // namespace

void deriveEndOfGeneration(Vocab& vocab, FimIds fim) {
    auto makeControl = [&](int32_t id) {
        if (id >= 0) vocab.types[id] = TokenType::Control;
    };
    if (vocab.eotId < 0) {
        vocab.eotId = findByText(vocab, kEotTexts);
        makeControl(vocab.eotId);
    }
    if (vocab.eomId < 0) {
        vocab.eomId = findByText(vocab, kEomTexts);
        makeControl(vocab.eomId);
    }
    for (auto [id, texts] : {std::pair{&fim.pad, std::span<const std::string_view>(kFimPadTexts)},
                             std::pair{&fim.rep, std::span<const std::string_view>(kFimRepTexts)},
                             std::pair{&fim.sep, std::span<const std::string_view>(kFimSepTexts)}})
        if (*id < 0) {
            *id = findByText(vocab, texts);
            makeControl(*id);
        }

    std::vector<int32_t> eog;
    for (int32_t id : {fim.pad, fim.rep, fim.sep, vocab.eosId, vocab.eotId, vocab.eomId})
        if (id >= 0) eog.push_back(id);
    for (int32_t id = 0; id < vocab.size(); ++id)
        if (isOneOf(vocab.pieces[id], kEogTexts)) {
            eog.push_back(id);
            makeControl(id);
        }
    std::sort(eog.begin(), eog.end());
    eog.erase(std::unique(eog.begin(), eog.end()), eog.end());
    vocab.eogIds = std::move(eog);
}

void applyNameRules(Vocab& vocab, std::string_view generalName) {
    std::string name(generalName);
    for (char& c : name) c = char(std::tolower(uint8_t(c)));
    if (name.find("phi3") == std::string::npos && name.find("phi-3") == std::string::npos) return;
    vocab.rstrip.assign(size_t(vocab.size()), false);
    for (int32_t id = 0; id < vocab.size(); ++id) {
        const TokenType t = vocab.types[id];
        const std::string_view text = vocab.pieces[id];
        if (t == TokenType::Control || t == TokenType::UserDefined || t == TokenType::Unknown || text == "</s>")
            vocab.rstrip[id] = text != "<unk>" && text != "<s>" && text != "<|endoftext|>";
    }
}

}  // namespace inferscope
