#pragma once
// The server's API keys: from --api-key, a key file (--api-key-file: one key a line, '#' comments
// and blank lines skipped) and INFERSCOPE_API_KEY, any number of them. A request's
// "Authorization: Bearer KEY" is compared with every key in time that does not depend on where
// the keys differ from what was sent, and the access log names the key that matched only masked.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace inferscope::server {

class ApiKeys {
public:
    ApiKeys() = default;
    explicit ApiKeys(std::vector<std::string> keys) : keys_(std::move(keys)) {}

    // The keys of a key file's text. Error: a line that is not a usable key (it names the line,
    // never its content), or more than kMaxKeys.
    static Result<std::vector<std::string>> parseKeyFile(std::string_view text);
    // The key file at `path` (at most 1 MiB). Error: unreadable, too large, or parseKeyFile's.
    static Result<std::vector<std::string>> readKeyFile(const std::string& path);
    // A key given on the command line or in the environment. Error: empty or not printable ASCII.
    static Result<void> checkKey(std::string_view key);

    bool empty() const { return keys_.empty(); }
    size_t size() const { return keys_.size(); }
    // The index of the key an Authorization header carries ("Bearer KEY", the scheme in any
    // case), or -1. Every key is compared whole, whatever the header holds.
    int match(std::string_view authorization) const;
    // How the access log names key `index`: "key 2", with the last four characters for keys of
    // 16 or more ("key 2 …f3a9").
    std::string masked(int index) const;

    static constexpr size_t kMaxKeys = 10000;
    static constexpr size_t kMaxKeyBytes = 512;

private:
    std::vector<std::string> keys_;
};

}  // namespace inferscope::server
