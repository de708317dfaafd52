#include "gguf/gguf_file.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <fmt/format.h>
#include <limits>

#include "gguf/gguf_reader_detail.h"

namespace inferscope {

using namespace gguf_detail;

namespace {

constexpr uint64_t kMaxKeyLength = 65535;
constexpr uint64_t kMaxTensorNameLength = 1024;
constexpr uint32_t kMaxDims = 4;
// Counts above these are absurd whatever the file size (real models: < 100 keys, < 10^4 tensors).
// Below them, a count the file cannot hold is reported as a truncation at the entry where the
// bytes run out.
constexpr uint64_t kMaxMetadataCount = uint64_t(1) << 20;
constexpr uint64_t kMaxTensorCount = uint64_t(1) << 20;

}  // namespace

Result<GgufFile> GgufFile::open(const std::filesystem::path& path, MappedFile::Pages pages) {
    auto mapped = MappedFile::open(path, pages);
    if (!mapped) return std::unexpected(mapped.error());
    auto parsed = parse(std::move(*mapped));
    if (!parsed) {
        Error e = parsed.error();
        e.message = fmt::format("{}: {}", path.filename().string(), e.message);
        return std::unexpected(std::move(e));
    }
    return parsed;
}

Result<GgufFile> GgufFile::parse(MappedFile file) { return parseImpl(std::move(file), 0, nullptr); }

Result<GgufFile> GgufFile::parseHeader(std::vector<uint8_t> prefix, uint64_t fileSize, bool* needsMore) {
    if (needsMore) *needsMore = false;
    if (prefix.size() > fileSize)
        return fail(ErrorKind::InvalidArgument, fmt::format("a header prefix of {} bytes from a file of {}", prefix.size(), fileSize));
    if (prefix.empty()) {
        if (needsMore) *needsMore = fileSize > 0;
        return fail(ErrorKind::BadFile, "no bytes of the header");
    }
    const uint64_t have = prefix.size();
    bool ranOut = false;
    auto parsed = parseImpl(MappedFile::fromBytes(std::move(prefix)), fileSize, &ranOut);
    if (!parsed && ranOut && have < fileSize) {
        if (needsMore) *needsMore = true;
        return fail(ErrorKind::BadFile, fmt::format("the header goes on past its first {} bytes", have));
    }
    return parsed;
}

Result<GgufFile> GgufFile::parseImpl(MappedFile file, uint64_t declaredSize, bool* ranOut) {
    GgufFile g;
    g.file_ = std::move(file);
    g.declaredSize_ = declaredSize;
    Cursor c(g.file_.data(), g.file_.size());
    auto result = [&]() -> Result<GgufFile> {

    // Fewer than 4 bytes: a truncated GGUF file if they start its magic, else not one at all.
    if (g.file_.size() < 4 && g.file_.size() > 0 && std::memcmp(g.file_.data(), "GGUF", g.file_.size()) != 0)
        return std::unexpected(badFile(fmt::format("not a GGUF file: {} bytes is too short", g.file_.size())));
    auto magic = c.read<uint32_t>("magic");
    if (!magic) return std::unexpected(magic.error());
    if (*magic != kGgufMagic) {
        const std::string_view bytes(reinterpret_cast<const char*>(g.file_.data()), 4);
        return std::unexpected(badFile(fmt::format("not a GGUF file: magic is \"{}\", expected \"GGUF\"", shownText(bytes))));
    }
    auto version = c.read<uint32_t>("version");
    if (!version) return std::unexpected(version.error());
    // A big-endian file (GGUF v3 allows them) has the same magic bytes but a byte-swapped version.
    if (const uint32_t swapped = __builtin_bswap32(*version); swapped == 2 || swapped == 3)
        return std::unexpected(Error{ErrorKind::Unsupported, fmt::format(
            "big-endian GGUF files are not supported (version {} stored byte-swapped)", swapped)});
    if (*version == 1)
        return std::unexpected(Error{ErrorKind::Unsupported, "GGUF version 1 is not supported (only 2 and 3); re-convert the model"});
    if (*version != 2 && *version != 3)
        return std::unexpected(Error{ErrorKind::Unsupported, fmt::format("unsupported GGUF version {} (expected 2 or 3)", *version)});
    g.version_ = *version;

    auto nTensors = c.read<uint64_t>("tensor count");
    if (!nTensors) return std::unexpected(nTensors.error());
    auto nKv = c.read<uint64_t>("metadata count");
    if (!nKv) return std::unexpected(nKv.error());

    if (*nTensors > kMaxTensorCount)
        return std::unexpected(badFile(fmt::format("absurd tensor count {} (limit {})", *nTensors, kMaxTensorCount)));
    if (*nKv > kMaxMetadataCount)
        return std::unexpected(badFile(fmt::format("absurd metadata count {} (limit {})", *nKv, kMaxMetadataCount)));

    // Reserve no more than the remaining bytes could hold; a larger count is a truncated file and
    // fails at the entry where the bytes run out.
    g.kvs_.reserve(reservation<GgufKv>(*nKv, c.remaining()));
    for (uint64_t k = 0; k < *nKv; ++k) {
        auto key = c.readString(fmt::format("metadata key #{}", k), kMaxKeyLength);
        if (!key) return std::unexpected(key.error());
        const std::string keyName = shownText(*key);
        auto type = c.read<uint32_t>(fmt::format("type of metadata key {}", keyName));
        if (!type) return std::unexpected(type.error());
        if (!validType(*type))
            return std::unexpected(badFile(fmt::format("metadata key {} has invalid type {}", keyName, *type)));
        auto value = readValue(c, GgufType(*type), keyName);
        if (!value) return std::unexpected(value.error());
        if (g.kvIndex_.contains(*key))
            return std::unexpected(badFile(fmt::format("metadata key {} appears twice", keyName)));
        g.kvIndex_.emplace(*key, g.kvs_.size());
        g.kvs_.push_back(GgufKv{*key, std::move(*value)});
    }

    if (const GgufValue* a = g.find("general.alignment")) {
        if (!a->isInteger())
            return std::unexpected(badFile(fmt::format("general.alignment has type {}, expected an unsigned integer", describeValue(*a))));
        const bool negative = a->isSigned && a->i < 0;
        if (negative || a->u == 0 || (a->u & (a->u - 1)) != 0 || a->u > (1u << 20))
            return std::unexpected(badFile(fmt::format("general.alignment {} is not a power of two between 1 and 1 MiB",
                                                       negative ? fmt::format("{}", a->i) : fmt::format("{}", a->u))));
        g.alignment_ = a->u;
    }

    g.tensors_.reserve(reservation<GgufTensorInfo>(*nTensors, c.remaining()));
    for (uint64_t t = 0; t < *nTensors; ++t) {
        GgufTensorInfo info;
        auto name = c.readString(fmt::format("name of tensor #{}", t), kMaxTensorNameLength);
        if (!name) return std::unexpected(name.error());
        info.name = *name;
        const std::string tensorName = shownText(info.name);
        auto nDims = c.read<uint32_t>(fmt::format("dimension count of tensor {}", tensorName));
        if (!nDims) return std::unexpected(nDims.error());
        if (*nDims == 0 || *nDims > kMaxDims)
            return std::unexpected(badFile(fmt::format("tensor {} has {} dimensions (1 to {} allowed)", tensorName, *nDims, kMaxDims)));
        info.nDims = *nDims;
        uint64_t elements = 1;
        for (uint32_t d = 0; d < info.nDims; ++d) {
            auto ne = c.read<uint64_t>(fmt::format("dimension {} of tensor {}", d, tensorName));
            if (!ne) return std::unexpected(ne.error());
            if (*ne == 0 || *ne > (uint64_t(1) << 40))
                return std::unexpected(badFile(fmt::format("tensor {} has absurd dimension {} = {}", tensorName, d, *ne)));
            info.ne[d] = *ne;
            if (elements > std::numeric_limits<uint64_t>::max() / *ne)
                return std::unexpected(badFile(fmt::format("tensor {}: element count overflows", tensorName)));
            elements *= *ne;
        }
        info.nElements = elements;
        auto type = c.read<uint32_t>(fmt::format("type of tensor {}", tensorName));
        if (!type) return std::unexpected(type.error());
        auto traits = ggmlTypeInfo(*type);
        if (!traits)
            return std::unexpected(badFile(fmt::format("tensor {} has unknown type id {}", tensorName, *type)));
        info.typeId = *type;
        if (info.ne[0] % traits->blockSize != 0)
            return std::unexpected(badFile(fmt::format("tensor {}: row length {} is not a multiple of the {} block size {}",
                                                       tensorName, info.ne[0], traits->name, traits->blockSize)));
        const uint64_t blocks = elements / traits->blockSize;
        if (blocks > std::numeric_limits<uint64_t>::max() / traits->typeSize)
            return std::unexpected(badFile(fmt::format("tensor {}: byte size overflows", tensorName)));
        info.nBytes = blocks * traits->typeSize;
        auto offset = c.read<uint64_t>(fmt::format("offset of tensor {}", tensorName));
        if (!offset) return std::unexpected(offset.error());
        if (*offset % g.alignment_ != 0)
            return std::unexpected(badFile(fmt::format("tensor {}: offset {} is not a multiple of the alignment {}",
                                                       tensorName, *offset, g.alignment_)));
        info.offset = *offset;
        if (g.tensorIndex_.contains(info.name))
            return std::unexpected(badFile(fmt::format("tensor {} appears twice", tensorName)));
        g.tensorIndex_.emplace(info.name, g.tensors_.size());
        g.tensors_.push_back(info);
    }

    // Tensor data starts at the next multiple of the alignment. A vocabulary-only file (no
    // tensors) may end before that padding.
    const uint64_t headerEnd = c.pos();
    g.dataOffset_ = (headerEnd + g.alignment_ - 1) / g.alignment_ * g.alignment_;
    const uint64_t fileSize = g.fileSize();
    for (const auto& info : g.tensors_) {
        // end = dataOffset + offset + nBytes, compared without overflow.
        const uint64_t room = fileSize > g.dataOffset_ ? fileSize - g.dataOffset_ : 0;
        if (info.offset > room || info.nBytes > room - info.offset) {
            const unsigned __int128 end = (unsigned __int128)g.dataOffset_ + info.offset + info.nBytes;
            const std::string endText = end > std::numeric_limits<uint64_t>::max()
                                            ? std::string("beyond 2^64")
                                            : fmt::format("{}", uint64_t(end));
            return std::unexpected(badFile(fmt::format("truncated: tensor {} ends at byte {}, file has {}",
                                                       shownText(info.name), endText, fileSize)));
        }
    }
    // No two tensors may share bytes.
    std::vector<const GgufTensorInfo*> byOffset;
    byOffset.reserve(g.tensors_.size());
    for (const auto& info : g.tensors_) byOffset.push_back(&info);
    // Stable: tensors at one offset are named in file order, the same message every time.
    std::stable_sort(byOffset.begin(), byOffset.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
    for (size_t k = 1; k < byOffset.size(); ++k) {
        const auto* prev = byOffset[k - 1];
        if (prev->offset + prev->nBytes > byOffset[k]->offset)
            return std::unexpected(badFile(fmt::format("tensors {} and {} overlap", shownText(prev->name),
                                                       shownText(byOffset[k]->name))));
    }
    return std::move(g);
    }();
    if (ranOut) *ranOut = c.ranOut();
    return result;
}

const GgufValue* GgufFile::find(std::string_view key) const {
    auto it = kvIndex_.find(key);
    return it == kvIndex_.end() ? nullptr : &kvs_[it->second].value;
}

Result<std::optional<uint64_t>> GgufFile::getUint(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return std::optional<uint64_t>{};
    if (!v->isInteger())
        return fail(ErrorKind::BadFile, fmt::format("metadata key {} has type {}, expected an integer", shownText(key), describeValue(*v)));
    if (v->isSigned && v->i < 0)
        return fail(ErrorKind::BadFile, fmt::format("metadata key {} is negative ({})", shownText(key), v->i));
    return std::optional<uint64_t>{v->u};
}

Result<std::optional<double>> GgufFile::getFloat(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return std::optional<double>{};
    if (v->isFloat()) return std::optional<double>{v->f};
    if (v->isInteger()) return std::optional<double>{v->isSigned ? double(v->i) : double(v->u)};
    return fail(ErrorKind::BadFile, fmt::format("metadata key {} has type {}, expected a number", shownText(key), describeValue(*v)));
}

Result<std::optional<std::string_view>> GgufFile::getString(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return std::optional<std::string_view>{};
    if (v->type != GgufType::String)
        return fail(ErrorKind::BadFile, fmt::format("metadata key {} has type {}, expected a string", shownText(key), describeValue(*v)));
    return std::optional<std::string_view>{v->str};
}

Result<std::optional<bool>> GgufFile::getBool(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return std::optional<bool>{};
    if (v->type == GgufType::Bool) return std::optional<bool>{v->b};
    if (v->isInteger()) return std::optional<bool>{v->isSigned ? v->i != 0 : v->u != 0};  // u is 0 when negative
    return fail(ErrorKind::BadFile, fmt::format("metadata key {} has type {}, expected a bool", shownText(key), describeValue(*v)));
}

const GgufTensorInfo* GgufFile::findTensor(std::string_view name) const {
    auto it = tensorIndex_.find(name);
    return it == tensorIndex_.end() ? nullptr : &tensors_[it->second];
}

std::span<const uint8_t> GgufFile::tensorData(const GgufTensorInfo& info) const {
    assert(!headerOnly());  // parseHeader holds no tensor data
    return {file_.data() + dataOffset_ + info.offset, size_t(info.nBytes)};
}

}  // namespace inferscope
