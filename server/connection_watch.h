#pragma once
// Whether the client of a request is still connected, so a generation stops within one step of a
// client closing its connection, streamed or not. cpp-httplib 0.11 does not hand its handlers the
// socket: the connection's socket is found by its two addresses (the handler's thread owns it,
// open and unchanged, until the handler returns), then polled for the peer's hang-up.

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

}  // namespace inferscope::server
