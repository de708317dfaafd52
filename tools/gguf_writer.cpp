#include "tools/gguf_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>

#include "tools/gguf_raw_builder.h"

namespace inferscope {
namespace detail {

// Where an image goes, in order. Keeps the first failure; writes after it are dropped.
class GgufOutput {
public:
    virtual ~GgufOutput() = default;

    void write(std::span<const uint8_t> bytes) {
        if (error_) return;
        put(bytes);
        pos_ += bytes.size();
    }
    void zeros(uint64_t n) {
        static constexpr uint8_t kZeros[4096] = {};
        while (n > 0 && !error_) {
            const uint64_t k = std::min<uint64_t>(n, sizeof kZeros);
            write({kZeros, size_t(k)});
            n -= k;
        }
    }
    uint64_t pos() const { return pos_; }
    const std::optional<Error>& error() const { return error_; }

protected:
    virtual void put(std::span<const uint8_t> bytes) = 0;
    void setError(Error e) {
        if (!error_) error_ = std::move(e);
    }

private:
    uint64_t pos_ = 0;
    std::optional<Error> error_;
};

}  // namespace detail

namespace {

using detail::GgufOutput;

class VectorOutput final : public GgufOutput {
public:
    explicit VectorOutput(uint64_t expectedBytes) {
        if (expectedBytes <= (uint64_t(1) << 30)) bytes.reserve(size_t(expectedBytes));
    }
    std::vector<uint8_t> bytes;

protected:
    void put(std::span<const uint8_t> b) override { bytes.insert(bytes.end(), b.begin(), b.end()); }
};

// Buffered writes to a file descriptor it does not own. `shown` names the file in errors.
class FileOutput final : public GgufOutput {
public:
    FileOutput(int fd, std::string shown) : fd_(fd), shown_(std::move(shown)) { buf_.reserve(kBufferBytes); }

    void flush() {
        if (!error()) writeAll(buf_);
        buf_.clear();
    }

protected:
    void put(std::span<const uint8_t> b) override {
        if (buf_.size() + b.size() > kBufferBytes) flush();
        if (b.size() >= kBufferBytes)
            writeAll(b);  // large chunks go straight through
        else
            buf_.insert(buf_.end(), b.begin(), b.end());
    }

private:
    void writeAll(std::span<const uint8_t> b) {
        while (!b.empty() && !error()) {
            const ssize_t n = ::write(fd_, b.data(), b.size());
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) {
                setError(Error{ErrorKind::Io, fmt::format("cannot write {}: {}", shown_, std::strerror(errno))});
                return;
            }
            b = b.subspan(size_t(n));
        }
    }

    static constexpr size_t kBufferBytes = size_t(1) << 20;
    int fd_;
    std::string shown_;
    std::vector<uint8_t> buf_;
};

// What a producer writes one tensor into: counts the bytes, keeps the producer's failure.
class TensorSink final : public GgufTensorSink {
public:
    explicit TensorSink(GgufOutput& out) : out_(out) {}
    using GgufTensorSink::write;
    void write(std::span<const uint8_t> bytes) override {
        if (!ok()) return;
        out_.write(bytes);
        written += bytes.size();
    }
    void fail(Error error) override {
        if (!failure) failure = std::move(error);
    }
    bool ok() const override { return !failure && !out_.error(); }

    uint64_t written = 0;
    std::optional<Error> failure;

private:
    GgufOutput& out_;
};

uint64_t alignUp(uint64_t x, uint64_t alignment) { return (x + alignment - 1) / alignment * alignment; }

std::string shapeText(std::span<const uint64_t> ne) {
    return fmt::format("[{}]", fmt::join(ne, ", "));
}

}  // namespace

GgufWriter& GgufWriter::add(std::string key, GgufMetaValue value) {
    kvs_.push_back(Kv{std::move(key), std::move(value)});
    return *this;
}

GgufWriter& GgufWriter::addTensor(std::string name, std::vector<uint64_t> ne, GgmlType type,
                                  std::span<const uint8_t> data) {
    const auto expected = ggmlTensorBytes(uint32_t(type), ne);
    if (expected && *expected != data.size() && !invalid_)
        invalid_ = Error{ErrorKind::InvalidArgument,
                         fmt::format("tensor {}: {} bytes given, a {} {} tensor has {}", name, data.size(),
                                     shapeText(ne), ggmlTypeName(uint32_t(type)), *expected)};
    return addTensor(std::move(name), std::move(ne), type,
                     [bytes = std::vector<uint8_t>(data.begin(), data.end())](GgufTensorSink& sink) {
                         sink.write(bytes);
                     });
}

GgufWriter& GgufWriter::addTensor(std::string name, std::vector<uint64_t> ne, GgmlType type,
                                  GgufTensorProducer producer) {
    GgufTensorSpec spec{std::move(name), std::move(ne), uint32_t(type), 0, std::nullopt};
    if (auto bytes = ggmlTensorBytes(spec.typeId, spec.ne)) {
        spec.nBytes = *bytes;
    } else if (!invalid_) {
        invalid_ = Error{ErrorKind::InvalidArgument,
                         fmt::format("tensor {}: shape {} is not a valid {} tensor", spec.name, shapeText(spec.ne),
                                     ggmlTypeName(spec.typeId))};
    }
    return addRawTensor(std::move(spec), std::move(producer));
}

