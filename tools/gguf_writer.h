#pragma once
// GgufWriter: writes GGUF v3 (or v2) images, the inverse of GgufFile.
//
//   GgufWriter w;                                          // version 3
//   w.add("general.architecture", GgufMetaValue::string("llama"));
//   w.add("llama.block_count", GgufMetaValue::u32(5));
//   w.addTensor("output_norm.weight", {64}, GgmlType::F32, bytes);             // bytes copied now
//   w.addTensor("token_embd.weight", {64, 512}, GgmlType::F32, producer);      // streamed at write time
//   auto image = w.toBytes();         // or: w.writeFile(path) (temp file + fsync + rename)
//
// Layout: header (magic, version, counts, metadata in call order, tensor infos in call order), zero
// padding to the alignment, then each tensor's bytes at the next multiple of the alignment, in call
// order, and zero padding after the last one (as ggml and gguf-py write it). With no tensors nothing
// follows the header (as gguf-py writes vocabulary-only files). The alignment is `general.alignment`
// when that key holds a power of two from 1 to 1 MiB, else 32.
//
// Tensor data is never held by the writer unless given as bytes: a producer callback streams each
// tensor's bytes into the output, so multi-GB files are written in constant memory.
//
// Hostile files: the writer checks nothing about the format. Duplicate keys, invalid value types
// (GgufMetaValue::raw), custom magic/version/counts (header()), any dims/type id/size/declared offset
// (addRawTensor) are written as given; GgufRawBuilder goes lower still.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "gguf/ggml_types.h"
#include "gguf/gguf_file.h"

namespace inferscope {

// One metadata value, already encoded: its u32 value type and the bytes that follow the type.
class GgufMetaValue {
public:
    static GgufMetaValue u8(uint8_t v);
    static GgufMetaValue i8(int8_t v);
    static GgufMetaValue u16(uint16_t v);
    static GgufMetaValue i16(int16_t v);
    static GgufMetaValue u32(uint32_t v);
    static GgufMetaValue i32(int32_t v);
    static GgufMetaValue u64(uint64_t v);
    static GgufMetaValue i64(int64_t v);
    static GgufMetaValue f32(float v);
    static GgufMetaValue f64(double v);
    static GgufMetaValue boolean(bool v);
    static GgufMetaValue string(std::string_view s);

    // Arrays of scalars (the element type follows from the C++ type) and of strings.
    static GgufMetaValue array(std::span<const uint8_t> items);
    static GgufMetaValue array(std::span<const int8_t> items);
    static GgufMetaValue array(std::span<const uint16_t> items);
    static GgufMetaValue array(std::span<const int16_t> items);
    static GgufMetaValue array(std::span<const uint32_t> items);
    static GgufMetaValue array(std::span<const int32_t> items);
    static GgufMetaValue array(std::span<const uint64_t> items);
    static GgufMetaValue array(std::span<const int64_t> items);
    static GgufMetaValue array(std::span<const float> items);
    static GgufMetaValue array(std::span<const double> items);
    static GgufMetaValue boolArray(std::span<const bool> items);
    static GgufMetaValue stringArray(std::span<const std::string> items);
    static GgufMetaValue stringArray(std::span<const std::string_view> items);

    // Escape hatch: any type id (13, 9 with a nested array, ...) followed by `body` verbatim.
    static GgufMetaValue raw(uint32_t typeId, std::vector<uint8_t> body);
    // The same value as one the reader parsed (bit-exact for every type; a bool is written 0/1).
    static GgufMetaValue copyOf(const GgufValue& parsed);

    uint32_t typeId() const { return typeId_; }
    const std::vector<uint8_t>& body() const { return body_; }
    // The value of an integer type when it is non-negative; nullopt otherwise.
    std::optional<uint64_t> asUint() const;

    bool operator==(const GgufMetaValue&) const = default;

private:
    GgufMetaValue(uint32_t typeId, std::vector<uint8_t> body) : typeId_(typeId), body_(std::move(body)) {}
    template <class T>
    static GgufMetaValue scalar(GgufType type, T v);
    template <class T>
    static GgufMetaValue numbers(GgufType elemType, std::span<const T> items);

