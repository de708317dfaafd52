#pragma once
// One line per request, as it ends, to stderr or a file (--log-file):
//
//   2026-12-04T16:55:01.123Z 127.0.0.1 POST /v1/chat/completions 200 5321 B 812 ms key 1
//
// time (UTC), the peer's address, method and path (query dropped), status, bytes sent (head and
// body), time from the head's arrival to the last byte, and the key as ApiKeys::masked names it
// ("-": none needed or none matched). What the client sent is escaped (\xNN for any byte outside
// printable ASCII, backslash and space) and cut to 200 bytes, so a line is always one line.

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>

namespace inferscope::server {

struct AccessRecord {
    std::string remoteAddress, method, target, key = "-";
    int status = 0;
    uint64_t bytesSent = 0;
    std::chrono::microseconds duration{0};
};

// The line (without its newline) for `record` at `when`.
std::string accessLine(const AccessRecord& record, std::chrono::system_clock::time_point when);
// Printable, one-line and at most maxBytes (+ "…") of untrusted text.
std::string escapedForLog(std::string_view text, size_t maxBytes = 200);

class AccessLog {
public:
    // stderr when path is empty. Error text in error() when the file cannot be opened.
    explicit AccessLog(const std::string& path = {});
    ~AccessLog();
    bool ok() const { return out_ != nullptr; }
    void write(const AccessRecord& record);

private:
    std::mutex mutex_;
    std::FILE* out_ = nullptr;
    bool owned_ = false;
};

}  // namespace inferscope::server