GgufWriter& GgufWriter::addRawTensor(GgufTensorSpec spec, std::vector<uint8_t> data) {
    spec.nBytes = data.size();
    return addRawTensor(std::move(spec), [bytes = std::move(data)](GgufTensorSink& sink) { sink.write(bytes); });
}

GgufWriter& GgufWriter::addRawTensor(GgufTensorSpec spec, GgufTensorProducer producer) {
    tensors_.push_back(Tensor{std::move(spec), std::move(producer)});
    return *this;
}

GgufLayout GgufWriter::layout() const {
    GgufLayout lay;
    for (const auto& kv : kvs_) {
        if (kv.key != "general.alignment") continue;
        const auto a = kv.value.asUint();
        // The reader's rule: a power of two from 1 to 1 MiB. Anything else is written as given
        // (a hostile file) and laid out with the default.
        if (a && *a != 0 && (*a & (*a - 1)) == 0 && *a <= (uint64_t(1) << 20)) lay.alignment = *a;
        break;
    }
    uint64_t next = 0;  // relative to the data section
    for (const auto& t : tensors_) {
        lay.offsets.push_back(next);
        next = alignUp(next + t.spec.nBytes, lay.alignment);
    }
    lay.headerBytes = encodeHeader(lay).size();
    lay.dataOffset = tensors_.empty() ? lay.headerBytes : alignUp(lay.headerBytes, lay.alignment);
    lay.fileBytes = lay.dataOffset + next;
    return lay;
}

std::vector<uint8_t> GgufWriter::encodeHeader(const GgufLayout& lay) const {
    GgufRawBuilder b;
    b.header(header_.version, header_.nTensors.value_or(tensors_.size()), header_.nKv.value_or(kvs_.size()),
             header_.magic);
    for (const auto& kv : kvs_) b.key(kv.key, kv.value.typeId()).bytes(kv.value.body());
    for (size_t k = 0; k < tensors_.size(); ++k) {
        const auto& s = tensors_[k].spec;
        b.tensorInfo(s.name, s.ne, s.typeId, s.declaredOffset.value_or(lay.offsets[k]));
    }
    return std::move(b).take();
}

Result<void> GgufWriter::writeTo(GgufOutput& out) const {
    if (invalid_) return std::unexpected(*invalid_);
    const GgufLayout lay = layout();
    out.write(encodeHeader(lay));
    for (size_t k = 0; k < tensors_.size(); ++k) {
        const Tensor& t = tensors_[k];
        out.zeros(lay.dataOffset + lay.offsets[k] - out.pos());  // padding before this tensor
        TensorSink sink(out);
        if (t.producer) t.producer(sink);
        if (sink.failure) return std::unexpected(*sink.failure);
        if (out.error()) return std::unexpected(*out.error());
        if (sink.written != t.spec.nBytes)
            return fail(ErrorKind::InvalidArgument, fmt::format("tensor {}: producer wrote {} bytes, expected {}",
                                                                t.spec.name, sink.written, t.spec.nBytes));
    }
    out.zeros(lay.fileBytes - out.pos());  // padding after the last tensor
    if (out.error()) return std::unexpected(*out.error());
    return {};
}

Result<std::vector<uint8_t>> GgufWriter::toBytes() const {
    VectorOutput out(layout().fileBytes);
    if (auto r = writeTo(out); !r) return std::unexpected(r.error());
    return std::move(out.bytes);
}

Result<void> GgufWriter::writeFile(const std::filesystem::path& path) const {
    static std::atomic<uint32_t> counter{0};
    const std::string shown = path.string();
    // A hidden temporary beside the target: rename() is atomic only within one file system.
    std::filesystem::path tmp;
    int fd = -1;
    for (int attempt = 0; fd < 0 && attempt < 100; ++attempt) {
        tmp = path.parent_path() /
              fmt::format(".{}.tmp-{}-{}", path.filename().string(), ::getpid(), counter.fetch_add(1));
        fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) return fail(ErrorKind::Io, fmt::format("cannot write {}: {}", shown, std::strerror(errno)));

    FileOutput out(fd, shown);
    Result<void> result = writeTo(out);
    out.flush();
    if (result && out.error()) result = std::unexpected(*out.error());
    if (result && ::fsync(fd) != 0)
        result = fail(ErrorKind::Io, fmt::format("cannot write {}: {}", shown, std::strerror(errno)));
    if (::close(fd) != 0 && result)
        result = fail(ErrorKind::Io, fmt::format("cannot write {}: {}", shown, std::strerror(errno)));
    if (result && ::rename(tmp.c_str(), path.c_str()) != 0)
        result = fail(ErrorKind::Io, fmt::format("cannot replace {}: {}", shown, std::strerror(errno)));
    if (!result) {
        ::unlink(tmp.c_str());
        return result;
    }
    // Make the rename itself durable (best effort: some file systems refuse fsync on directories).
    const std::filesystem::path dir = path.parent_path().empty() ? "." : path.parent_path();
    if (const int dirFd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dirFd >= 0) {
        ::fsync(dirFd);
        ::close(dirFd);
    }
    return {};
}

}  // namespace inferscope
