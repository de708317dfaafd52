#include "server/access_log.h"

#include <fmt/format.h>

#include <ctime>

namespace inferscope::server {

std::string escapedForLog(std::string_view text, size_t maxBytes) {
    std::string out;
    for (size_t i = 0; i < text.size(); ++i) {
        if (out.size() >= maxBytes) {
            out += "…";
            break;
        }
        const unsigned char c = static_cast<unsigned char>(text[i]);
        if (c > ' ' && c < 0x7f && c != '\\') out += char(c);
        else out += fmt::format("\\x{:02X}", c);
    }
    return out.empty() ? std::string("-") : out;
}

std::string accessLine(const AccessRecord& r, std::chrono::system_clock::time_point when) {
    const auto sinceEpoch = when.time_since_epoch();
    const std::time_t seconds = std::time_t(std::chrono::duration_cast<std::chrono::seconds>(sinceEpoch).count());
    const long millis = long(std::chrono::duration_cast<std::chrono::milliseconds>(sinceEpoch).count() % 1000);
    std::tm utc{};
    gmtime_r(&seconds, &utc);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &utc);
    const std::string_view target = std::string_view(r.target).substr(0, r.target.find('?'));
    return fmt::format("{}.{:03d}Z {} {} {} {} {} B {} ms {}", stamp, millis, escapedForLog(r.remoteAddress, 64), escapedForLog(r.method, 16),
                       escapedForLog(target), r.status, r.bytesSent, std::chrono::duration_cast<std::chrono::milliseconds>(r.duration).count(),
                       r.key);
}

AccessLog::AccessLog(const std::string& path) {
    if (path.empty()) {
        out_ = stderr;
        return;
    }
    out_ = std::fopen(path.c_str(), "a");
    owned_ = out_ != nullptr;
}

AccessLog::~AccessLog() {
    if (owned_) std::fclose(out_);
}

void AccessLog::write(const AccessRecord& record) {
    if (!out_) return;
    const std::string line = accessLine(record, std::chrono::system_clock::now()) + "\n";
    std::lock_guard lock(mutex_);
    std::fwrite(line.data(), 1, line.size(), out_);
    std::fflush(out_);
}

}  // namespace inferscope::server
