#pragma once
// Expected failures (a bad file, an unsupported type, a bad parameter) travel as values:
// Result<T> = std::expected<T, Error>, with a message a user can act on. Programmer errors assert.

#include <expected>
#include <string>
#include <utility>

namespace inferscope {

enum class ErrorKind {
    InvalidArgument,  // a parameter out of its documented range
    BadFile,          // a file that is not what it claims (malformed, truncated)
    Unsupported,      // a well-formed file using something we do not implement
    Io,               // the operating system refused (open, mmap, read)
    OutOfMemory,      // an allocation that does not fit
    Device,           // the compute device (oneDNN engine) failed or is absent
    Cancelled,
    Denied,           // a server refused us: no credentials, or not these (HTTP 401/403)
};

struct Error {
    ErrorKind kind = ErrorKind::InvalidArgument;
    std::string message;
};

template <class T>
using Result = std::expected<T, Error>;

inline std::unexpected<Error> fail(ErrorKind kind, std::string message) {
    return std::unexpected<Error>(Error{kind, std::move(message)});
}

}  // namespace inferscope
