#pragma once
// PromptBuilder: a conversation's messages as the prompt's chunks, and a finished answer as the
// tokens it leaves in the context. One chunk per message, so the app keeps each message's exact
// tokens: a follow-up, a regenerated answer or an edited message sends a prompt whose unchanged
// prefix the engine finds in its KV cache. Pure: no model, no Qt; the tokenizer is only asked to
// re-tokenize an answer's text when its generated tokens cannot be kept (a matched stop string).

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/chat_template.h"
#include "engine/generation.h"

namespace inferscope {

class Tokenizer;

// A piece of the prompt: text to tokenize (special tokens parsed), or tokens known exactly.
struct PromptChunk {
    std::string text;
    std::vector<int32_t> tokens;
    bool hasTokens = false;
    bool addBos = false;  // text chunks: prepend BOS (the first chunk, when the template does not write it)
};

// One message of the conversation. Its tokens, when known, are reused as they are; else its text
// is rendered by the template.
struct PromptTurn {
    ChatRole role = ChatRole::User;  // User or Assistant (the system prompt is the builder's)
    std::string text;                // read only when tokens is empty
    std::vector<int32_t> tokens;     // what the message put in the context before, or empty
};

class PromptBuilder {
public:
    // vocabularyAddsBos: the tokenizer's own add-BOS flag (tokenizer.ggml.add_bos_token); BOS is
    // added to the first chunk when both it and the template ask for it.
    PromptBuilder(ChatTemplate tmpl, std::string systemPrompt, bool vocabularyAddsBos)
        : tmpl_(tmpl), systemPrompt_(std::move(systemPrompt)), vocabularyAddsBos_(vocabularyAddsBos) {}

    const ChatTemplate& chatTemplate() const { return tmpl_; }

    // One chunk per turn, in order. A user turn opens the answer that follows it (the template's
    // assistant prefix), the first one carries the system prompt; an answer rendered from text is
    // closed with the end-of-turn marker.
    std::vector<PromptChunk> chunks(std::vector<PromptTurn> turns) const;
    // A branch's chunk: the kept steps' tokens, the last one being the alternative chosen.
    static PromptChunk keptSteps(std::span<const StepRecord> kept);

    // The tokens a finished answer leaves in the context: the kept steps' (a branch) and the
    // generated ones, closed with the end-of-turn marker when the model did not end the turn
    // itself. An answer cut at a stop string is re-tokenized from its text, without it (its
    // generated tokens run past the cut). tokenizer null (no model): the tokens that need it are left out.
    std::vector<int32_t> answerTokens(std::span<const StepRecord> kept, const GenerationSummary& summary,
                                      const Tokenizer* tokenizer) const;

private:
    ChatTemplate tmpl_;
    std::string systemPrompt_;
    bool vocabularyAddsBos_;
};

}  // namespace inferscope
