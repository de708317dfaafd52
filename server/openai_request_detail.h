#pragma once
// What openai_request.cpp (the body's fields, sampling, messages), openai_structured_output.cpp
// (response_format, grammar and json_schema compiled to the request's grammar) and
// openai_logprob_fields.cpp (the log-probability extensions) share. Private to
// server/.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "server/openai_request.h"

namespace inferscope::server::request_detail {

// The field, or null when absent (null given counts as absent).
const nlohmann::json& field(const nlohmann::json& body, const char* key);

// response_format (OpenAI), grammar and json_schema (llama.cpp's server): at most one asks for
// something; `raw` is the body as sent, whose schemas are compiled in their members' order.
std::optional<ApiError> readStructuredOutput(const nlohmann::json& body, std::string_view raw, ServeRequest& r);

// prompt_logprobs (vLLM), logprob_token_ids and logprobs_mode (ours): read after logprobs and stream.
std::optional<ApiError> readLogprobExtensions(const nlohmann::json& body, ServeRequest& r);
// A message's tool parts: role "tool" with its tool_call_id, an assistant's tool_calls.
std::optional<ApiError> readToolParts(const nlohmann::json& message, const std::string& param, ChatMessage& msg);
// tools, tool_choice and parallel_tool_calls (chat); `raw` as for readStructuredOutput.
std::optional<ApiError> readTools(const nlohmann::json& body, std::string_view raw, ServeRequest& r);

}  // namespace inferscope::server::request_detail
