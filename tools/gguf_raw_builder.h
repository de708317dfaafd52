#pragma once
// GgufRawBuilder: little-endian bytes exactly as asked, for building GGUF images field by field.
// Nothing is validated or computed: a wrong count, a 2^63 string length, a custom magic or an
// offset past the end are written as given. GgufWriter encodes its header with it; tests use it
// directly to build hostile files (see tests/core/test_gguf_malformed*.cpp).
//
//   GgufRawBuilder b;
//   b.header(3, /*nTensors*/ 0, /*nKv*/ 1).key("general.name", GgufType::String).u64(1ull << 63);

#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

#include "gguf/gguf_file.h"

namespace inferscope {

class GgufRawBuilder {
public:
    // ---- little-endian scalars (the host is little-endian: x86-64, aarch64) ----------------------
    GgufRawBuilder& u8(uint8_t v) { return put(v); }
    GgufRawBuilder& i8(int8_t v) { return put(v); }
    GgufRawBuilder& u16(uint16_t v) { return put(v); }
    GgufRawBuilder& i16(int16_t v) { return put(v); }
    GgufRawBuilder& u32(uint32_t v) { return put(v); }
    GgufRawBuilder& i32(int32_t v) { return put(v); }
    GgufRawBuilder& u64(uint64_t v) { return put(v); }
    GgufRawBuilder& i64(int64_t v) { return put(v); }
    GgufRawBuilder& f32(float v) { return put(v); }
    GgufRawBuilder& f64(double v) { return put(v); }

    // ---- byte runs ---------------------------------------------------------------------------------
    GgufRawBuilder& bytes(std::span<const uint8_t> data);
    GgufRawBuilder& text(std::string_view s);                 // the bytes only, no length
    GgufRawBuilder& str(std::string_view s);                  // GGUF string: u64 length + bytes
    GgufRawBuilder& zeros(uint64_t n);
    GgufRawBuilder& padTo(uint64_t alignment, uint8_t fill = 0);  // up to a multiple of alignment

    // ---- GGUF structures, fields as given --------------------------------------------------------
    // magic, version, tensor count, metadata count (24 bytes).
    GgufRawBuilder& header(uint32_t version, uint64_t nTensors, uint64_t nKv, uint32_t magic = kGgufMagic);
    // A key and its u32 value type; the value's bytes follow (a scalar, str(), or array()).
    GgufRawBuilder& key(std::string_view name, GgufType type) { return key(name, uint32_t(type)); }
    GgufRawBuilder& key(std::string_view name, uint32_t typeId);
    // An array value's prefix: u32 element type, u64 count; the items follow.
    GgufRawBuilder& array(GgufType elemType, uint64_t count) { return array(uint32_t(elemType), count); }
    GgufRawBuilder& array(uint32_t elemTypeId, uint64_t count);
    // A tensor info: name, u32 n_dims (= ne.size()), ne[0..], u32 ggml type, u64 offset.
    GgufRawBuilder& tensorInfo(std::string_view name, std::span<const uint64_t> ne, uint32_t typeId,
                               uint64_t offset);
    GgufRawBuilder& tensorInfo(std::string_view name, std::initializer_list<uint64_t> ne, uint32_t typeId,
                               uint64_t offset) {
        return tensorInfo(name, std::span<const uint64_t>(ne.begin(), ne.size()), typeId, offset);
    }

    // ---- after the fact --------------------------------------------------------------------------
    uint64_t size() const { return buf_.size(); }
    void patchU32(uint64_t at, uint32_t v) { patch(at, v); }
    void patchU64(uint64_t at, uint64_t v) { patch(at, v); }
    void truncate(uint64_t n) { buf_.resize(n); }

    const std::vector<uint8_t>& data() const& { return buf_; }
    std::vector<uint8_t> take() && { return std::move(buf_); }

private:
    template <class T>
    GgufRawBuilder& put(T v) {
        const size_t at = buf_.size();
        buf_.resize(at + sizeof(T));
        std::memcpy(buf_.data() + at, &v, sizeof(T));
        return *this;
    }
    template <class T>
    void patch(uint64_t at, T v) {
        // A patch outside what was written is a programmer error in the test that asked for it.
        if (at + sizeof(T) > buf_.size()) __builtin_trap();
        std::memcpy(buf_.data() + at, &v, sizeof(T));
    }

    std::vector<uint8_t> buf_;
};

}  // namespace inferscope
