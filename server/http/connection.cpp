// One connection of the transport (see listener.h; the network thread's state in connection.h):
// its requests one after another while the client keeps it, each head judged by the policy before
// any body byte is read, the body within its limits and the budget of all bodies held, deadlines
// for every phase, the answer whole or as a chunked stream, and a lingering close after a refusal.
// The only other threads that touch a connection do so through its Exchange, whose wake posts back
// to the network thread.
#include "server/http/connection.h"

#include "server/http/head_reader.h"

#include <boost/beast/http.hpp>
#include <fmt/format.h>
#include <poll.h>

namespace inferscope::server::http {
namespace {

namespace bhttp = beast::http;

std::string errorBody(std::string_view message, std::string_view code) {
    // Our own fixed texts only (no request bytes), so no escaping beyond what they need.
    return fmt::format(R"({{"error":{{"message":"{}","type":"invalid_request_error","param":null,"code":"{}"}}}})", message, code);
}

Reply transportError(int status, std::string_view message, std::string_view code) {
    return Reply{status, "application/json", {}, errorBody(message, code)};
}

// A buffer sequence, built outside the coroutines: GCC 12 cannot keep a braced list's backing
// array in a coroutine frame ("array used as initializer").
template <class... Buffers>
std::vector<asio::const_buffer> sequence(Buffers... buffers) {
    std::vector<asio::const_buffer> v;
    (v.push_back(asio::const_buffer(buffers)), ...);
    return v;
}

std::string headerValue(std::string_view v) {  // our values; never let one split the head
    std::string out;
    for (char c : v)
        if (c != '\r' && c != '\n') out += c;
    return out;
}

std::string headBlock(int status, std::string_view contentType, const std::vector<Header>& headers, std::optional<size_t> contentLength,
                      bool close) {
    const auto reason = bhttp::obsolete_reason(bhttp::int_to_status(unsigned(status)));
    std::string h = fmt::format("HTTP/1.1 {} {}\r\nServer: inferscope\r\n", status, std::string_view(reason.data(), reason.size()));
    if (!contentType.empty()) h += fmt::format("Content-Type: {}\r\n", headerValue(contentType));
    for (const Header& x : headers) h += fmt::format("{}: {}\r\n", headerValue(x.name), headerValue(x.value));
    if (contentLength) h += fmt::format("Content-Length: {}\r\n", *contentLength);
    else h += "Transfer-Encoding: chunked\r\n";
    if (close) h += "Connection: close\r\n";
    h += "\r\n";
    return h;
}

}  // namespace

Connection::Connection(Listener::Impl& l, tcp::socket s)
    : l_(l), socket_(std::move(s)), deadline_(l.io), wake_(l.io), buffer_(l.limits.maxHeaderBytes + 4096) {
    beast::error_code ec;
    const auto peer = socket_.remote_endpoint(ec);
    address_ = ec ? std::string("?") : peer.address().to_string();
    socket_.set_option(tcp::no_delay(true), ec);
}

awaitable<void> Connection::run(bool overLimit) {
    try {
        if (overLimit) {
            co_await answer(transportError(503, "this server has too many open connections; retry later", "too_many_connections"), true);
            co_await lingerClose();
        } else {
            co_await serve();
        }
    } catch (const std::exception&) {
        beast::error_code ec;
        socket_.close(ec);
    }
    l_.connectionEnded(address_, at);
}

void Connection::stop() {
    if (exchange_) exchange_->markStopping();
    else {
        beast::error_code ec;
        socket_.cancel(ec);
    }
}

void Connection::arm(std::chrono::milliseconds d) {
    const uint64_t id = ++armId_;
    timedOut_ = false;
    deadline_.expires_after(d);
    deadline_.async_wait([self = shared_from_this(), id](beast::error_code ec) {
        if (ec || id != self->armId_) return;
        self->timedOut_ = true;
        beast::error_code ignored;
        self->socket_.cancel(ignored);
    });
}

void Connection::disarm() {
    ++armId_;
    deadline_.cancel();
}

awaitable<bool> Connection::write(std::vector<asio::const_buffer> buffers) {
    beast::error_code ec;
    arm(l_.limits.writeTimeout);
    const size_t n = co_await asio::async_write(socket_, buffers, asio::redirect_error(use_awaitable, ec));
    disarm();
    sent_ += n;
    co_return !ec && !timedOut_;
}

awaitable<bool> Connection::answer(const Reply& r, bool close, const std::vector<Header>& extra) {
    std::vector<Header> headers = extra;
    headers.insert(headers.end(), r.headers.begin(), r.headers.end());
    if (r.status == 503) headers.push_back({"Retry-After", "1"});
    const std::string head = headBlock(r.status, r.body.empty() && r.status == 204 ? "" : r.contentType, headers, r.body.size(), close);
    status_ = r.status;
    if (headOnly_) co_return co_await write(sequence(asio::buffer(head)));
    co_return co_await write(sequence(asio::buffer(head), asio::buffer(r.body)));
}

awaitable<void> Connection::lingerClose() {
    beast::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_send, ec);
    std::vector<char> sink(8192);
    size_t drained = 0;
    arm(std::chrono::milliseconds(1000));
    while (!ec && !timedOut_ && drained < (1u << 20)) {
        drained += co_await socket_.async_read_some(asio::buffer(sink), asio::redirect_error(use_awaitable, ec));
    }
    disarm();
    socket_.close(ec);
}

