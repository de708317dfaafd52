#pragma once
// GGUF (v2 and v3) reader. The whole file is memory-mapped; every count, length, dimension,
// type and offset in the header is validated against the file size before it is used, so a
// hostile file yields an Error naming the problem, never a read past the end or a huge allocation.
//
// Limits: keys <= 65535 bytes, tensor names <= 1024, <= 2^20 keys and tensors, <= 2^32 array items,
// 1..4 dimensions of 1..2^40. Key and tensor names in messages are escaped and cut to 64 bytes.
//
// Layout (little-endian): "GGUF" u32 version, u64 n_tensors, u64 n_kv,
//   n_kv × (string key, u32 value type, value),
//   n_tensors × (string name, u32 n_dims, n_dims × u64 ne, u32 ggml type, u64 offset),
//   padding to `general.alignment` (default 32), tensor data (offsets are relative to here).
// A string is u64 length + bytes (no terminator); an array is u32 element type, u64 count, items.

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/error.h"
#include "gguf/ggml_types.h"
#include "gguf/mapped_file.h"

namespace inferscope {

inline constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" read as a little-endian u32
inline constexpr uint64_t kGgufDefaultAlignment = 32;  // when general.alignment is absent

enum class GgufType : uint32_t {
    U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, Bool = 7,
    String = 8, Array = 9, U64 = 10, I64 = 11, F64 = 12,
};
std::string_view ggufTypeName(GgufType type);
// Text from a file (a key, a name, a string value, a library's message quoting one) as a message
// shows it: printable ASCII and valid UTF-8 are kept; control bytes, DEL, C1 controls and invalid
// UTF-8 become \xNN; past maxBytes it is cut and its length given. A message can then neither
// drive a terminal nor break a JSON encoder, whatever the file holds.
std::string shownText(std::string_view text, size_t maxBytes = 64);
// Bytes of one fixed-size scalar of this type (u8 .. f64, bool); 0 for String and Array.
uint64_t ggufScalarSize(GgufType type);

// One metadata value. Strings and array items point into the mapping (valid while the file lives).
struct GgufValue {
    GgufType type = GgufType::U8;
    // Scalars: integers in `u`/`i` (both filled when representable), floats in `f`, bools in `b`.
    uint64_t u = 0;
    int64_t i = 0;
    double f = 0;
    bool b = false;
    bool isSigned = false;
    std::string_view str;
    // Arrays: element type, count and the raw items (numeric types; unaligned);
    // string arrays are indexed once into `strings`.
    GgufType elemType = GgufType::U8;
    uint64_t count = 0;
    const uint8_t* items = nullptr;
    std::vector<std::string_view> strings;

    bool isInteger() const;
    bool isFloat() const { return type == GgufType::F32 || type == GgufType::F64; }
    // Element access for numeric arrays (i < count, numeric elemType). intAt truncates floats
    // toward zero, clamped to int64 (NaN gives 0).
    double numberAt(uint64_t index) const;
    int64_t intAt(uint64_t index) const;
};

struct GgufKv {
    std::string_view key;
    GgufValue value;
};

struct GgufTensorInfo {
    std::string_view name;
    uint32_t nDims = 0;
    std::array<uint64_t, 4> ne{1, 1, 1, 1};  // ne[0] is the contiguous (innermost) dimension
    uint32_t typeId = 0;                       // raw id; ggmlTypeInfo(typeId) is known to exist
    GgmlType type() const { return GgmlType(typeId); }
    uint64_t offset = 0;                       // from the start of the tensor data section
    uint64_t nElements = 0;
    uint64_t nBytes = 0;
    std::string shapeString() const;           // "[64, 512]"
};

class GgufFile {
public:
    // Maps and validates the file. Errors name the file's defect.
    static Result<GgufFile> open(const std::filesystem::path& path, MappedFile::Pages pages = MappedFile::Pages::Shared);
    // Validates an in-memory image (tests, fuzzing).
    static Result<GgufFile> parse(MappedFile file);
    // A header without its tensor data: the first bytes of a file of `fileSize` bytes (a model on
    // a server, read with an HTTP range request). Everything is validated as for a whole file, the
    // tensors against `fileSize`; tensorData() must not be called. When the header goes on past
    // the prefix, the error says so and *needsMore (if given) is set: read a longer prefix.
    static Result<GgufFile> parseHeader(std::vector<uint8_t> prefix, uint64_t fileSize, bool* needsMore = nullptr);

    uint32_t version() const { return version_; }
    uint64_t alignment() const { return alignment_; }
    // Start of tensor data: the header's end rounded up to the alignment. In a file without
    // tensors it may lie past fileSize() (gguf-py writes no padding there).
    uint64_t dataOffset() const { return dataOffset_; }
    uint64_t fileSize() const { return declaredSize_ ? declaredSize_ : file_.size(); }
    bool headerOnly() const { return declaredSize_ != 0; }
    const MappedFile& mapping() const { return file_; }  // the bytes every view points into

    const std::vector<GgufKv>& metadata() const { return kvs_; }
    const GgufValue* find(std::string_view key) const;

    // Typed look-ups: nullopt when absent; an Error when present with an unusable type or value.
    Result<std::optional<uint64_t>> getUint(std::string_view key) const;
    Result<std::optional<double>> getFloat(std::string_view key) const;
    Result<std::optional<std::string_view>> getString(std::string_view key) const;
    Result<std::optional<bool>> getBool(std::string_view key) const;

    const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
    const GgufTensorInfo* findTensor(std::string_view name) const;
    // The tensor's bytes inside the mapping (validated to lie within the file).
    std::span<const uint8_t> tensorData(const GgufTensorInfo& info) const;
    // A tensor's pages: mapped now (used in place), or dropped from the resident set (converted,
    // not read again). See MappedFile::populate / release.
    void populateTensor(const GgufTensorInfo& info) const { file_.populate(dataOffset_ + info.offset, info.nBytes); }
    void releaseTensor(const GgufTensorInfo& info) const { file_.release(dataOffset_ + info.offset, info.nBytes); }

private:
    static Result<GgufFile> parseImpl(MappedFile file, uint64_t declaredSize, bool* ranOut);

    MappedFile file_;
    uint64_t declaredSize_ = 0;  // parseHeader: the whole file's size (file_ holds a prefix)
    uint32_t version_ = 0;
    uint64_t alignment_ = kGgufDefaultAlignment;
    uint64_t dataOffset_ = 0;
    std::vector<GgufKv> kvs_;
    std::vector<GgufTensorInfo> tensors_;
    std::unordered_map<std::string_view, size_t> kvIndex_;
    std::unordered_map<std::string_view, size_t> tensorIndex_;
};

}  // namespace inferscope
