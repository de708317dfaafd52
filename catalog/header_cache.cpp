#include "catalog/header_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <algorithm>
#include <fmt/format.h>
#include <vector>
#include <fstream>

#include "catalog/source_files.h"

namespace inferscope::catalog {
namespace {

using nlohmann::json;

json footprintJson(const LoadFootprint& f) {
    return json{{"mapped", f.weightsMapped}, {"converted", f.weightsConverted}, {"temporary", f.largestTemporary},
                {"layers", f.nLayer}, {"heads", f.nHead}, {"kv_heads", f.nHeadKv}, {"head_dim", f.headDim},
                {"embedding", f.nEmbd}, {"ffn", f.nFf}, {"vocab", f.nVocab}, {"rot", f.nRot}, {"ctx_train", f.nCtxTrain},
                {"fused", f.fusedOutputs}, {"rope_tables", f.ropeTables}};
}

// Each field present with its type and in range, or nothing: a hand-edited or damaged cache must
// not give the fit check a zero head count or a negative size.
template <class T>
bool readNumber(const json& j, const char* key, T& out, T lo, T hi) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer()) return false;
    if constexpr (std::is_unsigned_v<T>) {
        if (!it->is_number_unsigned()) return false;
        const uint64_t v = it->get<uint64_t>();
        if (v < uint64_t(lo) || v > uint64_t(hi)) return false;
        out = T(v);
    } else {
        const int64_t v = it->get<int64_t>();
        if (v < int64_t(lo) || v > int64_t(hi)) return false;
        out = T(v);
    }
    return true;
}

std::optional<LoadFootprint> footprintFrom(const json& j) {
    if (!j.is_object()) return std::nullopt;
    LoadFootprint f;
    constexpr uint64_t kBig = uint64_t(1) << 50;
    constexpr int32_t kDim = int32_t(1) << 24;
    const bool ok = readNumber(j, "mapped", f.weightsMapped, uint64_t(0), kBig) &&
                    readNumber(j, "converted", f.weightsConverted, uint64_t(0), kBig) &&
                    readNumber(j, "temporary", f.largestTemporary, uint64_t(0), kBig) &&
                    readNumber(j, "layers", f.nLayer, 1, kDim) && readNumber(j, "heads", f.nHead, 1, kDim) &&
                    readNumber(j, "kv_heads", f.nHeadKv, 1, kDim) && readNumber(j, "head_dim", f.headDim, 1, kDim) &&
                    readNumber(j, "embedding", f.nEmbd, 1, kDim) && readNumber(j, "ffn", f.nFf, 0, kDim) &&
                    readNumber(j, "vocab", f.nVocab, 1, kDim) && readNumber(j, "rot", f.nRot, 0, kDim) &&
                    readNumber(j, "ctx_train", f.nCtxTrain, 1, INT32_MAX) && readNumber(j, "rope_tables", f.ropeTables, 1u, 2u);
    auto fused = j.find("fused");
    if (!ok || fused == j.end() || !fused->is_boolean() || f.nHead % f.nHeadKv != 0) return std::nullopt;
    f.fusedOutputs = fused->get<bool>();
    return f;
}

std::optional<std::string> text(const json& j, const char* key, size_t maxBytes = 4096) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_string()) return std::nullopt;
    std::string s = it->get<std::string>();
    if (s.size() > maxBytes) return std::nullopt;
    return s;
}

}  // namespace

