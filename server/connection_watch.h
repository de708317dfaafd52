#pragma once
// Whether the client of a request is still connected, so a generation stops within one step of a
// client closing its connection, streamed or not. cpp-httplib 0.11 does not hand its handlers the
// socket: the connection's socket is found by its two addresses (the handler's thread owns it,
// open and unchanged, until the handler returns), then polled for the peer's hang-up. The search
// looks at every open socket's addresses while other connection threads may be closing theirs:
// a socket closed (or its number reused) meanwhile fails a call or has other addresses, and the
// one sought cannot change, so the result is exact. ThreadSanitizer reports those reads of other
// threads' descriptors as races (test_serve_loading under -DINFERSCOPE_SANITIZE=thread: two
// reports, fstat against httplib's close, and no other).

#include <string>

namespace inferscope::server {

class ConnectionWatch {
public:
    // The socket connected from remoteAddr:remotePort to our localPort; none found: never "closed".
    ConnectionWatch(const std::string& remoteAddr, int remotePort, int localPort);
    // True once the peer has closed or reset the connection (a poll, no wait).
    bool closed() const;
    bool found() const { return fd_ >= 0; }

private:
    int fd_ = -1;
};

// cpp-httplib 0.11 listens with a backlog of 5 (compiled into Debian's library): a burst of
// connections past it waits for the client's SYN retransmission (1 s each). Calling listen() again
// on the bound socket (found by its port, with no peer) widens it to the system's limit; false when
// the socket was not found.
bool widenListenBacklog(int port);

}  // namespace inferscope::server
