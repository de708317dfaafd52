// GGUF metadata values: their types and sizes, decoding from the mapping, element access, and
// file text as messages show it.
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <limits>

#include "gguf/gguf_file.h"
#include "gguf/gguf_reader_detail.h"

namespace inferscope {
namespace gguf_detail {
namespace {

// An array length above this is absurd whatever the file size (vocabularies: < 10^6 items);
// below it, one the file cannot hold is reported as a truncation where the bytes run out.
constexpr uint64_t kMaxArrayLength = uint64_t(1) << 32;

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

}  // namespace

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

}  // namespace gguf_detail

using namespace gguf_detail;

// See gguf_file.h: file text in a message can neither drive a terminal nor break a JSON encoder.
std::string shownText(std::string_view name, size_t maxBytes) {
    const std::string_view head = name.substr(0, maxBytes);
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
    if (name.size() > maxBytes) out += fmt::format("... ({} bytes)", name.size());
    return out;
}

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

}  // namespace inferscope
