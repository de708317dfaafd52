// The log-probability extensions of an OpenAI request (see openai_request.h): vLLM's
// `prompt_logprobs` and `logprobs_mode`, and our `logprob_token_ids`. Read after `logprobs` and
// `stream`, whose values they depend on. Nothing of the client's values is repeated in a message.
#include <fmt/format.h>

#include <algorithm>

#include "server/openai_request_detail.h"

namespace inferscope::server::request_detail {

using nlohmann::json;

std::optional<ApiError> readLogprobExtensions(const json& body, ServeRequest& r) {
    if (const json& v = field(body, "prompt_logprobs"); !v.is_null()) {
        if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > kMaxTopLogprobs)
            return badParameter("prompt_logprobs", fmt::format("prompt_logprobs must be an integer between 0 and {}", kMaxTopLogprobs));
        if (r.stream) return badParameter("prompt_logprobs", "prompt_logprobs is not available with stream: true");
        r.promptLogprobs = int32_t(v.get<int64_t>());
    }
    if (const json& v = field(body, "logprob_token_ids"); !v.is_null()) {
        if (!v.is_array()) return badParameter("logprob_token_ids", "logprob_token_ids must be an array of token ids");
        if (v.size() > kMaxLogprobTokenIds)
            return badParameter("logprob_token_ids", fmt::format("logprob_token_ids may name at most {} tokens", kMaxLogprobTokenIds));
        for (const json& id : v) {
            if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
                return badParameter("logprob_token_ids", "logprob_token_ids must hold token ids (whole numbers from 0)");
            const int32_t token = int32_t(id.get<int64_t>());
            if (std::find(r.logprobTokenIds.begin(), r.logprobTokenIds.end(), token) != r.logprobTokenIds.end())
                return badParameter("logprob_token_ids", "logprob_token_ids names a token twice");
            r.logprobTokenIds.push_back(token);
        }
        if (!r.logprobTokenIds.empty() && !r.logprobs)
            return badParameter("logprob_token_ids", r.endpoint == Endpoint::Chat ? "logprob_token_ids needs logprobs: true"
                                                                                  : "logprob_token_ids needs logprobs (a number of alternatives, 0 or more)");
    }
    if (const json& v = field(body, "logprobs_mode"); !v.is_null()) {
        const std::string mode = v.is_string() ? v.get<std::string>() : std::string();
        if (mode == "raw_logprobs") r.logprobsMode = LogprobsMode::Raw;
        else if (mode == "processed_logprobs") r.logprobsMode = LogprobsMode::Processed;
        else return badParameter("logprobs_mode", "logprobs_mode must be \"raw_logprobs\" or \"processed_logprobs\"");
    }
    return std::nullopt;
}

}  // namespace inferscope::server::request_detail
