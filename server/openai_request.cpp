// OpenAI request bodies turned into checked values (see openai_request.h): the body's shape, the
// messages or prompt, sampling, stop strings, log-probabilities and the fields refused by name;
// structured output (response_format, grammar, json_schema) is read in openai_structured_output.cpp.
#include "server/openai_request.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fmt/format.h>

#include "server/json_shape.h"
#include "server/openai_request_detail.h"

namespace inferscope::server {

namespace request_detail {

// The field, or null when absent (null given counts as absent).
const nlohmann::json& field(const nlohmann::json& body, const char* key) {
    static const nlohmann::json kNull;
    const auto it = body.find(key);
    return it == body.end() ? kNull : *it;
}

}  // namespace request_detail

namespace {

using nlohmann::json;
using request_detail::field;
using request_detail::readStructuredOutput;
using request_detail::readLogprobExtensions;
using Parsed = std::expected<ServeRequest, ApiError>;

// What a value is, for messages that say what was wrong without repeating it.
const char* typeName(const json& v) {
    switch (v.type()) {
        case json::value_t::null: return "null";
        case json::value_t::boolean: return "a boolean";
        case json::value_t::string: return "a string";
        case json::value_t::array: return "an array";
        case json::value_t::object: return "an object";
        case json::value_t::number_float: return "a fraction";
        default: return "a number";
    }
}

std::optional<ApiError> readNumber(const json& body, const char* key, float& out, double lo, double hi, bool loOpen) {
    const json& v = field(body, key);
    if (v.is_null()) return std::nullopt;
    if (!v.is_number()) return badParameter(key, fmt::format("{} must be a number", key));
    const double d = v.get<double>();
    if (!std::isfinite(d) || d < lo || d > hi || (loOpen && d == lo))
        return badParameter(key, fmt::format("{} must be in {}{}, {}]", key, loOpen ? "(" : "[", lo, hi));
    out = float(d);
    return std::nullopt;
}

std::optional<ApiError> readInt(const json& body, const char* key, std::optional<int64_t>& out) {
    const json& v = field(body, key);
    if (v.is_null()) return std::nullopt;
    if (!v.is_number_integer()) return badParameter(key, fmt::format("{} must be an integer, not {}", key, typeName(v)));
    out = v.get<int64_t>();
    return std::nullopt;
}

std::optional<ApiError> readBool(const json& body, const char* key, bool& out) {
    const json& v = field(body, key);
    if (v.is_null()) return std::nullopt;
    if (!v.is_boolean()) return badParameter(key, fmt::format("{} must be true or false, not {}", key, typeName(v)));
    out = v.get<bool>();
    return std::nullopt;
}

// A message's content: a string, or an array of {"type": "text", "text": ...} parts.
std::optional<std::string> contentText(const json& content) {
    if (content.is_string()) return content.get<std::string>();
    if (!content.is_array()) return std::nullopt;
    std::string text;
    for (const json& part : content) {
        if (!part.is_object() || field(part, "type") != "text" || !field(part, "text").is_string()) return std::nullopt;
        text += part["text"].get<std::string>();
    }
    return text;
}

std::optional<ApiError> readMessages(const json& body, ServeRequest& r) {
    const json& m = field(body, "messages");
    if (!m.is_array() || m.empty()) return badParameter("messages", "messages must be a non-empty array of {role, content}");
    for (size_t i = 0; i < m.size(); ++i) {
        const std::string param = fmt::format("messages[{}]", i);
        if (!m[i].is_object()) return badParameter(param, param + " must be an object");
        const json& role = field(m[i], "role");
        ChatMessage msg;
        if (role == "system" || role == "developer") msg.role = ChatRole::System;
        else if (role == "user") msg.role = ChatRole::User;
        else if (role == "assistant") msg.role = ChatRole::Assistant;
        else if (role == "tool") msg.toolResult = true;  // a call's result, in a user's place
        else return badParameter(param + ".role", param + ".role must be system, developer, user, assistant or tool");
        if (auto e = request_detail::readToolParts(m[i], param, msg)) return e;
        const json& content = field(m[i], "content");
        const auto text = content.is_null() && !msg.toolCalls.empty() ? std::optional<std::string>("") : contentText(content);
        if (!text) return badParameter(param + ".content", param + ".content must be a string or an array of text parts");
        msg.content = *text;
        r.messages.push_back(std::move(msg));
    }
    return std::nullopt;
}

std::optional<ApiError> readPrompt(const json& body, ServeRequest& r) {
    const json& p = field(body, "prompt");
    if (p.is_string()) r.prompt = p.get<std::string>();
    else if (p.is_array() && p.size() == 1 && p[0].is_string()) r.prompt = p[0].get<std::string>();
    else return badParameter("prompt", "prompt must be a string (or an array of one string)");
    return std::nullopt;
}

std::optional<ApiError> readStop(const json& body, ServeRequest& r) {
    const json& s = field(body, "stop");
    if (s.is_null()) return std::nullopt;
    if (s.is_string()) {
        if (!s.get<std::string>().empty()) r.stop.push_back(s.get<std::string>());
        return std::nullopt;
    }
    if (!s.is_array() || s.size() > kMaxStopStrings)
        return badParameter("stop", fmt::format("stop must be a string or an array of at most {} strings", kMaxStopStrings));
    for (const json& one : s) {
        if (!one.is_string()) return badParameter("stop", "stop must hold strings only");
        if (!one.get<std::string>().empty()) r.stop.push_back(one.get<std::string>());
    }
    return std::nullopt;
}

std::optional<ApiError> readLogprobs(const json& body, ServeRequest& r) {
    std::optional<int64_t> top;
    if (r.endpoint == Endpoint::Chat) {
        if (auto e = readBool(body, "logprobs", r.logprobs)) return e;
        if (auto e = readInt(body, "top_logprobs", top)) return e;
        if (top && (*top < 0 || *top > kMaxTopLogprobs))
            return badParameter("top_logprobs", fmt::format("top_logprobs must be between 0 and {}", kMaxTopLogprobs));
        if (top && *top > 0 && !r.logprobs) return badParameter("top_logprobs", "top_logprobs needs logprobs: true");
    } else {
        // The legacy endpoint's logprobs is the number of alternatives (OpenAI allows 5; we allow 20).
        if (auto e = readInt(body, "logprobs", top)) return e;
        if (top && (*top < 0 || *top > kMaxTopLogprobs))
            return badParameter("logprobs", fmt::format("logprobs must be between 0 and {}", kMaxTopLogprobs));
        r.logprobs = top.has_value();
    }
    r.topLogprobs = int32_t(top.value_or(0));
    return std::nullopt;
}

// logit_bias: {"token id": bias in [-100, 100]}, at most kMaxLogitBias entries. The ids are
// checked against the vocabulary by the server (it knows its size).
std::optional<ApiError> readLogitBias(const json& body, SamplerParams& s) {
    const json& b = field(body, "logit_bias");
    if (b.is_null()) return std::nullopt;
    if (!b.is_object()) return badParameter("logit_bias", "logit_bias must be an object of token ids to biases");
    if (b.size() > kMaxLogitBias) return badParameter("logit_bias", fmt::format("logit_bias may hold at most {} tokens", kMaxLogitBias));
    for (const auto& [key, value] : b.items()) {
        int32_t id = -1;
        const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
        if (ec != std::errc() || end != key.data() + key.size() || id < 0 || key.empty() || key.size() > 10)
            return badParameter("logit_bias", "logit_bias's keys must be token ids (whole numbers from 0)");
        if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < -100 || value.get<double>() > 100)
            return badParameter("logit_bias", "logit_bias's values must be numbers in [-100, 100]");
        s.logitBias.emplace_back(id, value.get<float>());
    }
    return std::nullopt;
}

// Fields that would change the answer and that this server does not implement: refused by name
// rather than silently ignored. Each is let through when its value asks for nothing.
std::optional<ApiError> refuseUnimplemented(const json& body, Endpoint endpoint) {
    auto isNeutral = [](const std::string& key, const json& v) {
        if (v.is_null()) return true;
        if (v.is_boolean()) return !v.get<bool>();                        // echo: false, ...
        if (v.is_array() || v.is_object() || v.is_string()) {
            if (key == "modalities") return v == json::array({"text"});
            if (key == "tool_choice") return v.is_string() && v.get<std::string>() == "none";
            return v.empty();                                             // tools: [], stop_token_ids: [], suffix: ""
        }
        if (v.is_number()) {
            const double d = v.get<double>();
            if (key == "best_of" || key == "typical_p" || key == "tfs_z" || key == "length_penalty") return d == 1;  // their "off"
            if (key == "top_n_sigma") return d <= 0;
            return d == 0;                                                // min_tokens: 0, mirostat: 0, ...
        }
        return false;
    };
    static const char* const kUnimplemented[] = {
        "tools", "tool_choice", "functions", "function_call", "guided_json",
        "guided_regex", "guided_choice", "guided_grammar", "structured_outputs", "suffix", "best_of", "min_tokens",
        "stop_token_ids", "bad_words", "typical_p", "tfs_z", "mirostat",
        "dry_multiplier", "xtc_probability", "top_n_sigma", "use_beam_search", "length_penalty",
        "truncate_prompt_tokens", "prediction", "audio", "modalities", "reasoning_effort"};
    for (const char* key : kUnimplemented) {
        if (endpoint == Endpoint::Chat && (std::string_view(key) == "tools" || std::string_view(key) == "tool_choice")) continue;  // openai_tools.cpp
        const auto it = body.find(key);
        if (it != body.end() && !isNeutral(key, *it))
            return badParameter(key, fmt::format("{} is not supported by this server (it would change the answer); leave it out", key));
    }
    return std::nullopt;
}

std::optional<ApiError> readSampling(const json& body, ServeRequest& r) {
    SamplerParams& s = r.sampler;
    s = SamplerParams{};
    s.temperature = 1.0f;
    s.topP = 1.0f;
    s.topK = 0;
    s.minP = 0.0f;
    s.repeatPenalty = 1.0f;
    if (auto e = readNumber(body, "temperature", s.temperature, 0, 2, false)) return e;
    if (auto e = readNumber(body, "top_p", s.topP, 0, 1, true)) return e;
    if (auto e = readNumber(body, "min_p", s.minP, 0, 1, false)) return e;
    if (auto e = readNumber(body, "repeat_penalty", s.repeatPenalty, 0, 1e6, true)) return e;
    // vLLM's name for the same; both given (as the app sends them) must agree.
    float repetition = s.repeatPenalty;
    if (auto e = readNumber(body, "repetition_penalty", repetition, 0, 1e6, true)) return e;
    if (!field(body, "repeat_penalty").is_null() && repetition != s.repeatPenalty)
        return badParameter("repetition_penalty", "repetition_penalty and repeat_penalty differ; give one");
    s.repeatPenalty = repetition;
    if (auto e = readNumber(body, "presence_penalty", s.presencePenalty, -2, 2, false)) return e;
    if (auto e = readNumber(body, "frequency_penalty", s.frequencyPenalty, -2, 2, false)) return e;
    std::optional<int64_t> lastN;
    if (auto e = readInt(body, "repeat_last_n", lastN)) return e;
    if (lastN && (*lastN < -1 || *lastN > INT32_MAX)) return badParameter("repeat_last_n", "repeat_last_n must be >= -1 (-1: the whole context, 0: off)");
    if (lastN) s.repeatLastN = int32_t(*lastN);
    if (auto e = readLogitBias(body, s)) return e;
    std::optional<int64_t> topK, seed, maxTokens, n;
    if (auto e = readInt(body, "top_k", topK)) return e;
    if (topK && (*topK < -1 || *topK > INT32_MAX)) return badParameter("top_k", "top_k must be >= 0 (0 or -1: off)");
    if (topK) s.topK = std::max<int32_t>(0, int32_t(*topK));
    if (auto e = readInt(body, "seed", seed)) return e;
    if (seed) r.seed = uint64_t(*seed);
    // max_completion_tokens is the chat endpoint's newer name for max_tokens.
    for (const char* key : {"max_tokens", "max_completion_tokens"}) {
        if (auto e = readInt(body, key, maxTokens)) return e;
        // 0: only the prompt's log-probabilities (echo), as OpenAI's legacy endpoint allows.
        const int64_t least = r.endpoint == Endpoint::Completion && r.echo ? 0 : 1;
        if (maxTokens && (*maxTokens < least || *maxTokens > INT32_MAX))
            return badParameter(key, least == 0 ? fmt::format("{} must be at least 0", key) : fmt::format("{} must be at least 1", key));
        if (maxTokens) r.maxTokens = int32_t(*maxTokens);
        maxTokens.reset();
    }
    if (auto e = readInt(body, "n", n)) return e;
    if (n && *n != 1) return badParameter("n", "n must be 1 (one choice per request)");
    return std::nullopt;
}

}  // namespace

