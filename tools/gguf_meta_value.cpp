// GgufMetaValue: metadata values encoded as GGUF stores them (declared in gguf_writer.h).
#include <cstring>

#include "tools/gguf_raw_builder.h"
#include "tools/gguf_writer.h"

namespace inferscope {

template <class T>
GgufMetaValue GgufMetaValue::scalar(GgufType type, T v) {
    std::vector<uint8_t> body(sizeof(T));
    std::memcpy(body.data(), &v, sizeof(T));
    return GgufMetaValue(uint32_t(type), std::move(body));
}

template <class T>
GgufMetaValue GgufMetaValue::numbers(GgufType elemType, std::span<const T> items) {
    GgufRawBuilder b;
    b.array(elemType, items.size());
    b.bytes({reinterpret_cast<const uint8_t*>(items.data()), items.size_bytes()});
    return GgufMetaValue(uint32_t(GgufType::Array), std::move(b).take());
}

GgufMetaValue GgufMetaValue::u8(uint8_t v) { return scalar(GgufType::U8, v); }
GgufMetaValue GgufMetaValue::i8(int8_t v) { return scalar(GgufType::I8, v); }
GgufMetaValue GgufMetaValue::u16(uint16_t v) { return scalar(GgufType::U16, v); }
GgufMetaValue GgufMetaValue::i16(int16_t v) { return scalar(GgufType::I16, v); }
GgufMetaValue GgufMetaValue::u32(uint32_t v) { return scalar(GgufType::U32, v); }
GgufMetaValue GgufMetaValue::i32(int32_t v) { return scalar(GgufType::I32, v); }
GgufMetaValue GgufMetaValue::u64(uint64_t v) { return scalar(GgufType::U64, v); }
GgufMetaValue GgufMetaValue::i64(int64_t v) { return scalar(GgufType::I64, v); }
GgufMetaValue GgufMetaValue::f32(float v) { return scalar(GgufType::F32, v); }
GgufMetaValue GgufMetaValue::f64(double v) { return scalar(GgufType::F64, v); }
GgufMetaValue GgufMetaValue::boolean(bool v) { return scalar(GgufType::Bool, uint8_t(v ? 1 : 0)); }

GgufMetaValue GgufMetaValue::string(std::string_view s) {
    GgufRawBuilder b;
    b.str(s);
    return GgufMetaValue(uint32_t(GgufType::String), std::move(b).take());
}

GgufMetaValue GgufMetaValue::array(std::span<const uint8_t> items) { return numbers(GgufType::U8, items); }
GgufMetaValue GgufMetaValue::array(std::span<const int8_t> items) { return numbers(GgufType::I8, items); }
GgufMetaValue GgufMetaValue::array(std::span<const uint16_t> items) { return numbers(GgufType::U16, items); }
GgufMetaValue GgufMetaValue::array(std::span<const int16_t> items) { return numbers(GgufType::I16, items); }
GgufMetaValue GgufMetaValue::array(std::span<const uint32_t> items) { return numbers(GgufType::U32, items); }
GgufMetaValue GgufMetaValue::array(std::span<const int32_t> items) { return numbers(GgufType::I32, items); }
GgufMetaValue GgufMetaValue::array(std::span<const uint64_t> items) { return numbers(GgufType::U64, items); }
GgufMetaValue GgufMetaValue::array(std::span<const int64_t> items) { return numbers(GgufType::I64, items); }
GgufMetaValue GgufMetaValue::array(std::span<const float> items) { return numbers(GgufType::F32, items); }
GgufMetaValue GgufMetaValue::array(std::span<const double> items) { return numbers(GgufType::F64, items); }

GgufMetaValue GgufMetaValue::boolArray(std::span<const bool> items) {
    GgufRawBuilder b;
    b.array(GgufType::Bool, items.size());
    for (bool v : items) b.u8(v ? 1 : 0);
    return GgufMetaValue(uint32_t(GgufType::Array), std::move(b).take());
}

GgufMetaValue GgufMetaValue::stringArray(std::span<const std::string> items) {
    GgufRawBuilder b;
    b.array(GgufType::String, items.size());
    for (const auto& s : items) b.str(s);
    return GgufMetaValue(uint32_t(GgufType::Array), std::move(b).take());
}

GgufMetaValue GgufMetaValue::stringArray(std::span<const std::string_view> items) {
    GgufRawBuilder b;
    b.array(GgufType::String, items.size());
    for (auto s : items) b.str(s);
    return GgufMetaValue(uint32_t(GgufType::Array), std::move(b).take());
}

GgufMetaValue GgufMetaValue::raw(uint32_t typeId, std::vector<uint8_t> body) {
    return GgufMetaValue(typeId, std::move(body));
}

GgufMetaValue GgufMetaValue::copyOf(const GgufValue& v) {
    switch (v.type) {
        case GgufType::U8: return u8(uint8_t(v.u));
        case GgufType::I8: return i8(int8_t(v.i));
        case GgufType::U16: return u16(uint16_t(v.u));
        case GgufType::I16: return i16(int16_t(v.i));
        case GgufType::U32: return u32(uint32_t(v.u));
        case GgufType::I32: return i32(int32_t(v.i));
        case GgufType::U64: return u64(v.u);
        case GgufType::I64: return i64(v.i);
        case GgufType::F32: return f32(float(v.f));  // float -> double -> float is exact
        case GgufType::F64: return f64(v.f);
        case GgufType::Bool: return boolean(v.b);
        case GgufType::String: return string(v.str);
        case GgufType::Array: break;
    }
    GgufRawBuilder b;
    b.array(v.elemType, v.count);
    if (v.elemType == GgufType::String) {
        for (auto s : v.strings) b.str(s);
    } else {
        // Numeric items are kept raw by the reader: copy them bit for bit.
        b.bytes({v.items, size_t(v.count * ggufScalarSize(v.elemType))});
    }
    return GgufMetaValue(uint32_t(GgufType::Array), std::move(b).take());
}

std::optional<uint64_t> GgufMetaValue::asUint() const {
    const auto type = GgufType(typeId_);
    const uint64_t size = typeId_ <= uint32_t(GgufType::F64) ? ggufScalarSize(type) : 0;
    const bool isInteger = type != GgufType::F32 && type != GgufType::F64 && type != GgufType::Bool;
    if (size == 0 || !isInteger || body_.size() != size) return std::nullopt;
    uint64_t u = 0;
    std::memcpy(&u, body_.data(), size);  // little-endian: the low bytes
    const bool isSigned = type == GgufType::I8 || type == GgufType::I16 || type == GgufType::I32 ||
                          type == GgufType::I64;
    if (isSigned && (u >> (size * 8 - 1)) & 1) return std::nullopt;  // negative
    return u;
}

}  // namespace inferscope
