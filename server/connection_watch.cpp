#include "server/connection_watch.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>

namespace inferscope::server {
namespace {

// The address and port of a socket end, as numeric text.
bool endpoint(const sockaddr_storage& a, std::string& addr, int& port) {
    char text[INET6_ADDRSTRLEN] = {};
    if (a.ss_family == AF_INET) {
        const auto& in = reinterpret_cast<const sockaddr_in&>(a);
        inet_ntop(AF_INET, &in.sin_addr, text, sizeof text);
        port = ntohs(in.sin_port);
    } else if (a.ss_family == AF_INET6) {
        const auto& in6 = reinterpret_cast<const sockaddr_in6&>(a);
        inet_ntop(AF_INET6, &in6.sin6_addr, text, sizeof text);
        port = ntohs(in6.sin6_port);
    } else {
        return false;
    }
    addr = text;
    return true;
}

}  // namespace

ConnectionWatch::ConnectionWatch(const std::string& remoteAddr, int remotePort, int localPort) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
        const int fd = std::atoi(entry.path().filename().c_str());
        struct stat st {};
        if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
        sockaddr_storage peer{}, local{};
        socklen_t peerLen = sizeof peer, localLen = sizeof local;
        if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peerLen) != 0) continue;
        if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &localLen) != 0) continue;
        std::string peerAddr, localAddr;
        int peerPort = -1, ourPort = -1;
        if (!endpoint(peer, peerAddr, peerPort) || !endpoint(local, localAddr, ourPort)) continue;
        if (peerAddr == remoteAddr && peerPort == remotePort && ourPort == localPort) {
            fd_ = fd;
            return;
        }
    }
}

bool ConnectionWatch::closed() const {
    if (fd_ < 0) return false;
    pollfd p{fd_, POLLRDHUP, 0};
    if (poll(&p, 1, 0) <= 0) return false;
    return (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

}  // namespace inferscope::server
