#pragma once
// OpenAI request bodies (POST /v1/chat/completions, /v1/completions) turned into checked values, and
// OpenAI's error object. Pure functions: no sockets, no model, so every rule is unit-tested alone
// (tests/server/test_openai_protocol.cpp).
//
// Defaults are OpenAI's, not the app's: temperature 1, top_p 1, top_k and min_p off, no penalty;
// the seed is drawn by the caller when none is given. null is "absent". logit_bias, presence_penalty
// and frequency_penalty (OpenAI's ranges) go into the sampler's penalty stage, as llama.cpp's
// server applies them (the penalties over the last repeat_last_n tokens, 64 by default, prompt
// included). Structured output (core/grammar, docs/STRUCTURED_OUTPUT.md): `response_format`
// {"type": "json_object"} or {"type": "json_schema", "json_schema": {"name", "schema", "strict"}},
// llama.cpp's `grammar` (GBNF text) and `json_schema` (a schema alone); at most one of them, the
// text or schema at most kMaxGrammarBytes, compiled here so that a bad one is a 400 before the
// request waits for a slot. Tools (`tools`, `tool_choice`, `parallel_tool_calls`, assistant
// messages with `tool_calls`, `role: "tool"` messages) are read in openai_tools.cpp, each part
// bounded (kMaxTools, kMaxToolBytes, ...) and each function's parameters compiled as a JSON schema.
// Fields that would change the answer and are not implemented (functions, best_of, ...) are
// refused by name unless their value asks for nothing; other unknown
// fields are ignored. Extensions accepted as llama.cpp's and vLLM's servers name them: top_k,
// min_p, repeat_penalty / repetition_penalty, repeat_last_n, continue_final_message and
// add_generation_prompt.

#include <cstdint>
#include <expected>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <memory>

#include "engine/chat_template.h"
#include "record/sampler_params.h"

namespace inferscope::grammar {
struct Grammar;
}

