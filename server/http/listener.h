#pragma once
// The HTTP/1.1 transport of `inferscope-cli serve` (Boost.Beast's parser on Boost.Asio): one
// network thread multiplexes every connection, so a slow or idle client costs a socket and a few
// KiB, never a thread. Everything a client sends is bounded before it is buffered:
//
//   - connections: at most maxConnections open, maxConnectionsPerAddress from one address (more
//     are answered 503 and closed);
//   - the head (request line and header fields): maxHeaderBytes (431), and the whole head must
//     arrive within headTimeout of the first byte (a client that trickles it is cut off); an idle
//     kept-alive connection is closed after idleTimeout;
//   - the body: the policy (Handler::onHead) sees the head first and may refuse it unread; then
//     at most maxBodyBytes of body, however framed (Content-Length or chunked; a request with
//     neither has no body), within bodyTimeout (413, 408), and all bodies held at once within
//     maxBufferedBodyBytes (503);
//   - the answer: a stream's unsent bytes are bounded (Exchange::send waits), and a write that
//     makes no progress for writeTimeout ends the connection.
//
// shutdown() (any thread): stops accepting, closes idle connections, tells every exchange in
// flight that the server is stopping, and ends run() when they are answered or after `grace`.

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/access_log.h"
#include "server/http/exchange.h"
#include "server/http/request_head.h"

namespace inferscope::server::http {

struct Limits {
    size_t maxConnections = 512;
    size_t maxConnectionsPerAddress = 64;
    size_t maxHeaderBytes = 16 * 1024;
    size_t maxBodyBytes = 4u << 20;
    std::chrono::milliseconds headTimeout{10'000};
    std::chrono::milliseconds bodyTimeout{30'000};
    std::chrono::milliseconds idleTimeout{5'000};
    std::chrono::milliseconds writeTimeout{30'000};
    size_t maxPendingOutput = 256 * 1024;
    // Bodies being read or not yet released by the application (Exchange::releaseBody), all
    // connections together; a request whose body would pass it is answered 503. Counted by
    // Content-Length, or maxBodyBytes for a chunked body.
    size_t maxBufferedBodyBytes = 64u << 20;
};

// What the application decides from a head: refuse it (its body is never read), or go on; the
// headers are added to whatever answers this request; tag and logKey come back with the request.
struct HeadVerdict {
    std::optional<Reply> refusal;
    std::vector<Header> headers;
    int tag = 0;
    std::string logKey = "-";
};

class Handler {
public:
    virtual ~Handler() = default;
    // On the network thread, quickly.
    virtual HeadVerdict onHead(const RequestHead& head) = 0;
    // On the network thread with the body read; must not block: hand work elsewhere. The exchange
    // must be completed (Exchange's rules) for the connection to go on.
    virtual void onRequest(std::shared_ptr<Exchange> exchange, const HeadVerdict& verdict) = 0;
    // One per request, as it ends (also for refusals and transport errors with a status).
    virtual void onAccess(const AccessRecord& record) = 0;
};

class Listener {
public:
    Listener(Limits limits, Handler& handler);
    ~Listener();
    // Binds and listens. The port (the one chosen when port is 0), or an error message.
    std::optional<int> bind(const std::string& host, int port, std::string& error);
    // Serves on the calling thread until shutdown() has finished.
    void run();
    void shutdown(std::chrono::milliseconds grace);
    size_t openConnections() const;  // for /health and the tests

    struct Impl;  // the network thread's state (connection.h)

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace inferscope::server::http
