#pragma once
// A request head as Boost.Beast parsed it, turned into the plain RequestHead the policy reads
// (headOf), and the same from bytes alone (readHead: for the fuzz target and the tests, the
// transport's own limits applied).

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include "server/http/request_head.h"

namespace inferscope::server::http {

using RequestParser = boost::beast::http::request_parser<boost::beast::http::string_body>;

RequestHead headOf(const RequestParser& parser, const std::string& remoteAddress);

// The head of `bytes` parsed with a header limit of maxHeaderBytes; nothing when the bytes hold
// no complete, valid head within it.
std::optional<RequestHead> readHead(std::string_view bytes, size_t maxHeaderBytes);

}  // namespace inferscope::server::http