namespace inferscope::server {

// One error as OpenAI sends it: {"error": {"message", "type", "param", "code"}} with an HTTP status.
struct ApiError {
    int status = 400;
    std::string message;
    std::string type = "invalid_request_error";
    std::string param;  // the request field at fault; empty: null
    std::string code;   // e.g. "model_not_found"; empty: null
};
nlohmann::ordered_json errorJson(const ApiError& error);
ApiError badParameter(std::string param, std::string message);

enum class Endpoint { Chat, Completion };

// A call the assistant made: `arguments` is JSON text (as OpenAI sends it, a string).
struct ToolCall {
    std::string id;
    std::string name;
    std::string arguments;
};

struct ChatMessage {
    ChatRole role = ChatRole::User;
    std::string content;
    bool toolResult = false;          // role "tool" (role is then User): a call's result
    std::string toolCallId;           // toolResult: the call it answers
    std::vector<ToolCall> toolCalls;  // an assistant message's calls
};

// A function the model may call: its declaration as the client wrote it (members in their order,
// shown to the model) and its parameters' grammar (gbnf.h text, root rule `root`).
struct ToolFunction {
    std::string name;
    nlohmann::ordered_json declaration;  // {"type": "function", "function": {name, description?, parameters}}
    std::string parametersGbnf;
};

// tool_choice: none (answer in text), auto (text or calls), required (at least one call), or a
// named function (a call of it).
enum class ToolChoice { None, Auto, Required, Named };

inline constexpr int32_t kMaxTopLogprobs = 20;  // OpenAI's limit
inline constexpr size_t kMaxStopStrings = 4;    // OpenAI's limit
inline constexpr size_t kMaxLogitBias = 1024;   // logit_bias entries
inline constexpr size_t kMaxGrammarBytes = 256 * 1024;  // a grammar's text, or a JSON schema as sent (compact)
inline constexpr size_t kMaxSchemaNameBytes = 64;        // response_format.json_schema.name (OpenAI's limit)
inline constexpr size_t kMaxTools = 128;                 // functions in `tools` (OpenAI's limit)
inline constexpr size_t kMaxToolNameBytes = 64;          // a function's name: letters, digits, '_', '-' (OpenAI's rule)
inline constexpr size_t kMaxToolBytes = 64 * 1024;       // one tool as sent (its parameters schema included)
inline constexpr size_t kMaxToolsBytes = 256 * 1024;     // all of `tools` as sent
inline constexpr size_t kMaxToolCalls = 128;             // calls in one assistant message
inline constexpr size_t kMaxToolCallIdBytes = 256;       // a call's id, a tool message's tool_call_id
inline constexpr size_t kMaxLogprobTokenIds = 64;        // logprob_token_ids entries

// Which distribution logprobs are of (vLLM's --logprobs-mode names): the model's own (raw
// softmax, before any sampler stage), or the one the token was drawn from (after penalties,
// grammar, top-k, top-p, min-p and temperature; greedy: the pick at 0).
enum class LogprobsMode { Raw, Processed };

// What the answer must be.
enum class OutputFormat { Text, JsonObject, JsonSchema, Grammar };

struct ServeRequest {
    Endpoint endpoint = Endpoint::Chat;
    std::string model;                  // empty: not given (the served model)
    std::vector<ChatMessage> messages;  // chat: system messages first-class (joined into the system prompt)
    std::string prompt;                 // completion
    SamplerParams sampler;              // topN = topLogprobs
    std::optional<uint64_t> seed;
    std::optional<int32_t> maxTokens;   // none: until the end of generation or the context is full; 0 only with echo
    std::vector<std::string> stop;
    bool stream = false;
    bool includeUsage = false;          // stream_options.include_usage: a last chunk with usage
    bool logprobs = false;
    int32_t topLogprobs = 0;            // 0..kMaxTopLogprobs alternatives per token
    // Chat: the last message is the assistant's and the answer continues it (its turn left open,
    // no new one started): the default when the last message is the assistant's, as llama.cpp's
    // server does; vLLM's `continue_final_message` says it explicitly (false: close it and answer
    // anew). The response holds only what follows.
    bool continueFinalMessage = false;
    // Completion only: the answer's text starts with the prompt, and with logprobs its tokens come
    // first, each with its log-probability given the tokens before it (the first has none: null),
    // as OpenAI's legacy endpoint answers (what evaluation harnesses score log-likelihoods with).
    bool echo = false;
    // llama.cpp's and vLLM's ignore_eos: the tokens that end an answer (end of generation, BOS) are
    // never sampled (the server biases them by -1e9), so it runs to max_tokens or a stop string.
    bool ignoreEos = false;
    // vLLM's prompt_logprobs: each prompt token's raw log-probability given the tokens before it,
    // its rank, and the N most probable tokens at its position (the first token: null). Not with
    // stream (as vLLM).
    std::optional<int32_t> promptLogprobs;
    // Our extension: the raw log-probability of these token ids at every generated step (checked
    // against the vocabulary by the server). Needs logprobs.
    std::vector<int32_t> logprobTokenIds;
    LogprobsMode logprobsMode = LogprobsMode::Raw;  // `logprobs_mode`: "raw_logprobs" or "processed_logprobs"
    // Structured output: the grammar every step samples under (null: Text).
    OutputFormat format = OutputFormat::Text;
    std::shared_ptr<const grammar::Grammar> grammar;
    // Tools (chat only). toolChoice is None when no tools are given; the grammar of the calls
    // depends on the chat template and is compiled by the server (tool_grammar.h).
    std::vector<ToolFunction> tools;
    ToolChoice toolChoice = ToolChoice::None;
    std::string toolChoiceName;        // Named: the function
    bool parallelToolCalls = true;     // false: at most one call
    bool hasToolMessages() const;      // an assistant message with calls or a tool result
};

// The body of either endpoint. Errors: 400 with the parameter at fault (bad JSON, JSON nested
// deeper than 64 or with more than 65,536 values (json_shape.h), wrong types, values out of range,
// n != 1, no messages or prompt; a grammar or schema that does not compile, with its line and
// column or its location in the schema). No message repeats a value of the body: it names the
// field and what it must be.
std::expected<ServeRequest, ApiError> parseServeRequest(std::string_view body, Endpoint endpoint);

}  // namespace inferscope::server
