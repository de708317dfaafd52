#include "tools/gguf_raw_builder.h"

namespace inferscope {

GgufRawBuilder& GgufRawBuilder::bytes(std::span<const uint8_t> data) {
    buf_.insert(buf_.end(), data.begin(), data.end());
    return *this;
}

GgufRawBuilder& GgufRawBuilder::text(std::string_view s) {
    buf_.insert(buf_.end(), s.begin(), s.end());
    return *this;
}

GgufRawBuilder& GgufRawBuilder::str(std::string_view s) { return u64(s.size()).text(s); }

GgufRawBuilder& GgufRawBuilder::zeros(uint64_t n) {
    buf_.resize(buf_.size() + n, 0);
    return *this;
}

GgufRawBuilder& GgufRawBuilder::padTo(uint64_t alignment, uint8_t fill) {
    if (alignment > 1 && buf_.size() % alignment != 0)
        buf_.resize(buf_.size() + (alignment - buf_.size() % alignment), fill);
    return *this;
}

GgufRawBuilder& GgufRawBuilder::header(uint32_t version, uint64_t nTensors, uint64_t nKv, uint32_t magic) {
    return u32(magic).u32(version).u64(nTensors).u64(nKv);
}

GgufRawBuilder& GgufRawBuilder::key(std::string_view name, uint32_t typeId) { return str(name).u32(typeId); }

GgufRawBuilder& GgufRawBuilder::array(uint32_t elemTypeId, uint64_t count) { return u32(elemTypeId).u64(count); }

GgufRawBuilder& GgufRawBuilder::tensorInfo(std::string_view name, std::span<const uint64_t> ne, uint32_t typeId,
                                           uint64_t offset) {
    str(name).u32(uint32_t(ne.size()));
    for (uint64_t n : ne) u64(n);
    return u32(typeId).u64(offset);
}

}  // namespace inferscope
