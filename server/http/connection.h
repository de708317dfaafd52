#pragma once
// The network thread's state (Listener::Impl) and one connection on it (Connection), shared by
// listener.cpp (accepting within the connection limits, bind, run, shutdown) and connection.cpp (a
// connection's requests one after another: head, policy, body, answer, keep-alive). Everything
// here runs on the network thread. Private to server/http/: included by those two files only.
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange without it

#include "server/http/listener.h"

#include <boost/asio.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include <atomic>
#include <chrono>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace inferscope::server::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
using asio::awaitable;
using asio::use_awaitable;
using Clock = std::chrono::steady_clock;

class Connection;

struct Listener::Impl {
    Impl(Limits l, Handler& h) : limits(l), handler(h), acceptor(io), grace(io) {}
    awaitable<void> acceptLoop();
    void connectionEnded(const std::string& address, std::list<std::weak_ptr<Connection>>::iterator at);

    asio::io_context io{1};
    Limits limits;
    Handler& handler;
    tcp::acceptor acceptor;
    asio::steady_timer grace;
    std::atomic<size_t> open{0};
    std::atomic<size_t> bufferedBodies{0};  // bytes reserved by bodies being read or held
    std::unordered_map<std::string, size_t> perAddress;
    std::list<std::weak_ptr<Connection>> live;
    bool stopping = false;
};

class Connection : public std::enable_shared_from_this<Connection> {
public:
    Connection(Listener::Impl& l, tcp::socket s);
    const std::string& address() const { return address_; }
    std::list<std::weak_ptr<Connection>>::iterator at;

    awaitable<void> run(bool overLimit);

    // Shutdown: an idle connection closes now; one with a request in flight is told.
    void stop();

private:
    // The deadline of the operation in progress: on expiry the socket's operations are cancelled.
    void arm(std::chrono::milliseconds d);
    void disarm();

    awaitable<bool> write(std::vector<asio::const_buffer> buffers);
    awaitable<bool> answer(const Reply& r, bool close, const std::vector<Header>& extra = {});
    // Half-closes, then reads (and drops) what the client still sends for a moment, so that our
    // answer is not lost to a reset when a body was left unread.
    awaitable<void> lingerClose();
    void log(const RequestHead& head, const std::string& key);

    // Requests, one after another, while the client keeps the connection.
    awaitable<void> serve();
    // Writes the exchange's answer as it comes, until it is complete. False: the connection is
    // not reusable (a write failed, or the answer was cut).
    awaitable<bool> respond(Exchange& ex, const std::vector<Header>& extra);
    bool peerClosed();

    Listener::Impl& l_;
    tcp::socket socket_;
    asio::steady_timer deadline_, wake_;
    beast::flat_buffer buffer_;
    std::string address_;
    std::shared_ptr<Exchange> exchange_;
    uint64_t armId_ = 0;
    bool timedOut_ = false, headOnly_ = false;
    Clock::time_point started_ = Clock::now();
    uint64_t sent_ = 0;
    int status_ = 0;
};

}  // namespace inferscope::server::http
