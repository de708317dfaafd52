#pragma once
// What the model library learnt from each file's header, kept between runs so that listing 50
// models reads no header the second time: keyed on the file's path, size and modification time
// (a file rewritten in place gets a new mtime and is read again). One JSON file in our cache
// folder, written atomically (temporary file, rename); read as untrusted input (bounded, every
// field checked, a damaged file is an empty cache). Fuzzed by fuzz/fuzz_catalog_files.cpp.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "catalog/model_summary.h"
#include "common/error.h"

namespace inferscope::catalog {

inline constexpr uint64_t kMaxHeaderCacheBytes = uint64_t(32) << 20;
inline constexpr size_t kMaxHeaderCacheEntries = 20000;

struct CachedHeader {
    uint64_t size = 0;
    int64_t mtimeNs = 0;
    std::optional<ModelSummary> summary;  // or the error the header gave
    std::string error;
};

class HeaderCache {
public:
    // The cache as text (what load() reads); unusable text is an empty cache.
    static HeaderCache parse(std::string_view text);
    static HeaderCache load(const std::filesystem::path& file);
    std::string serialize() const;
    Result<void> save(const std::filesystem::path& file) const;

    const CachedHeader* find(const std::string& path, uint64_t size, int64_t mtimeNs) const;
    void put(const std::string& path, CachedHeader entry);
    // Drops the entries whose path is not in `kept` (files gone since): the cache stays the size
    // of what is on disk.
    void retainOnly(const std::unordered_set<std::string>& kept);
    size_t size() const { return entries_.size(); }
    bool changed() const { return changed_; }

private:
    std::unordered_map<std::string, CachedHeader> entries_;
    bool changed_ = false;
};

}  // namespace inferscope::catalog