ApiError badParameter(std::string param, std::string message) {
    return ApiError{400, std::move(message), "invalid_request_error", std::move(param), {}};
}

nlohmann::ordered_json errorJson(const ApiError& error) {
    nlohmann::ordered_json e = nlohmann::ordered_json::object();
    e["message"] = error.message;
    e["type"] = error.type;
    e["param"] = error.param.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(error.param);
    e["code"] = error.code.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(error.code);
    return {{"error", e}};
}

std::expected<ServeRequest, ApiError> parseServeRequest(std::string_view body, Endpoint endpoint) {
    if (auto shape = jsonShapeError(body))  // before parsing: only bounded trees are ever built
        return std::unexpected(ApiError{400, *shape, "invalid_request_error", {}, "invalid_json"});
    json j;
    try {
        j = json::parse(body);  // strict: invalid UTF-8 in a string is a parse error too
    } catch (const json::parse_error& e) {  // its what() quotes the body: only the position is said
        return std::unexpected(ApiError{400, fmt::format("the request body is not valid JSON (at byte {})", e.byte), "invalid_request_error", {}, "invalid_json"});
    } catch (const json::exception&) {
        return std::unexpected(ApiError{400, "the request body is not valid JSON", "invalid_request_error", {}, "invalid_json"});
    }
    if (!j.is_object()) return std::unexpected(ApiError{400, "the request body must be a JSON object", "invalid_request_error", {}, "invalid_json"});
    ServeRequest r;
    r.endpoint = endpoint;
    const json& model = field(j, "model");
    if (!model.is_null() && !model.is_string()) return std::unexpected(badParameter("model", "model must be a string"));
    if (model.is_string()) r.model = model.get<std::string>();
    std::optional<ApiError> error = endpoint == Endpoint::Chat ? readMessages(j, r) : readPrompt(j, r);
    // echo: the completion endpoint's (read first: it allows max_tokens 0); the chat endpoint has none.
    if (!error) {
        error = readBool(j, "echo", r.echo);
        if (!error && r.echo && endpoint == Endpoint::Chat)
            error = badParameter("echo", "echo is not supported by this server on chat completions (it would change the answer); leave it out");
    }
    if (!error) error = readSampling(j, r);
    if (!error) error = readBool(j, "ignore_eos", r.ignoreEos);
    if (!error) error = readStop(j, r);
    if (!error) error = readLogprobs(j, r);
    if (!error) error = readBool(j, "stream", r.stream);
    if (!error) {
        const json& options = field(j, "stream_options");
        if (!options.is_null() && !options.is_object()) error = badParameter("stream_options", "stream_options must be an object");
        else if (options.is_object()) error = readBool(options, "include_usage", r.includeUsage);
    }
    if (!error && endpoint == Endpoint::Chat) {
        const bool lastIsAnswer = r.messages.back().role == ChatRole::Assistant && r.messages.back().toolCalls.empty();
        std::optional<bool> cont;
        if (const json& c = field(j, "continue_final_message"); !c.is_null()) {
            if (!c.is_boolean()) error = badParameter("continue_final_message", "continue_final_message must be true or false");
            else cont = c.get<bool>();
        }
        if (!error && cont.value_or(false) && !lastIsAnswer)
            error = badParameter("continue_final_message", "continue_final_message needs the last message to be the assistant's");
        r.continueFinalMessage = lastIsAnswer && cont.value_or(true);
        // vLLM's companion flag: a new assistant turn is opened exactly when none is continued.
        if (const json& a = field(j, "add_generation_prompt"); !error && !a.is_null()) {
            if (!a.is_boolean()) error = badParameter("add_generation_prompt", "add_generation_prompt must be true or false");
            else if (a.get<bool>() == r.continueFinalMessage)
                error = badParameter("add_generation_prompt", r.continueFinalMessage ? "add_generation_prompt must be false when the last message is continued"
                                                                                    : "add_generation_prompt false (no new assistant turn) is only for continuing a last assistant message");
        }
    }
    if (!error) error = refuseUnimplemented(j, endpoint);
    if (!error) error = readLogprobExtensions(j, r);
    if (!error) error = readStructuredOutput(j, body, r);
    if (!error && endpoint == Endpoint::Chat) error = request_detail::readTools(j, body, r);
    if (!error && r.toolChoice != ToolChoice::None && r.format != OutputFormat::Text)
        error = badParameter("tools", "tools cannot be combined with response_format, grammar or json_schema; give one");
    if (error) return std::unexpected(*error);
    r.sampler.topN = r.topLogprobs;
    if (r.logprobs && r.logprobsMode == LogprobsMode::Processed) r.sampler.finalTopN = r.topLogprobs;
    return r;
}

}  // namespace inferscope::server
