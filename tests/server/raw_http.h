#pragma once
// HTTP/1.1 over plain POSIX sockets for the server tests: connect (from any loopback source
// address), send bytes exactly as given, and read one response (Content-Length or chunked, or up
// to the close) with a deadline and a size cap. Written apart from the server's HTTP library on
// purpose: a test client that shares the server's parser would share its mistakes.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace inferscope::testing_http {

// A connection to 127.0.0.1:port, from `source` (any 127.x.y.z: other "clients") when given; a small
// receive buffer (set before connecting, so the window stays small) makes a server that streams to
// a client not reading wait in its write. -1 on failure.
inline int connectTo(int port, int receiveBuffer = 0, const char* source = nullptr) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (receiveBuffer > 0) ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receiveBuffer, sizeof receiveBuffer);
    if (source) {
        sockaddr_in from{};
        from.sin_family = AF_INET;
        ::inet_pton(AF_INET, source, &from.sin_addr);
        if (::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0) {
            ::close(fd);
            return -1;
        }
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(uint16_t(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

// Sends all of `data` (false when the peer closed or reset).
inline bool sendAll(int fd, std::string_view data) {
    while (!data.empty()) {
        const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
        if (n <= 0) return false;
        data.remove_prefix(size_t(n));
    }
    return true;
}

struct Response {
    int status = 0;
    std::vector<std::pair<std::string, std::string>> headers;  // names lower case
    std::string body;
    bool complete = false;  // the whole body arrived as framed
    std::string header(const std::string& name) const {
        for (const auto& [k, v] : headers)
            if (k == name) return v;
        return {};
    }
};

// Reads from fd with a deadline; keeps what it has. Returns false on EOF, error or deadline.
class Reader {
public:
    Reader(int fd, std::chrono::milliseconds timeout, size_t maxBytes)
        : fd_(fd), deadline_(std::chrono::steady_clock::now() + timeout), max_(maxBytes) {}
    bool more() {
        if (buf_.size() >= max_) return false;
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - std::chrono::steady_clock::now()).count();
        if (left <= 0) return false;
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, int(left)) <= 0) return false;
        char chunk[65536];
        const ssize_t n = ::recv(fd_, chunk, std::min(sizeof chunk, max_ - buf_.size()), 0);
        if (n <= 0) return false;
        buf_.append(chunk, size_t(n));
        return true;
    }
    // The text up to and without `delim`, consumed with it; nothing when it does not come.
    std::optional<std::string> until(std::string_view delim) {
        for (;;) {
            const size_t at = buf_.find(delim, pos_);
            if (at != std::string::npos) {
                std::string out = buf_.substr(pos_, at - pos_);
                pos_ = at + delim.size();
                return out;
            }
            if (!more()) return std::nullopt;
        }
    }
    std::optional<std::string> exactly(size_t n) {
        while (buf_.size() - pos_ < n)
            if (!more()) return std::nullopt;
        std::string out = buf_.substr(pos_, n);
        pos_ += n;
        return out;
    }
    std::string rest() {
        while (more()) {
        }
        std::string out = buf_.substr(pos_);
        pos_ = buf_.size();
        return out;
    }

private:
    int fd_;
    std::chrono::steady_clock::time_point deadline_;
    size_t max_;
    std::string buf_;
    size_t pos_ = 0;
};

// One response from fd (1xx interim responses skipped), within `timeout`, at most maxBytes read.
inline std::optional<Response> readResponse(int fd, std::chrono::milliseconds timeout = std::chrono::seconds(120), size_t maxBytes = 256u << 20) {
    Reader in(fd, timeout, maxBytes);
    Response r;
    for (;;) {
        auto head = in.until("\r\n\r\n");
        if (!head) return std::nullopt;
        const size_t sp = head->find(' ');
        if (head->rfind("HTTP/1.", 0) != 0 || sp == std::string::npos) return std::nullopt;
        r.status = std::atoi(head->c_str() + sp + 1);
        r.headers.clear();
        size_t at = head->find("\r\n");
        while (at != std::string::npos) {
            const size_t next = head->find("\r\n", at + 2);
            const std::string line = head->substr(at + 2, next == std::string::npos ? std::string::npos : next - at - 2);
            const size_t colon = line.find(':');
            if (colon != std::string::npos) {
                std::string name = line.substr(0, colon);
                std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return char(std::tolower(c)); });
                std::string value = line.substr(colon + 1);
                value.erase(0, value.find_first_not_of(' '));
                r.headers.emplace_back(std::move(name), std::move(value));
            }
            at = next;
        }
        if (r.status >= 200) break;
    }
    if (const std::string length = r.header("content-length"); !length.empty()) {
        auto body = in.exactly(std::stoull(length));
        r.complete = body.has_value();
        if (body) r.body = std::move(*body);
    } else if (r.header("transfer-encoding") == "chunked") {
        for (;;) {
            auto size = in.until("\r\n");
            if (!size) break;
            const size_t n = std::stoull(*size, nullptr, 16);
            auto data = in.exactly(n + 2);
            if (!data) break;
            if (n == 0) {
                r.complete = true;
                break;
            }
            r.body += data->substr(0, n);
        }
    } else {
        r.body = in.rest();
        r.complete = true;
    }
    return r;
}

// A request as bytes: method, path, Host 127.0.0.1, the headers given, the body with its length.
inline std::string requestText(const std::string& method, const std::string& path, const std::string& body = {},
                               const std::vector<std::pair<std::string, std::string>>& headers = {{"Content-Type", "application/json"}}) {
    std::string r = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    for (const auto& [k, v] : headers) r += k + ": " + v + "\r\n";
    if (!body.empty() || method == "POST") r += "Content-Length: " + std::to_string(body.size()) + "\r\n";
    return r + "\r\n" + body;
}

// A client with one kept-alive connection, reconnecting when the server closed it.
class Client {
public:
    explicit Client(int port, std::string apiKey = {}) : port_(port), key_(std::move(apiKey)) {}
    ~Client() { disconnect(); }
    Client(const Client&) = delete;
    Client& operator=(const Client&) = delete;

    std::optional<Response> get(const std::string& path) { return request("GET", path, {}, {}); }
    std::optional<Response> post(const std::string& path, const std::string& body,
                                 std::vector<std::pair<std::string, std::string>> headers = {{"Content-Type", "application/json"}}) {
        return request("POST", path, body, std::move(headers));
    }
    std::optional<Response> request(const std::string& method, const std::string& path, const std::string& body,
                                    std::vector<std::pair<std::string, std::string>> headers) {
        if (!key_.empty()) headers.emplace_back("Authorization", "Bearer " + key_);
        const std::string text = requestText(method, path, body, headers);
        for (int attempt = 0; attempt < 2; ++attempt) {
            if (fd_ < 0) fd_ = connectTo(port_);
            if (fd_ < 0) return std::nullopt;
            if (sendAll(fd_, text)) {
                auto r = readResponse(fd_);
                if (r) {
                    if (r->header("connection") == "close") disconnect();
                    return r;
                }
            }
            disconnect();  // a kept-alive connection the server had closed: once more on a new one
        }
        return std::nullopt;
    }
    void disconnect() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }

private:
    int port_;
    std::string key_;
    int fd_ = -1;
};

}  // namespace inferscope::testing_http
