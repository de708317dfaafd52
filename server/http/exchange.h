#pragma once
// One request in flight between the transport (the network thread, listener.cpp) and whoever
// answers it (a slot's thread, the request thread): the request's head and body, and the answer,
// either whole (reply) or streamed (startStream, send..., finish). Every method is thread-safe.
//
// Rules: the answering side completes every exchange exactly once (reply() or finish()), also
// when the client is gone or the server stops; the transport keeps the connection (and its
// socket) open until then, so gone() may poll the socket meanwhile. send() blocks while more than
// the pending limit is written but unsent (a client that does not read slows the generation
// instead of growing the buffer), and returns false at once when the client is gone or a write
// timed out. While the server stops, send() still takes what the answer ends with (no waiting for
// room), so a stream can close with its finish_reason.

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "server/http/request_head.h"

namespace inferscope::server::http {

class Exchange {
public:
    Exchange(RequestHead head, std::string body, int socketFd, size_t maxPendingBytes);

    const RequestHead& head() const { return head_; }
    std::string& body() { return body_; }
    // Frees the body once it has been read (parsed): the transport counts buffered bodies against
    // a budget until then. Idempotent; the transport calls it when the exchange ends.
    void releaseBody();
    void setBodyRelease(std::function<void()> release);

    // The answering side.
    void reply(Reply reply);
    void startStream(int status, std::string contentType, std::vector<Header> headers);
    bool send(std::string data);
    void finish();
    bool gone() const;      // the peer closed or reset the connection, or a write failed
    bool stopping() const { return stopping_.load(); }
    // Called once, on whichever thread first sees it, when the client goes or the server starts
    // stopping while the exchange is incomplete (e.g. to leave the queue).
    void onInterrupt(std::function<void()> fn);

    // The transport side.
    struct Pending {
        std::optional<Reply> reply;
        bool streamStarted = false;  // first take() after startStream: status, type, headers below
        int status = 0;
        std::string contentType;
        std::vector<Header> headers;
        std::string data;            // stream bytes to send now
        bool finished = false;
    };
    Pending take();
    void wrote(size_t bytes);        // stream bytes sent: frees room for send()
    void markGone();
    void markStopping();
    void setWake(std::function<void()> wake);  // asks the transport to take() again
    bool complete() const;

private:
    void interrupt();

    const RequestHead head_;
    std::string body_;
    const int fd_;
    const size_t maxPending_;
    mutable std::mutex mutex_;
    std::condition_variable room_;
    std::function<void()> wake_, onInterrupt_, bodyRelease_;
    std::optional<Reply> reply_;
    bool started_ = false, startTaken_ = false, finished_ = false, complete_ = false, interrupted_ = false;
    int status_ = 0;
    std::string contentType_;
    std::vector<Header> headers_;
    std::string data_;
    size_t unsent_ = 0;  // handed to the transport or waiting, not yet written
    std::atomic<bool> gone_{false}, stopping_{false};
};

}  // namespace inferscope::server::http
