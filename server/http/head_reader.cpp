#include "server/http/head_reader.h"

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/field.hpp>

namespace inferscope::server::http {

namespace bhttp = boost::beast::http;

RequestHead headOf(const RequestParser& p, const std::string& remoteAddress) {
    const auto& req = p.get();
    RequestHead h;
    h.method = std::string(req.method_string());
    h.target = std::string(req.target());
    h.version = int(req.version());
    auto one = [&](bhttp::field f, std::string& out) {
        int n = 0;
        for (auto [it, end] = req.equal_range(f); it != end; ++it)
            if (n++ == 0) out = std::string(it->value());
        if (n > 1) h.repeatedField = true;
    };
    one(bhttp::field::host, h.host);
    one(bhttp::field::origin, h.origin);
    one(bhttp::field::authorization, h.authorization);
    one(bhttp::field::content_type, h.contentType);
    one(bhttp::field::content_encoding, h.contentEncoding);
    for (auto [it, end] = req.equal_range(bhttp::field::transfer_encoding); it != end; ++it)
        h.transferEncoding += (h.transferEncoding.empty() ? "" : ", ") + std::string(it->value());
    h.expect = std::string(req[bhttp::field::expect]);
    if (const auto length = p.content_length()) h.contentLength = *length;
    h.keepAlive = req.keep_alive();
    h.remoteAddress = remoteAddress;
    return h;
}

std::optional<RequestHead> readHead(std::string_view bytes, size_t maxHeaderBytes) {
    RequestParser parser;
    parser.header_limit(std::uint32_t(maxHeaderBytes));
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    parser.eager(false);  // stop after the head, as the transport's async_read_header does
    boost::beast::error_code ec;
    size_t used = 0;
    while (!parser.is_header_done() && used < bytes.size()) {
        const size_t n = parser.put(boost::asio::buffer(bytes.data() + used, bytes.size() - used), ec);
        if (ec == bhttp::error::need_more) return std::nullopt;  // the bytes end inside the head
        if (ec) return std::nullopt;
        if (n == 0) return std::nullopt;
        used += n;
    }
    if (!parser.is_header_done()) return std::nullopt;
    return headOf(parser, "127.0.0.1");
}

}  // namespace inferscope::server::http
