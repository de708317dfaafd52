#include "gguf/gguf_file.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <limits>

namespace inferscope {
namespace {

constexpr uint64_t kMaxKeyLength = 65535;
constexpr uint64_t kMaxTensorNameLength = 1024;
constexpr uint32_t kMaxDims = 4;
// Counts above these are absurd whatever the file size (real models: < 100 keys, < 10^4 tensors,
// vocabularies < 10^6). Below them, a count the file cannot hold is reported as a truncation at
// the entry where the bytes run out.
constexpr uint64_t kMaxMetadataCount = uint64_t(1) << 20;
constexpr uint64_t kMaxTensorCount = uint64_t(1) << 20;
constexpr uint64_t kMaxArrayLength = uint64_t(1) << 32;
// A count in the header is a claim. Reserving for it is capped in bytes by what remains of the
// file: a count the file cannot back then costs no more memory than the file's size, and entries
// actually present grow the vectors as they are read (tests/core/test_fuzz_regressions.cpp, ReaderHeap).
template <class T>
size_t reservation(uint64_t claimed, uint64_t remainingBytes) {
    return size_t(std::min(claimed, remainingBytes / sizeof(T)));
}

Error badFile(std::string message) { return Error{ErrorKind::BadFile, std::move(message)}; }

// A key or tensor name from the file, as shown in a message: printable ASCII and valid UTF-8 are
// kept; control bytes, DEL, C1 controls and invalid UTF-8 become \xNN (so a message can neither
// drive a terminal nor break a JSON encoder); past 64 bytes the name is cut and its length given.
std::string shown(std::string_view name, size_t kShownBytes = 64) {
    const std::string_view head = name.substr(0, kShownBytes);
    std::string out;
    out.reserve(head.size());
    for (size_t i = 0; i < head.size();) {
        const auto c = uint8_t(head[i]);
        const size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
        bool ok = len == 1 ? (c >= 0x20 && c != 0x7f) : len > 1 && i + len <= head.size();
        if (ok && len > 1) {
            uint32_t cp = c & (0x7fu >> len);
            for (size_t k = 1; ok && k < len; ++k) {
                ok = (uint8_t(head[i + k]) & 0xc0) == 0x80;
                cp = cp << 6 | (uint8_t(head[i + k]) & 0x3f);
            }
            // Shortest form only (2-byte forms from U+00A0: U+0080..U+009F are C1 controls),
            // no surrogates, nothing past U+10FFFF.
            constexpr uint32_t kMinCodePoint[] = {0, 0, 0xa0, 0x800, 0x10000};
            ok = ok && cp >= kMinCodePoint[len] && cp <= 0x10ffff && (cp < 0xd800 || cp > 0xdfff);
        }
        if (ok) {
            out.append(head.substr(i, len));
            i += len;
        } else {
            out += fmt::format("\\x{:02x}", c);
            ++i;
        }
    }
    if (name.size() > kShownBytes) out += fmt::format("... ({} bytes)", name.size());
    return out;
}

// Bounds-checked little-endian reader over the mapping. Every read states what it reads so
// that a truncation error says where the file ends too early.
class Cursor {
public:
    Cursor(const uint8_t* base, uint64_t size) : base_(base), size_(size) {}

    uint64_t pos() const { return pos_; }
    uint64_t remaining() const { return size_ - pos_; }