HeaderCache HeaderCache::parse(std::string_view input) {
    HeaderCache cache;
    auto j = parseBoundedJson(input, kMaxHeaderCacheBytes, 8, 64 * kMaxHeaderCacheEntries);
    if (!j || !j->is_object()) return cache;
    auto version = j->find("version");
    auto entries = j->find("entries");
    if (version == j->end() || *version != 1 || entries == j->end() || !entries->is_array()) return cache;
    for (const json& e : *entries) {
        if (cache.entries_.size() >= kMaxHeaderCacheEntries) break;
        if (!e.is_object()) continue;
        auto path = text(e, "path");
        CachedHeader h;
        if (!path || path->empty() || !readNumber(e, "size", h.size, uint64_t(0), UINT64_MAX) ||
            !readNumber(e, "mtime_ns", h.mtimeNs, INT64_MIN, INT64_MAX))
            continue;
        if (auto err = text(e, "error")) {
            h.error = *err;
        } else {
            ModelSummary s;
            auto arch = text(e, "architecture", 256), name = text(e, "general_name", 1024), quant = text(e, "quantization", 64),
                 refusal = text(e, "refusal");
            auto runnable = e.find("runnable");
            if (!arch || !name || !quant || !refusal || runnable == e.end() || !runnable->is_boolean() ||
                !readNumber(e, "parameters", s.parameters, uint64_t(0), UINT64_MAX) ||
                !readNumber(e, "context", s.trainedContext, 0, INT32_MAX))
                continue;
            s.architecture = *arch;
            s.generalName = *name;
            s.quantization = *quant;
            s.refusal = *refusal;
            s.runnable = runnable->get<bool>();
            s.fileBytes = h.size;
            if (s.runnable) {
                auto fp = e.find("footprint");
                if (fp == e.end()) continue;
                s.footprint = footprintFrom(*fp);
                if (!s.footprint) continue;
            }
            h.summary = std::move(s);
        }
        cache.entries_.insert_or_assign(*path, std::move(h));
    }
    return cache;
}

HeaderCache HeaderCache::load(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) return {};
    std::string textBytes(kMaxHeaderCacheBytes + 1, '\0');
    in.read(textBytes.data(), std::streamsize(textBytes.size()));
    textBytes.resize(size_t(in.gcount()));
    return parse(textBytes);  // longer than the bound: refused by parse
}

std::string HeaderCache::serialize() const {
    json entries = json::array();
    std::vector<const std::pair<const std::string, CachedHeader>*> sorted;  // the same cache, the same bytes
    for (const auto& e : entries_) sorted.push_back(&e);
    std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->first < b->first; });
    for (const auto* entry : sorted) {
        const auto& [path, h] = *entry;
        json e{{"path", path}, {"size", h.size}, {"mtime_ns", h.mtimeNs}};
        if (!h.summary) {
            e["error"] = h.error;
        } else {
            const ModelSummary& s = *h.summary;
            e.update(json{{"architecture", s.architecture}, {"general_name", s.generalName}, {"quantization", s.quantization},
                          {"parameters", s.parameters}, {"context", s.trainedContext}, {"runnable", s.runnable},
                          {"refusal", s.refusal}});
            if (s.footprint) e["footprint"] = footprintJson(*s.footprint);
        }
        entries.push_back(std::move(e));
    }
    return json{{"version", 1}, {"entries", std::move(entries)}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<void> HeaderCache::save(const std::filesystem::path& file) const {
    std::error_code ec;
    std::filesystem::create_directories(file.parent_path(), ec);
    const std::filesystem::path tmp = file.string() + ".tmp" + std::to_string(::getpid());
    const std::string bytes = serialize();
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return fail(ErrorKind::Io, fmt::format("cannot write {}: {}", tmp.string(), std::strerror(errno)));
    size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            const int err = errno;
            ::close(fd);
            ::unlink(tmp.c_str());
            return fail(ErrorKind::Io, fmt::format("cannot write {}: {}", tmp.string(), std::strerror(err)));
        }
        done += size_t(n);
    }
    ::close(fd);
    if (::rename(tmp.c_str(), file.c_str()) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        return fail(ErrorKind::Io, fmt::format("cannot replace {}: {}", file.string(), std::strerror(err)));
    }
    return {};
}

const CachedHeader* HeaderCache::find(const std::string& path, uint64_t size, int64_t mtimeNs) const {
    auto it = entries_.find(path);
    if (it == entries_.end() || it->second.size != size || it->second.mtimeNs != mtimeNs) return nullptr;
    return &it->second;
}

void HeaderCache::put(const std::string& path, CachedHeader entry) {
    if (entries_.size() >= kMaxHeaderCacheEntries && !entries_.contains(path)) return;
    entries_.insert_or_assign(path, std::move(entry));
    changed_ = true;
}

void HeaderCache::retainOnly(const std::unordered_set<std::string>& kept) {
    const size_t before = entries_.size();
    std::erase_if(entries_, [&](const auto& e) { return !kept.contains(e.first); });
    changed_ = changed_ || entries_.size() != before;
}

}  // namespace inferscope::catalog
