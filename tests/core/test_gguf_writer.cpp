// GgufWriter and GgufRawBuilder in memory: what the writer writes reads back identically and the
// layout is what the reader computes. Files on disk: test_gguf_rewrite.cpp.
#include <cmath>
#include <limits>

#include "test_gguf_helpers.h"

using namespace inferscope;
using namespace inferscope::testing_gguf;

namespace {

// Every value type with its edge values, in an order that is not alphabetical.
std::vector<std::pair<std::string, GgufMetaValue>> everyValueType() {
    const std::vector<uint8_t> u8s{0, 1, 255};
    const std::vector<int8_t> i8s{-128, 0, 127};
    const std::vector<uint16_t> u16s{0, 65535};
    const std::vector<int16_t> i16s{-32768, 32767};
    const std::vector<uint32_t> u32s{0, 4294967295u};
    const std::vector<int32_t> i32s{std::numeric_limits<int32_t>::min(), -1, 2};
    const std::vector<uint64_t> u64s{0, std::numeric_limits<uint64_t>::max()};
    const std::vector<int64_t> i64s{std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
    const std::vector<float> f32s{-0.0f, 1e-45f, 3.4e38f, -1.5f};
    const std::vector<double> f64s{-0.0, 5e-324, 1.7e308, 3.141592653589793};
    const bool bools[] = {true, false, true};
    const std::vector<std::string> strings{"", "▁Once", std::string("nul\0byte", 8), "<0x0A>"};
    return {
        {"z.u8", GgufMetaValue::u8(255)},
        {"a.i8", GgufMetaValue::i8(-128)},
        {"m.u16", GgufMetaValue::u16(65535)},
        {"m.i16", GgufMetaValue::i16(-32768)},
        {"m.u32", GgufMetaValue::u32(4294967295u)},
        {"m.i32", GgufMetaValue::i32(-2147483647 - 1)},
        {"m.u64", GgufMetaValue::u64(std::numeric_limits<uint64_t>::max())},
        {"m.i64", GgufMetaValue::i64(std::numeric_limits<int64_t>::min())},
        {"m.f32", GgufMetaValue::f32(-0.0f)},
        {"m.f32.subnormal", GgufMetaValue::f32(1e-45f)},
        {"m.f64", GgufMetaValue::f64(3.141592653589793)},
        {"m.true", GgufMetaValue::boolean(true)},
        {"m.false", GgufMetaValue::boolean(false)},
        {"m.string", GgufMetaValue::string("héllo \xF0\x9F\xA6\x99")},
        {"m.string.empty", GgufMetaValue::string("")},
        {"arr.u8", GgufMetaValue::array(std::span<const uint8_t>(u8s))},
        {"arr.i8", GgufMetaValue::array(std::span<const int8_t>(i8s))},
        {"arr.u16", GgufMetaValue::array(std::span<const uint16_t>(u16s))},
        {"arr.i16", GgufMetaValue::array(std::span<const int16_t>(i16s))},
        {"arr.u32", GgufMetaValue::array(std::span<const uint32_t>(u32s))},
        {"arr.i32", GgufMetaValue::array(std::span<const int32_t>(i32s))},
        {"arr.u64", GgufMetaValue::array(std::span<const uint64_t>(u64s))},
        {"arr.i64", GgufMetaValue::array(std::span<const int64_t>(i64s))},
        {"arr.f32", GgufMetaValue::array(std::span<const float>(f32s))},
        {"arr.f64", GgufMetaValue::array(std::span<const double>(f64s))},
        {"arr.bool", GgufMetaValue::boolArray(bools)},
        {"arr.string", GgufMetaValue::stringArray(strings)},
        {"arr.empty", GgufMetaValue::array(std::span<const float>())},
    };
}

}  // namespace

TEST(GgufWriter, EveryValueTypeRoundTripsInV2AndV3) {
    for (uint32_t version : {2u, 3u}) {
        SCOPED_TRACE(version);
        const auto values = everyValueType();
        GgufWriter w(version);
        for (const auto& [key, value] : values) w.add(key, value);
        auto f = parseBytes(imageOf(w));
        ASSERT_TRUE(f) << f.error().message;
        EXPECT_EQ(f->version(), version);
        ASSERT_EQ(f->metadata().size(), values.size());
        for (size_t k = 0; k < values.size(); ++k) {
            SCOPED_TRACE(values[k].first);
            EXPECT_EQ(f->metadata()[k].key, values[k].first);  // file order kept
            EXPECT_EQ(GgufMetaValue::copyOf(f->metadata()[k].value), values[k].second);
        }
        // And the reader decodes what was meant.
        EXPECT_EQ(f->find("a.i8")->i, -128);
        EXPECT_EQ(f->find("m.u64")->u, std::numeric_limits<uint64_t>::max());
        EXPECT_EQ(f->find("m.i64")->i, std::numeric_limits<int64_t>::min());
        EXPECT_TRUE(std::signbit(f->find("m.f32")->f));
        EXPECT_EQ(float(f->find("m.f32.subnormal")->f), 1e-45f);
        EXPECT_EQ(f->find("m.f64")->f, 3.141592653589793);
        EXPECT_TRUE(f->find("m.true")->b);
        EXPECT_FALSE(f->find("m.false")->b);
        EXPECT_EQ(f->find("m.string")->str, "héllo \xF0\x9F\xA6\x99");
        const GgufValue* strings = f->find("arr.string");
        ASSERT_EQ(strings->strings.size(), 4u);
        EXPECT_EQ(strings->strings[2], std::string_view("nul\0byte", 8));
        EXPECT_EQ(f->find("arr.i32")->intAt(0), std::numeric_limits<int32_t>::min());
        EXPECT_EQ(f->find("arr.f32")->numberAt(3), -1.5);
        EXPECT_EQ(f->find("arr.bool")->numberAt(1), 0.0);
        EXPECT_EQ(f->find("arr.empty")->count, 0u);
    }
}

TEST(GgufWriter, TensorsReadBackAtTheComputedLayout) {
    const GgufWriter w = smallModel();
    const GgufLayout lay = w.layout();
    const auto image = imageOf(w);
    auto f = parseBytes(image);
    ASSERT_TRUE(f) << f.error().message;
    EXPECT_EQ(image.size(), lay.fileBytes);
    EXPECT_EQ(lay.fileBytes, lay.dataOffset + 288);  // the last tensor ends aligned: no trailing padding
    EXPECT_EQ(f->dataOffset(), lay.dataOffset);
    EXPECT_EQ(lay.offsets, (std::vector<uint64_t>{0, 96, 160}));
    ASSERT_EQ(f->tensors().size(), 3u);
    const uint8_t seeds[] = {1, 2, 3};
    for (size_t k = 0; k < 3; ++k) {
        const GgufTensorInfo& t = f->tensors()[k];
        EXPECT_EQ(t.offset, lay.offsets[k]);
        auto data = f->tensorData(t);
        EXPECT_EQ(std::vector<uint8_t>(data.begin(), data.end()), patternBytes(t.nBytes, seeds[k])) << t.name;
    }
    EXPECT_EQ(f->findTensor("token_embd.weight")->type(), GgmlType::Q8_0);
    EXPECT_EQ(f->findTensor("attn_norm.weight")->shapeString(), "[8, 3]");
    // Padding is zeros.
    for (uint64_t p = lay.headerBytes; p < lay.dataOffset; ++p) EXPECT_EQ(image[p], 0) << p;
    for (uint64_t p = lay.dataOffset + 68; p < lay.dataOffset + 96; ++p) EXPECT_EQ(image[p], 0) << p;
}

TEST(GgufWriter, HonoursGeneralAlignment64AndPadsAfterTheLastTensor) {
    GgufWriter w;
    w.addTensor("a", {1}, GgmlType::F32, patternBytes(4, 1));
    w.add("general.alignment", GgufMetaValue::u32(64));  // after a tensor call: order does not matter
    w.addTensor("b", {50}, GgmlType::F16, patternBytes(100, 2));
    const auto image = imageOf(w);
    auto f = parseBytes(image);
    ASSERT_TRUE(f) << f.error().message;
    EXPECT_EQ(f->alignment(), 64u);
    EXPECT_EQ(f->dataOffset() % 64, 0u);
    EXPECT_EQ(f->findTensor("a")->offset, 0u);
    EXPECT_EQ(f->findTensor("b")->offset, 64u);
    EXPECT_EQ(image.size(), f->dataOffset() + 192);  // 64 + 100 rounded up to 64
    auto b = f->tensorData(*f->findTensor("b"));
    EXPECT_EQ(std::vector<uint8_t>(b.begin(), b.end()), patternBytes(100, 2));
}

TEST(GgufWriter, VocabOnlyFileEndsAtItsHeader) {
    GgufWriter w;
    w.add("tokenizer.ggml.model", GgufMetaValue::string("llama"));
    const auto image = imageOf(w);
    EXPECT_EQ(image.size(), w.layout().headerBytes);
    EXPECT_NE(image.size() % 32, 0u);  // so the file ends before the aligned data offset
    auto f = parseBytes(image);
    ASSERT_TRUE(f) << f.error().message;
    EXPECT_TRUE(f->tensors().empty());
}

TEST(GgufWriter, HeaderFieldsCanBeOverridden) {
    GgufWriter w(4);
    w.header().magic = 0x4C4D4747;  // "GGML"
    w.header().nTensors = uint64_t(1) << 63;
    w.header().nKv = 7;
    w.add("k", GgufMetaValue::u8(1));
    GgufRawBuilder expected;
    expected.header(4, uint64_t(1) << 63, 7, 0x4C4D4747).key("k", GgufType::U8).u8(1);
    EXPECT_EQ(imageOf(w), expected.data());
}

TEST(GgufRawBuilder, WritesFieldsLittleEndianAsGiven) {
    GgufRawBuilder b;
    b.header(3, 1, 1).key("a", GgufType::Array).array(GgufType::U16, 1).u16(0x0102);
    b.tensorInfo("t", {33}, 8, 5).padTo(8, 0xEE);
    const std::vector<uint8_t> expected{
        'G', 'G', 'U', 'F', 3, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0,  // header
        1, 0, 0, 0, 0, 0, 0, 0, 'a', 9, 0, 0, 0,                                          // key "a": array
        2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 1,                                          // of 1 u16: 0x0102
        1, 0, 0, 0, 0, 0, 0, 0, 't', 1, 0, 0, 0, 33, 0, 0, 0, 0, 0, 0, 0,                  // "t", 1 dim, 33
        8, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0,                                                // Q8_0 at 5
        0xEE, 0xEE, 0xEE, 0xEE};                                                           // 84 -> 88
    EXPECT_EQ(b.data(), expected);
    b.patchU64(8, 2);
    EXPECT_EQ(b.data()[8], 2);
}

TEST(GgufMetaValue, AsUintOnlyForNonNegativeIntegers) {
    EXPECT_EQ(GgufMetaValue::u8(200).asUint(), 200u);
    EXPECT_EQ(GgufMetaValue::i64(64).asUint(), 64u);
    EXPECT_EQ(GgufMetaValue::i32(-32).asUint(), std::nullopt);
    EXPECT_EQ(GgufMetaValue::f32(32).asUint(), std::nullopt);
    EXPECT_EQ(GgufMetaValue::string("32").asUint(), std::nullopt);
    EXPECT_EQ(GgufMetaValue::raw(13, {32, 0, 0, 0}).asUint(), std::nullopt);
}

TEST(GgufWriter, MisuseIsReportedWhenWriting) {
    GgufWriter a;
    a.addTensor("w", {8, 2}, GgmlType::F32, patternBytes(60, 1));
    auto r = a.toBytes();
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().kind, ErrorKind::InvalidArgument);
    EXPECT_EQ(r.error().message, "tensor w: 60 bytes given, a [8, 2] F32 tensor has 64");

    GgufWriter b;
    b.addTensor("q", {33}, GgmlType::Q8_0, [](GgufTensorSink&) {});
    EXPECT_EQ(b.toBytes().error().message, "tensor q: shape [33] is not a valid Q8_0 tensor");

    GgufWriter c;
    c.addTensor("p", {4}, GgmlType::F32, [](GgufTensorSink& s) { s.write("abc", 3); });
    EXPECT_EQ(c.toBytes().error().message, "tensor p: producer wrote 3 bytes, expected 16");
}