    template <class T>
    Result<T> read(std::string_view what) {
        if (remaining() < sizeof(T))
            return std::unexpected(badFile(fmt::format(
                "truncated: {} at byte {} needs {} bytes, file has {}", what, pos_, sizeof(T), size_)));
        T v;
        std::memcpy(&v, base_ + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }

    Result<std::string_view> readString(std::string_view what, uint64_t maxLength) {
        auto len = read<uint64_t>(what);
        if (!len) return std::unexpected(len.error());
        if (*len > maxLength)
            return std::unexpected(badFile(fmt::format(
                "{} at byte {} has absurd length {} (limit {})", what, pos_ - 8, *len, maxLength)));
        if (*len > remaining())
            return std::unexpected(badFile(fmt::format(
                "truncated: {} at byte {} needs {} bytes, file has {}", what, pos_, *len, size_)));
        std::string_view s(reinterpret_cast<const char*>(base_ + pos_), size_t(*len));
        pos_ += *len;
        return s;
    }

    Result<const uint8_t*> skip(uint64_t n, std::string_view what) {
        if (n > remaining())
            return std::unexpected(badFile(fmt::format(
                "truncated: {} at byte {} needs {} bytes, file has {}", what, pos_, n, size_)));
        const uint8_t* p = base_ + pos_;
        pos_ += n;
        return p;
    }

private:
    const uint8_t* base_;
    uint64_t size_;
    uint64_t pos_ = 0;
};

bool validType(uint32_t t) { return t <= uint32_t(GgufType::F64); }

// Decodes a fixed-size scalar at p into value's u/i/f/b fields.
void decodeScalar(GgufType t, const uint8_t* p, GgufValue& v) {
    auto load = [p](auto x) {
        std::memcpy(&x, p, sizeof(x));
        return x;
    };
    auto setSigned = [&v](int64_t x) {
        v.i = x;
        v.isSigned = true;
        v.u = x >= 0 ? uint64_t(x) : 0;
    };
    auto setUnsigned = [&v](uint64_t x) {
        v.u = x;
        v.i = x <= uint64_t(std::numeric_limits<int64_t>::max()) ? int64_t(x) : 0;
    };
    switch (t) {
        case GgufType::U8: setUnsigned(load(uint8_t{})); break;
        case GgufType::I8: setSigned(load(int8_t{})); break;
        case GgufType::U16: setUnsigned(load(uint16_t{})); break;
        case GgufType::I16: setSigned(load(int16_t{})); break;
        case GgufType::U32: setUnsigned(load(uint32_t{})); break;
        case GgufType::I32: setSigned(load(int32_t{})); break;
        case GgufType::U64: setUnsigned(load(uint64_t{})); break;
        case GgufType::I64: setSigned(load(int64_t{})); break;
        case GgufType::F32: v.f = load(float{}); break;
        case GgufType::F64: v.f = load(double{}); break;
        case GgufType::Bool: v.b = load(uint8_t{}) != 0; break;
        default: break;
    }
}

Result<GgufValue> readValue(Cursor& c, GgufType type, std::string_view key) {
    GgufValue v;
    v.type = type;
    if (type == GgufType::String) {
        auto s = c.readString(fmt::format("string value of {}", key), std::numeric_limits<uint64_t>::max());
        if (!s) return std::unexpected(s.error());
        v.str = *s;
        return v;
    }
    if (type != GgufType::Array) {
        auto p = c.skip(ggufScalarSize(type), fmt::format("value of {}", key));
        if (!p) return std::unexpected(p.error());
        decodeScalar(type, *p, v);
        return v;
    }
    // Array: element type, count, items.
    auto et = c.read<uint32_t>(fmt::format("array type of {}", key));
    if (!et) return std::unexpected(et.error());
    if (!validType(*et))
        return std::unexpected(badFile(fmt::format("metadata key {}: invalid array element type {}", key, *et)));
    v.elemType = GgufType(*et);
    if (v.elemType == GgufType::Array)
        return std::unexpected(Error{ErrorKind::Unsupported,
                                     fmt::format("metadata key {}: nested arrays are not supported", key)});
    auto count = c.read<uint64_t>(fmt::format("array length of {}", key));
    if (!count) return std::unexpected(count.error());
    if (*count > kMaxArrayLength)
        return std::unexpected(badFile(fmt::format("metadata key {}: absurd array length {} (limit {})", key,
                                                   *count, kMaxArrayLength)));
    v.count = *count;
    if (v.elemType == GgufType::String) {
        v.strings.reserve(reservation<std::string_view>(v.count, c.remaining()));
        for (uint64_t k = 0; k < v.count; ++k) {
            auto s = c.readString(fmt::format("string {} of {}", k, key), std::numeric_limits<uint64_t>::max());
            if (!s) return std::unexpected(s.error());
            v.strings.push_back(*s);
        }
        return v;
    }
    // count <= 2^32 and elements are <= 8 bytes: no overflow.
    auto p = c.skip(v.count * ggufScalarSize(v.elemType),
                    fmt::format("data of array {} ({} {})", key, v.count, ggufTypeName(v.elemType)));
    if (!p) return std::unexpected(p.error());
    v.items = *p;
    return v;
}

std::string describeValue(const GgufValue& v) {
    if (v.type == GgufType::Array) return fmt::format("array of {}", ggufTypeName(v.elemType));
    return std::string(ggufTypeName(v.type));
}

}  // namespace

std::string shownText(std::string_view text, size_t maxBytes) { return shown(text, maxBytes); }

std::string_view ggufTypeName(GgufType type) {
    switch (type) {
        case GgufType::U8: return "u8";
        case GgufType::I8: return "i8";
        case GgufType::U16: return "u16";
        case GgufType::I16: return "i16";
        case GgufType::U32: return "u32";
        case GgufType::I32: return "i32";
        case GgufType::F32: return "f32";
        case GgufType::Bool: return "bool";
        case GgufType::String: return "string";
        case GgufType::Array: return "array";
        case GgufType::U64: return "u64";
        case GgufType::I64: return "i64";
        case GgufType::F64: return "f64";
    }
    return "invalid";
}

uint64_t ggufScalarSize(GgufType type) {
    switch (type) {
        case GgufType::U8: case GgufType::I8: case GgufType::Bool: return 1;
        case GgufType::U16: case GgufType::I16: return 2;
        case GgufType::U32: case GgufType::I32: case GgufType::F32: return 4;
        case GgufType::U64: case GgufType::I64: case GgufType::F64: return 8;
        default: return 0;
    }
}

bool GgufValue::isInteger() const {
    switch (type) {
        case GgufType::U8: case GgufType::I8: case GgufType::U16: case GgufType::I16:
        case GgufType::U32: case GgufType::I32: case GgufType::U64: case GgufType::I64:
            return true;
        default:
            return false;
    }
}

double GgufValue::numberAt(uint64_t index) const {
    GgufValue tmp;
    decodeScalar(elemType, items + index * ggufScalarSize(elemType), tmp);
    if (elemType == GgufType::F32 || elemType == GgufType::F64) return tmp.f;
    if (elemType == GgufType::Bool) return tmp.b ? 1.0 : 0.0;
    return tmp.isSigned ? double(tmp.i) : double(tmp.u);
}

int64_t GgufValue::intAt(uint64_t index) const {
    GgufValue tmp;
    decodeScalar(elemType, items + index * ggufScalarSize(elemType), tmp);
    if (elemType == GgufType::F32 || elemType == GgufType::F64) {
        // Truncated toward zero and clamped: a float out of int64's range (or NaN) from a file
        // must not reach the undefined conversion.
        if (std::isnan(tmp.f)) return 0;
        if (tmp.f >= 0x1p63) return std::numeric_limits<int64_t>::max();
        if (tmp.f <= -0x1p63) return std::numeric_limits<int64_t>::min();
        return int64_t(tmp.f);
    }
    return tmp.isSigned ? tmp.i : int64_t(tmp.u);
}

std::string GgufTensorInfo::shapeString() const {
    std::string s = "[";
    for (uint32_t d = 0; d < nDims; ++d) s += fmt::format("{}{}", d ? ", " : "", ne[d]);
    return s + "]";
}

Result<GgufFile> GgufFile::open(const std::filesystem::path& path) {
    auto mapped = MappedFile::open(path);
    if (!mapped) return std::unexpected(mapped.error());
    auto parsed = parse(std::move(*mapped));
    if (!parsed) {
        Error e = parsed.error();
        e.message = fmt::format("{}: {}", path.filename().string(), e.message);
        return std::unexpected(std::move(e));
    }
    return parsed;
}

Result<GgufFile> GgufFile::parse(MappedFile file) {
    GgufFile g;
    g.file_ = std::move(file);
    Cursor c(g.file_.data(), g.file_.size());

    // Fewer than 4 bytes: a truncated GGUF file if they start its magic, else not one at all.
    if (g.file_.size() < 4 && g.file_.size() > 0 && std::memcmp(g.file_.data(), "GGUF", g.file_.size()) != 0)
        return std::unexpected(badFile(fmt::format("not a GGUF file: {} bytes is too short", g.file_.size())));
    auto magic = c.read<uint32_t>("magic");
    if (!magic) return std::unexpected(magic.error());
    if (*magic != kGgufMagic) {
        const std::string_view bytes(reinterpret_cast<const char*>(g.file_.data()), 4);
        return std::unexpected(badFile(fmt::format("not a GGUF file: magic is \"{}\", expected \"GGUF\"", shown(bytes))));
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
        const std::string keyName = shown(*key);
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
        const std::string tensorName = shown(info.name);
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
    const uint64_t fileSize = g.file_.size();
    for (const auto& info : g.tensors_) {
        // end = dataOffset + offset + nBytes, compared without overflow.
        const uint64_t room = fileSize > g.dataOffset_ ? fileSize - g.dataOffset_ : 0;
        if (info.offset > room || info.nBytes > room - info.offset) {
            const unsigned __int128 end = (unsigned __int128)g.dataOffset_ + info.offset + info.nBytes;
            const std::string endText = end > std::numeric_limits<uint64_t>::max()
                                            ? std::string("beyond 2^64")
                                            : fmt::format("{}", uint64_t(end));
            return std::unexpected(badFile(fmt::format("truncated: tensor {} ends at byte {}, file has {}",
                                                       shown(info.name), endText, fileSize)));
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
            return std::unexpected(badFile(fmt::format("tensors {} and {} overlap", shown(prev->name),
                                                       shown(byOffset[k]->name))));
    }
    return g;
}

const GgufValue* GgufFile::find(std::string_view key) const {
    auto it = kvIndex_.find(key);
    return it == kvIndex_.end() ? nullptr : &kvs_[it->second].value;
}

Result<std::optional<uint64_t>> GgufFile::getUint(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return std::optional<uint64_t>{};
    if (!v->isInteger())
        return fail(ErrorKind::BadFile, fmt::format("metadata key {} has type {}, expected an integer", shown(key), describeValue(*v)));
    if (v->isSigned && v->i < 0)
        return fail(ErrorKind::BadFile, fmt::format("metadata key {} is negative ({})", shown(key), v->i));
    return std::optional<uint64_t>{v->u};
}

Result<std::optional<double>> GgufFile::getFloat(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return std::optional<double>{};
    if (v->isFloat()) return std::optional<double>{v->f};
    if (v->isInteger()) return std::optional<double>{v->isSigned ? double(v->i) : double(v->u)};
    return fail(ErrorKind::BadFile, fmt::format("metadata key {} has type {}, expected a number", shown(key), describeValue(*v)));
}

Result<std::optional<std::string_view>> GgufFile::getString(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return std::optional<std::string_view>{};
    if (v->type != GgufType::String)
        return fail(ErrorKind::BadFile, fmt::format("metadata key {} has type {}, expected a string", shown(key), describeValue(*v)));
    return std::optional<std::string_view>{v->str};
}

Result<std::optional<bool>> GgufFile::getBool(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return std::optional<bool>{};
    if (v->type == GgufType::Bool) return std::optional<bool>{v->b};
    if (v->isInteger()) return std::optional<bool>{v->isSigned ? v->i != 0 : v->u != 0};  // u is 0 when negative
    return fail(ErrorKind::BadFile, fmt::format("metadata key {} has type {}, expected a bool", shown(key), describeValue(*v)));
}

const GgufTensorInfo* GgufFile::findTensor(std::string_view name) const {
    auto it = tensorIndex_.find(name);
    return it == tensorIndex_.end() ? nullptr : &tensors_[it->second];
}

std::span<const uint8_t> GgufFile::tensorData(const GgufTensorInfo& info) const {
    return {file_.data() + dataOffset_ + info.offset, size_t(info.nBytes)};
}

}  // namespace inferscope
