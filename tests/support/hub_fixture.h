#pragma once
// A fixture of the Hugging Face hub on 127.0.0.1 for the catalog's tests: the subset of the API
// the client uses (GET /api/models?search=, /api/models/<repo>/tree/<rev>, /<repo>/resolve/<rev>/<file>
// answered with a 302 to a second listener, the "CDN", on another port: another origin), Range
// requests (206 with Content-Range), ETag and X-Linked-Etag/Size, and faults to order: a connection
// cut at 40% of a file, a wrong sha256 in the listing, 429 (Retry-After) then success, 403 for a
// gated repository, 404, a stall. Written on Boost.Beast's parser (as server/http/ uses it) with
// blocking sockets: one thread per listener, one connection at a time, loopback only. Every
// request is recorded (target, Range, whether it carried a token) for the tests to assert on.
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <openssl/evp.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace inferscope::testing_hub {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

inline std::string sha256Hex(const std::string& bytes) {
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_Digest(bytes.data(), bytes.size(), d, &n, EVP_sha256(), nullptr);
    std::string out;
    char buf[3];
    for (unsigned i = 0; i < n; ++i) std::snprintf(buf, sizeof buf, "%02x", d[i]), out += buf;
    return out;
}

struct RecordedRequest {
    std::string listener;  // "hub" or "cdn"
    std::string target;
    std::string range;     // the Range header, "" when none
    bool token = false;    // an Authorization header came
};

class HubFixture {
public:
    // Faults, set by the tests before a request.
    std::atomic<int> cutAtPercent{0};       // the next CDN body is cut (socket closed) at this percent, once
    std::atomic<bool> cutEveryTime{false};  // ... and every later one too
    std::atomic<int> tooManyRequests{0};    // this many answers of 429 (Retry-After: 1) before the next success
    std::atomic<bool> stallNext{false};     // the next CDN body sends 10% and then nothing until the client leaves
    std::atomic<bool> wrongHash{false};     // the listing gives a sha256 that is not the file's
    std::atomic<bool> ignoreRange{false};   // the CDN answers 200 with the whole file whatever the Range

    HubFixture() : hub_(io_), cdn_(io_) {
        open(hub_);
        open(cdn_);
        hubThread_ = std::thread([this] { serve(hub_, "hub"); });
        cdnThread_ = std::thread([this] { serve(cdn_, "cdn"); });
    }
    ~HubFixture() {
        stopping_ = true;
        stallCv_.notify_all();
        boost::system::error_code ec;
        // Wake each accept with a connection of our own, then join.
        for (auto* a : {&hub_, &cdn_}) {
            tcp::socket s(io_);
            s.connect(a->local_endpoint(), ec);
        }
        hubThread_.join();
        cdnThread_.join();
    }

    std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(hub_.local_endpoint().port()); }
    std::string cdnOrigin() const { return "http://127.0.0.1:" + std::to_string(cdn_.local_endpoint().port()); }

    void addFile(const std::string& repo, const std::string& path, std::string bytes) {
        std::lock_guard lock(m_);
        files_[repo][path] = std::move(bytes);
    }
    // A gated repository: 403 unless the request carries `acceptedToken` (the token of an account
    // that accepted its conditions), as the hub answers.
    void addGatedRepo(const std::string& repo, const std::string& acceptedToken = "") {
        std::lock_guard lock(m_);
        gated_.push_back({repo, acceptedToken});
    }
    std::vector<RecordedRequest> requests() const {
        std::lock_guard lock(m_);
        return log_;
    }
    void clearRequests() {
        std::lock_guard lock(m_);
        log_.clear();
    }

private:
    void open(tcp::acceptor& a) {
        a.open(tcp::v4());
        a.set_option(tcp::acceptor::reuse_address(true));
        a.bind(tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
        a.listen();
    }

    static std::string head(int status, const std::string& reason, const std::vector<std::pair<std::string, std::string>>& fields,
                            uint64_t length) {
        std::string h = "HTTP/1.1 " + std::to_string(status) + " " + reason + "\r\n";
        for (const auto& [k, v] : fields) h += k + ": " + v + "\r\n";
        h += "Content-Length: " + std::to_string(length) + "\r\nConnection: close\r\n\r\n";
        return h;
    }
    static void send(tcp::socket& s, const std::string& bytes) {
        boost::system::error_code ec;
        asio::write(s, asio::buffer(bytes), ec);
    }

    void serve(tcp::acceptor& acceptor, const std::string& name) {
        for (int served = 0; served < 10000 && !stopping_; ++served) {
            tcp::socket socket(io_);
            boost::system::error_code ec;
            acceptor.accept(socket, ec);
            if (ec || stopping_) return;
            boost::beast::flat_buffer buffer;
            http::request_parser<http::empty_body> parser;
            parser.header_limit(16 * 1024);
            http::read(socket, buffer, parser, ec);
            if (ec) continue;
            const auto& req = parser.get();
            RecordedRequest rec{name, std::string(req.target()), std::string(req[http::field::range]),
                                req.find(http::field::authorization) != req.end()};
            {
                std::lock_guard lock(m_);
                log_.push_back(rec);
            }
            if (name == "hub") answerHub(socket, rec.target, std::string(req[http::field::authorization]));
            else answerCdn(socket, rec);
            socket.shutdown(tcp::socket::shutdown_both, ec);
        }
    }

    // The hub: listings and the resolve redirect.
    void answerHub(tcp::socket& s, const std::string& target, const std::string& authorization) {
        if (tooManyRequests > 0) {
            --tooManyRequests;
            return send(s, head(429, "Too Many Requests", {{"Retry-After", "1"}}, 0));
        }
        std::lock_guard lock(m_);
        if (target.starts_with("/api/models?")) {
            std::string body = "[";
            const size_t at = target.find("search=");
            const std::string wanted = at == std::string::npos ? "" : target.substr(at + 7, target.find('&', at) - at - 7);
            for (const auto& [repo, files] : files_) {
                if (wanted.empty() || repo.find(wanted) == std::string::npos) continue;
                body += std::string(body.size() > 1 ? "," : "") + "{\"id\":\"" + repo + "\",\"downloads\":" + std::to_string(1000 + files.size()) +
                        ",\"likes\":3,\"gated\":false,\"lastModified\":\"2025-01-01T00:00:00.000Z\"}";
            }
            body += "]";
            return send(s, head(200, "OK", {{"Content-Type", "application/json"}}, body.size()) + body);
        }
        for (const auto& [repo, accepted] : gated_)
            if (target.find("/" + repo + "/") != std::string::npos && (accepted.empty() || authorization != "Bearer " + accepted))
                return send(s, head(403, "Forbidden", {{"X-Error-Code", "GatedRepo"}}, 0));
        for (const auto& [repo, files] : files_) {
            if (target.starts_with("/api/models/" + repo + "/tree/")) {
                std::string body = "[";
                for (const auto& [path, bytes] : files) {
                    std::string sha = sha256Hex(bytes);
                    if (wrongHash) sha = sha256Hex(bytes + "x");
                    body += std::string(body.size() > 1 ? "," : "") + "{\"type\":\"file\",\"oid\":\"abc\",\"size\":" + std::to_string(bytes.size()) +
                            ",\"path\":\"" + path + "\",\"lfs\":{\"oid\":\"" + sha + "\",\"size\":" + std::to_string(bytes.size()) +
                            ",\"pointerSize\":134}}";
                }
                body += ",{\"type\":\"file\",\"oid\":\"def\",\"size\":12,\"path\":\"README.md\"},{\"type\":\"directory\",\"oid\":\"x\",\"size\":0,\"path\":\"sub\"}]";
                return send(s, head(200, "OK", {{"Content-Type", "application/json"}}, body.size()) + body);
            }
            const std::string prefix = "/" + repo + "/resolve/main/";
            if (target.starts_with(prefix)) {
                const std::string path = target.substr(prefix.size());
                auto it = files.find(path);
                if (it == files.end()) break;
                const std::string sha = sha256Hex(it->second);
                // The hub's way: 302 to its CDN with the file's hash as ETag.
                return send(s, head(302, "Found", {{"Location", cdnOrigin() + "/blobs/" + sha + "?repo=" + repo + "&file=" + path},
                                                   {"X-Linked-Etag", "\"" + sha + "\""},
                                                   {"X-Linked-Size", std::to_string(it->second.size())},
                                                   {"ETag", "\"pointer\""}}, 0));
            }
        }
        send(s, head(404, "Not Found", {{"X-Error-Code", "EntryNotFound"}}, 0));
    }

    // The CDN: the bytes, with Range, and the faults.
    void answerCdn(tcp::socket& s, const RecordedRequest& rec) {
        std::string bytes;
        {
            std::lock_guard lock(m_);
            for (const auto& [repo, files] : files_)
                for (const auto& [path, b] : files)
                    if (rec.target.find("/blobs/" + sha256Hex(b)) == 0) bytes = b;
        }
        if (bytes.empty()) return send(s, head(404, "Not Found", {}, 0));
        std::string etag(1, '"');  // appended, not "\"" + …: GCC 12 at -O3 warns of a false -Wrestrict on that
        etag += sha256Hex(bytes);
        etag += '"';
        uint64_t start = 0, end = bytes.size() - 1;
        bool partial = false;
        if (!rec.range.empty() && !ignoreRange) {
            if (std::sscanf(rec.range.c_str(), "bytes=%lu-%lu", &start, &end) < 1) return send(s, head(400, "Bad Request", {}, 0));
            end = std::min<uint64_t>(end, bytes.size() - 1);
            if (start >= bytes.size())
                return send(s, head(416, "Range Not Satisfiable", {{"Content-Range", "bytes */" + std::to_string(bytes.size())}}, 0));
            partial = true;
        }
        const std::string body = bytes.substr(start, end - start + 1);
        std::vector<std::pair<std::string, std::string>> fields{{"ETag", etag}, {"Accept-Ranges", "bytes"}};
        if (partial) fields.push_back({"Content-Range", "bytes " + std::to_string(start) + "-" + std::to_string(end) + "/" + std::to_string(bytes.size())});
        const std::string h = head(partial ? 206 : 200, partial ? "Partial Content" : "OK", fields, body.size());
        if (const int cut = cutAtPercent.load(); cut > 0 && body.size() > 1000) {
            if (!cutEveryTime) cutAtPercent = 0;
            // Cut at that percent of the whole file (from where this answer starts).
            const uint64_t at = std::max<uint64_t>(start + 1, bytes.size() * uint64_t(cut) / 100);
            return send(s, h + body.substr(0, size_t(std::min<uint64_t>(body.size(), at > start ? at - start : 1))));
        }
        if (stallNext.exchange(false)) {
            send(s, h + body.substr(0, body.size() / 10));
            std::unique_lock lock(m_);
            // Nothing more until the client gives up (it closes its end) or the fixture stops; bounded.
            for (int i = 0; i < 600 && !stopping_; ++i) {
                stallCv_.wait_for(lock, std::chrono::milliseconds(100));
                lock.unlock();
                boost::system::error_code ec;
                s.non_blocking(true);
                char c;
                const size_t n = s.read_some(asio::buffer(&c, 1), ec);
                s.non_blocking(false);
                lock.lock();
                if ((n == 0 && ec != asio::error::would_block) || ec == asio::error::eof) break;
            }
            return;
        }
        send(s, h + body);
    }

    asio::io_context io_;
    tcp::acceptor hub_, cdn_;
    std::thread hubThread_, cdnThread_;
    std::atomic<bool> stopping_{false};
    mutable std::mutex m_;
    std::condition_variable stallCv_;
    std::map<std::string, std::map<std::string, std::string>> files_;
    std::vector<std::pair<std::string, std::string>> gated_;  // repository, the token it accepts
    std::vector<RecordedRequest> log_;
};

}  // namespace inferscope::testing_hub
