// The transport (see listener.h): one io_context run by Listener::run() on the network thread,
// accepting connections within the limits (in total, per address) and spawning each as a
// coroutine (connection.cpp); bind, and a shutdown that closes idle connections and tells the
// others. The only other threads that touch a connection do so through its Exchange, whose wake
// posts back here.
#include "server/http/connection.h"

namespace inferscope::server::http {

awaitable<void> Listener::Impl::acceptLoop() {
    asio::steady_timer backoff(io);
    for (;;) {
        beast::error_code ec;
        tcp::socket socket = co_await acceptor.async_accept(asio::redirect_error(use_awaitable, ec));
        if (ec) {
            if (stopping || !acceptor.is_open()) co_return;
            // Out of descriptors (or another transient failure): wait instead of spinning.
            backoff.expires_after(std::chrono::milliseconds(50));
            co_await backoff.async_wait(asio::redirect_error(use_awaitable, ec));
            continue;
        }
        auto connection = std::make_shared<Connection>(*this, std::move(socket));
        size_t& fromAddress = perAddress[connection->address()];
        const bool overLimit = open >= limits.maxConnections || fromAddress >= limits.maxConnectionsPerAddress;
        ++fromAddress;
        ++open;
        connection->at = live.insert(live.end(), connection);
        asio::co_spawn(io, [connection, overLimit]() -> awaitable<void> { co_await connection->run(overLimit); }, asio::detached);
    }
}

void Listener::Impl::connectionEnded(const std::string& address, std::list<std::weak_ptr<Connection>>::iterator at) {
    live.erase(at);
    if (auto it = perAddress.find(address); it != perAddress.end() && --it->second == 0) perAddress.erase(it);
    if (--open == 0 && stopping) grace.cancel();
}

Listener::Listener(Limits limits, Handler& handler) : impl_(std::make_unique<Impl>(limits, handler)) {}
Listener::~Listener() = default;

std::optional<int> Listener::bind(const std::string& host, int port, std::string& error) {
    beast::error_code ec;
    tcp::resolver resolver(impl_->io);
    const auto results = resolver.resolve(host, std::to_string(port), tcp::resolver::numeric_service, ec);
    if (ec || results.empty()) {
        error = "cannot resolve the address to listen on";
        return std::nullopt;
    }
    const tcp::endpoint endpoint = results.begin()->endpoint();
    impl_->acceptor.open(endpoint.protocol(), ec);
    if (!ec) impl_->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) impl_->acceptor.bind(endpoint, ec);
    if (!ec) impl_->acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
        error = ec.message();
        beast::error_code ignored;
        impl_->acceptor.close(ignored);
        return std::nullopt;
    }
    return int(impl_->acceptor.local_endpoint(ec).port());
}

void Listener::run() {
    asio::co_spawn(impl_->io, impl_->acceptLoop(), asio::detached);
    impl_->io.run();
}

void Listener::shutdown(std::chrono::milliseconds grace) {
    asio::post(impl_->io, [impl = impl_.get(), grace] {
        if (impl->stopping) return;
        impl->stopping = true;
        beast::error_code ec;
        impl->acceptor.close(ec);
        for (auto& weak : impl->live)
            if (auto c = weak.lock()) c->stop();
        if (impl->open == 0) return;  // nothing left: run() returns
        impl->grace.expires_after(grace);
        impl->grace.async_wait([impl](beast::error_code ec) {
            if (!ec) impl->io.stop();  // answers still not written: give up on them
        });
    });
}

size_t Listener::openConnections() const { return impl_->open.load(); }

}  // namespace inferscope::server::http
