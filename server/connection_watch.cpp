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

// The first of this process's sockets for which match(fd, local address, local port) holds; -1.
template <class Match>
int findSocket(Match match) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
        const int fd = std::atoi(entry.path().filename().c_str());
        struct stat st {};
        if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
        sockaddr_storage local{};
        socklen_t localLen = sizeof local;
        std::string localAddr;
        int localPort = -1;
        if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &localLen) != 0 || !endpoint(local, localAddr, localPort)) continue;
        if (match(fd, localPort)) return fd;
    }
    return -1;
}

}  // namespace

ConnectionWatch::ConnectionWatch(const std::string& remoteAddr, int remotePort, int localPort) {
    fd_ = findSocket([&](int fd, int ourPort) {
        sockaddr_storage peer{};
        socklen_t peerLen = sizeof peer;
        std::string peerAddr;
        int peerPort = -1;
        return ourPort == localPort && getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peerLen) == 0 &&
               endpoint(peer, peerAddr, peerPort) && peerAddr == remoteAddr && peerPort == remotePort;
    });
}

bool widenListenBacklog(int port) {
    const int fd = findSocket([&](int fd, int ourPort) {
        int listening = 0;
        socklen_t len = sizeof listening;
        return ourPort == port && getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) == 0 && listening;
    });
    return fd >= 0 && ::listen(fd, SOMAXCONN) == 0;
}

bool ConnectionWatch::closed() const {
    if (fd_ < 0) return false;
    pollfd p{fd_, POLLRDHUP, 0};
    if (poll(&p, 1, 0) <= 0) return false;
    return (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

}  // namespace inferscope::server