void Connection::log(const RequestHead& head, const std::string& key) {
    AccessRecord r;
    r.remoteAddress = address_;
    r.method = head.method;
    r.target = head.target;
    r.key = key;
    r.status = status_;
    r.bytesSent = sent_;
    r.duration = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - started_);
    l_.handler.onAccess(r);
}

awaitable<void> Connection::serve() {
    bool first = true;
    while (!l_.stopping) {
        beast::error_code ec;
        // Wait for the first byte of a request (a kept-alive connection idles for idleTimeout).
        if (buffer_.size() == 0) {
            arm(first ? l_.limits.headTimeout : l_.limits.idleTimeout);
            co_await socket_.async_wait(tcp::socket::wait_read, asio::redirect_error(use_awaitable, ec));
            disarm();
            if (ec || timedOut_ || l_.stopping) break;
        }
        first = false;
        started_ = Clock::now();
        sent_ = 0;
        status_ = 0;
        bhttp::request_parser<bhttp::string_body> parser;
        parser.header_limit(std::uint32_t(l_.limits.maxHeaderBytes));
        parser.body_limit(std::numeric_limits<std::uint64_t>::max());  // until the policy has seen the head
        arm(l_.limits.headTimeout);
        co_await bhttp::async_read_header(socket_, buffer_, parser, asio::redirect_error(use_awaitable, ec));
        disarm();
        if (ec) {
            RequestHead none;
            none.method = "-";
            none.target = "-";
            if (ec == bhttp::error::header_limit || ec == bhttp::error::buffer_overflow) {
                co_await answer(transportError(431, "the request head is over this server's limit", "request_header_fields_too_large"), true);
                log(none, "-");
                co_await lingerClose();
            } else if (timedOut_ && !l_.stopping) {
                co_await answer(transportError(408, "the request head did not arrive in time", "request_timeout"), true);
                log(none, "-");
                co_await lingerClose();
            } else if (ec != asio::error::eof && ec != bhttp::error::end_of_stream && ec != asio::error::connection_reset &&
                       ec != asio::error::operation_aborted) {
                co_await answer(transportError(400, "the request is not valid HTTP/1.1", "invalid_request"), true);
                log(none, "-");
                co_await lingerClose();
            }
            co_return;
        }
        const RequestHead head = headOf(parser, address_);
        headOnly_ = head.method == "HEAD";
        const HeadVerdict verdict = l_.handler.onHead(head);
        const bool bodyFollows = parser.chunked() || head.contentLength.value_or(0) > 0;
        if (verdict.refusal) {
            const bool close = bodyFollows || !head.keepAlive || l_.stopping;
            const bool ok = co_await answer(*verdict.refusal, close, verdict.headers);
            log(head, verdict.logKey);
            if (close || !ok) {
                if (ok && bodyFollows) co_await lingerClose();
                co_return;
            }
            continue;
        }
        // The body's share of the budget, reserved before a byte of it is read.
        const size_t reserve = bodyFollows ? size_t(std::min<uint64_t>(head.contentLength.value_or(l_.limits.maxBodyBytes), l_.limits.maxBodyBytes)) : 0;
        if (l_.bufferedBodies.fetch_add(reserve) + reserve > l_.limits.maxBufferedBodyBytes) {
            l_.bufferedBodies -= reserve;
            co_await answer(transportError(503, "this server is receiving too many large requests; retry later", "server_busy"), true, verdict.headers);
            log(head, verdict.logKey);
            co_await lingerClose();
            co_return;
        }
        auto released = std::make_shared<std::atomic<bool>>(false);
        auto release = [&counter = l_.bufferedBodies, reserve, released] {
            if (!released->exchange(true)) counter -= reserve;
        };
        if (bodyFollows && head.version >= 11 && beast::iequals(head.expect, "100-continue")) {
            static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
            if (!co_await write(sequence(asio::buffer(kContinue.data(), kContinue.size())))) {
                release();
                co_return;
            }
        }
        parser.body_limit(std::uint64_t(l_.limits.maxBodyBytes));
        arm(l_.limits.bodyTimeout);
        co_await bhttp::async_read(socket_, buffer_, parser, asio::redirect_error(use_awaitable, ec));
        disarm();
        if (ec) {
            release();
            if (ec == bhttp::error::body_limit) {
                co_await answer(transportError(413, fmt::format("the request body is over this server's limit of {} bytes", l_.limits.maxBodyBytes),
                                               "request_too_large"),
                                true, verdict.headers);
            } else if (timedOut_ && !l_.stopping) {
                co_await answer(transportError(408, "the request body did not arrive in time", "request_timeout"), true, verdict.headers);
            } else if (ec != asio::error::eof && ec != bhttp::error::partial_message && ec != asio::error::connection_reset &&
                       ec != asio::error::operation_aborted) {
                co_await answer(transportError(400, "the request body is not valid HTTP/1.1 framing", "invalid_request"), true, verdict.headers);
            }
            if (status_ != 0) {
                log(head, verdict.logKey);
                co_await lingerClose();
            }
            co_return;
        }
        exchange_ = std::make_shared<Exchange>(head, parser.release().body(), socket_.native_handle(), l_.limits.maxPendingOutput);
        exchange_->setBodyRelease(release);
        exchange_->setWake([weak = weak_from_this(), &io = l_.io] {
            asio::post(io, [weak] {
                if (auto self = weak.lock()) self->wake_.cancel();
            });
        });
        if (l_.stopping) exchange_->markStopping();
        l_.handler.onRequest(exchange_, verdict);
        const bool ok = co_await respond(*exchange_, verdict.headers);
        exchange_->releaseBody();
        exchange_.reset();
        log(head, verdict.logKey);
        if (!ok || !head.keepAlive || l_.stopping) break;
    }
    beast::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_both, ec);
    socket_.close(ec);
}

