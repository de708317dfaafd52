#include "engine/prompt_builder.h"

#include "tokenizer/tokenizer.h"

namespace inferscope {

std::vector<PromptChunk> PromptBuilder::chunks(std::vector<PromptTurn> turns) const {
    std::vector<PromptChunk> out;
    out.reserve(turns.size());
    for (size_t r = 0; r < turns.size(); ++r) {
        PromptTurn& turn = turns[r];
        PromptChunk chunk;
        if (!turn.tokens.empty()) {
            chunk.tokens = std::move(turn.tokens);
            chunk.hasTokens = true;
        } else if (turn.role == ChatRole::User) {
            chunk.text = tmpl_.userTurn(turn.text, systemPrompt_, r == 0) + tmpl_.assistantPrefix();
            chunk.addBos = r == 0 && tmpl_.tokenizerAddsBos() && vocabularyAddsBos_;
        } else {
            chunk.text = turn.text + tmpl_.assistantSuffix();
        }
        out.push_back(std::move(chunk));
    }
    return out;
}

PromptChunk PromptBuilder::keptSteps(std::span<const StepRecord> kept) {
    PromptChunk chunk;
    chunk.hasTokens = true;
    for (const StepRecord& s : kept) chunk.tokens.push_back(s.sample.id);
    return chunk;
}

std::vector<int32_t> PromptBuilder::answerTokens(std::span<const StepRecord> kept, const GenerationSummary& summary,
                                                 const Tokenizer* tokenizer) const {
    std::vector<int32_t> tokens;
    std::string keptText;
    for (const StepRecord& s : kept) {
        tokens.push_back(s.sample.id);
        keptText += s.piece;
    }
    if (summary.reason == FinishReason::StopString) {
        if (!tokenizer) return {};
        return tokenizer->encode(keptText + summary.text + tmpl_.assistantSuffix(), false, true);
    }
    tokens.insert(tokens.end(), summary.tokens.begin(), summary.tokens.end());
    if (summary.reason != FinishReason::EndOfGeneration && !tmpl_.assistantSuffix().empty() && tokenizer) {
        const auto suffix = tokenizer->encode(tmpl_.assistantSuffix(), false, true);
        tokens.insert(tokens.end(), suffix.begin(), suffix.end());
    }
    return tokens;
}

}  // namespace inferscope