    uint32_t typeId_;
    std::vector<uint8_t> body_;
};

// Receives one tensor's bytes in order, in chunks of any size. Implemented by the writer.
class GgufTensorSink {
public:
    virtual void write(std::span<const uint8_t> bytes) = 0;
    void write(const void* data, size_t n) { write({static_cast<const uint8_t*>(data), n}); }
    // The producer cannot make its data: the write is abandoned with this error.
    virtual void fail(Error error) = 0;
    // False once the output failed (disk full, ...): a producer may stop early; its writes are dropped.
    virtual bool ok() const = 0;

protected:
    ~GgufTensorSink() = default;
};

// Writes exactly the tensor's byte size into the sink. Called once per toBytes()/writeFile().
using GgufTensorProducer = std::function<void(GgufTensorSink&)>;

// A tensor info written as given (hostile files); nBytes is what the producer must write.
struct GgufTensorSpec {
    std::string name;
    std::vector<uint64_t> ne;                 // ne[0] innermost; n_dims = ne.size() (0 or 5 allowed)
    uint32_t typeId = 0;                      // ggml type id, unknown ids allowed
    uint64_t nBytes = 0;
    std::optional<uint64_t> declaredOffset;   // written instead of the computed offset; the data still
                                              // goes where the layout puts it
};

// The first 24 bytes. Counts default to what was added.
struct GgufHeaderFields {
    uint32_t magic = kGgufMagic;
    uint32_t version = 3;
    std::optional<uint64_t> nTensors;
    std::optional<uint64_t> nKv;
};

// Where everything goes (byte positions in the file).
struct GgufLayout {
    uint64_t alignment = kGgufDefaultAlignment;
    uint64_t headerBytes = 0;          // magic .. end of the last tensor info
    uint64_t dataOffset = 0;           // start of tensor data (headerBytes when there are no tensors)
    std::vector<uint64_t> offsets;     // each tensor's data, relative to dataOffset
    uint64_t fileBytes = 0;
};

namespace detail {
class GgufOutput;
}

class GgufWriter {
public:
    explicit GgufWriter(uint32_t version = 3) { header_.version = version; }

    GgufHeaderFields& header() { return header_; }
    const GgufHeaderFields& header() const { return header_; }

    // Metadata, written in call order; a repeated key is written twice.
    GgufWriter& add(std::string key, GgufMetaValue value);

    // A tensor of a known type; the byte size follows from ne and type. A size mismatch, a row length
    // that is not a multiple of the block size or an unknown type makes toBytes()/writeFile() fail.
    GgufWriter& addTensor(std::string name, std::vector<uint64_t> ne, GgmlType type, std::span<const uint8_t> data);
    GgufWriter& addTensor(std::string name, std::vector<uint64_t> ne, GgmlType type, GgufTensorProducer producer);
    // Any tensor info, written as given (with bytes: spec.nBytes is data.size()).
    GgufWriter& addRawTensor(GgufTensorSpec spec, std::vector<uint8_t> data);
    GgufWriter& addRawTensor(GgufTensorSpec spec, GgufTensorProducer producer);

    size_t metadataCount() const { return kvs_.size(); }
    size_t tensorCount() const { return tensors_.size(); }
    GgufLayout layout() const;

    Result<std::vector<uint8_t>> toBytes() const;
    // Writes beside `path` under a temporary name, fsyncs, then renames over `path`: readers see
    // the old file or the complete new one, never a partial one. On error nothing is left behind.
    Result<void> writeFile(const std::filesystem::path& path) const;

private:
    struct Kv {
        std::string key;
        GgufMetaValue value;
    };
    struct Tensor {
        GgufTensorSpec spec;
        GgufTensorProducer producer;
    };

    std::vector<uint8_t> encodeHeader(const GgufLayout& layout) const;
    Result<void> writeTo(detail::GgufOutput& out) const;

    GgufHeaderFields header_;
    std::vector<Kv> kvs_;
    std::vector<Tensor> tensors_;
    std::optional<Error> invalid_;  // the first addTensor() misuse, reported when writing
};

}  // namespace inferscope