awaitable<bool> Connection::respond(Exchange& ex, const std::vector<Header>& extra) {
    bool streaming = false, writable = true;
    for (;;) {
        Exchange::Pending p = ex.take();
        if (p.reply) {
            if (writable) writable = co_await answer(*p.reply, l_.stopping || !ex.head().keepAlive, extra);
            co_return writable;
        }
        if (p.streamStarted) {
            std::vector<Header> headers = extra;
            headers.insert(headers.end(), p.headers.begin(), p.headers.end());
            status_ = p.status;
            const std::string head = headBlock(p.status, p.contentType, headers, std::nullopt, l_.stopping || !ex.head().keepAlive);
            if (writable) writable = co_await write(sequence(asio::buffer(head)));
            streaming = true;
            if (!writable) ex.markGone();
        }
        if (!p.data.empty()) {
            if (writable && !headOnly_) {
                const std::string size = fmt::format("{:x}\r\n", p.data.size());
                writable = co_await write(sequence(asio::buffer(size), asio::buffer(p.data), asio::buffer("\r\n", 2)));
                if (!writable) ex.markGone();
            }
            ex.wrote(p.data.size());
        }
        if (p.finished) {
            if (writable && streaming && p.status < 500) writable = co_await write(sequence(asio::buffer("0\r\n\r\n", 5)));
            co_return writable && p.status < 500;
        }
        if (!p.data.empty() || p.streamStarted) continue;
        // Nothing to write yet: wait for the answering side's wake, looking at the socket
        // a few times a second so that a client who leaves while queued is noticed.
        beast::error_code ec;
        wake_.expires_after(std::chrono::milliseconds(250));
        co_await wake_.async_wait(asio::redirect_error(use_awaitable, ec));
        if (!ec && !ex.gone() && peerClosed()) ex.markGone();
    }
}

bool Connection::peerClosed() {
    pollfd p{socket_.native_handle(), POLLRDHUP, 0};
    return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

}  // namespace inferscope::server::http
