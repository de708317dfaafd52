// Hostile GGUF headers and metadata: each gets exactly one clear error (kind and message) naming
// the defect and the key, never a crash or a huge allocation. Tensor infos, tensor data and
// truncation: test_gguf_malformed_tensors.cpp.
#include <limits>

#include "test_gguf_helpers.h"

using namespace inferscope;
using namespace inferscope::testing_gguf;

namespace {

constexpr uint64_t k2p63 = uint64_t(1) << 63;

// A file with one metadata key whose value bytes the caller appends.
GgufRawBuilder oneKey(std::string_view key, uint32_t typeId) {
    GgufRawBuilder b;
    b.header(3, 0, 1).key(key, typeId);
    return b;
}

std::vector<uint8_t> withAlignment(GgufMetaValue value) {
    GgufWriter w = smallModel();
    w.add("general.alignment", std::move(value));
    return imageOf(w);
}

}  // namespace

// ---- magic and version ---------------------------------------------------------------------------

TEST(GgufMalformed, WrongMagic) {
    auto image = imageOf(smallModel());
    std::memcpy(image.data(), "GGML", 4);
    EXPECT_TRUE(failsWith(image, ErrorKind::BadFile, "not a GGUF file: magic is \"GGML\", expected \"GGUF\""));
    std::memcpy(image.data(), "\x7f" "ELF", 4);
    EXPECT_TRUE(failsWith(image, ErrorKind::BadFile, "not a GGUF file: magic is \"\\x7fELF\", expected \"GGUF\""));
}

TEST(GgufMalformed, TooShortForAMagic) {
    EXPECT_TRUE(failsWith({'G', 'G'}, ErrorKind::BadFile, "truncated: magic at byte 0 needs 4 bytes, file has 2"));
    EXPECT_TRUE(failsWith({}, ErrorKind::BadFile, "truncated: magic at byte 0 needs 4 bytes, file has 0"));
    EXPECT_TRUE(failsWith({'P', 'K', 3}, ErrorKind::BadFile, "not a GGUF file: 3 bytes is too short"));
}

TEST(GgufMalformed, UnsupportedVersions) {
    EXPECT_TRUE(failsWith(imageOf(smallModel(1)), ErrorKind::Unsupported,
                          "GGUF version 1 is not supported (only 2 and 3); re-convert the model"));
    EXPECT_TRUE(failsWith(imageOf(smallModel(4)), ErrorKind::Unsupported,
                          "unsupported GGUF version 4 (expected 2 or 3)"));
    EXPECT_TRUE(failsWith(imageOf(smallModel(0)), ErrorKind::Unsupported,
                          "unsupported GGUF version 0 (expected 2 or 3)"));
}

TEST(GgufMalformed, BigEndianFileIsNamedAsSuch) {
    GgufRawBuilder b;
    b.header(0x03000000, 0, 0);  // a big-endian v3 file read little-endian
    EXPECT_TRUE(failsWith(b.data(), ErrorKind::Unsupported,
                          "big-endian GGUF files are not supported (version 3 stored byte-swapped)"));
}

// ---- counts --------------------------------------------------------------------------------------

TEST(GgufMalformed, AbsurdCounts) {
    GgufRawBuilder tensors, kvs;
    tensors.header(3, k2p63, 0).zeros(64);
    kvs.header(3, 0, k2p63).zeros(64);
    EXPECT_TRUE(failsWith(tensors.data(), ErrorKind::BadFile, "absurd tensor count 9223372036854775808 (limit 1048576)"));
    EXPECT_TRUE(failsWith(kvs.data(), ErrorKind::BadFile, "absurd metadata count 9223372036854775808 (limit 1048576)"));
}

TEST(GgufMalformed, CountsBeyondTheContentAreTruncation) {
    GgufWriter w;
    w.add("general.name", GgufMetaValue::string("x"));
    w.header().nKv = 3;
    const uint64_t end = w.layout().headerBytes;
    EXPECT_TRUE(failsWith(imageOf(w), ErrorKind::BadFile,
                          fmt::format("truncated: metadata key #1 at byte {} needs 8 bytes, file has {}", end, end)));
    GgufRawBuilder t;  // 1000 tensors announced, one info present, then the end of the file
    t.header(3, 1000, 0).tensorInfo("a", {4}, uint32_t(GgmlType::F32), 0);
    EXPECT_TRUE(failsWith(t.data(), ErrorKind::BadFile,
                          fmt::format("truncated: name of tensor #1 at byte {} needs 8 bytes, file has {}", t.size(),
                                      t.size())));
}

// ---- strings -------------------------------------------------------------------------------------

TEST(GgufMalformed, AbsurdKeyLength) {
    GgufRawBuilder b;
    b.header(3, 0, 1).u64(k2p63).text("general.name");
    EXPECT_TRUE(failsWith(b.data(), ErrorKind::BadFile,
                          "metadata key #0 at byte 24 has absurd length 9223372036854775808 (limit 65535)"));
}

TEST(GgufMalformed, AbsurdStringValueLength) {
    auto b = oneKey("general.name", uint32_t(GgufType::String));  // value at byte 48
    b.u64(k2p63).text("llama");
    EXPECT_TRUE(failsWith(b.data(), ErrorKind::BadFile,
                          "truncated: string value of general.name at byte 56 needs 9223372036854775808 bytes, "
                          "file has 61"));
}

// ---- arrays --------------------------------------------------------------------------------------

TEST(GgufMalformed, ArrayOf2To60Elements) {
    auto numbers = oneKey("tokenizer.ggml.scores", uint32_t(GgufType::Array));
    numbers.array(GgufType::F32, uint64_t(1) << 60).f32(1.0f);
    EXPECT_TRUE(failsWith(numbers.data(), ErrorKind::BadFile,
                          "metadata key tokenizer.ggml.scores: absurd array length 1152921504606846976 "
                          "(limit 4294967296)"));
    auto strings = oneKey("tokenizer.ggml.tokens", uint32_t(GgufType::Array));
    strings.array(GgufType::String, uint64_t(1) << 60).str("a");
    EXPECT_TRUE(failsWith(strings.data(), ErrorKind::BadFile,
                          "metadata key tokenizer.ggml.tokens: absurd array length 1152921504606846976 "
                          "(limit 4294967296)"));
}

TEST(GgufMalformed, ArraysLongerThanTheFile) {
    auto numbers = oneKey("k", uint32_t(GgufType::Array));  // items at byte 49
    numbers.array(GgufType::U32, 1000).u32(7).u32(8);
    EXPECT_TRUE(failsWith(numbers.data(), ErrorKind::BadFile,
                          "truncated: data of array k (1000 u32) at byte 49 needs 4000 bytes, file has 57"));
    auto strings = oneKey("k", uint32_t(GgufType::Array));  // strings from byte 49
    strings.array(GgufType::String, 1000).str("a").str("bc");
    EXPECT_TRUE(failsWith(strings.data(), ErrorKind::BadFile,
                          "truncated: string 2 of k at byte 68 needs 8 bytes, file has 68"));
}

TEST(GgufMalformed, NestedArray) {
    auto b = oneKey("a", uint32_t(GgufType::Array));
    b.array(GgufType::Array, 1).array(GgufType::U8, 0);
    EXPECT_TRUE(failsWith(b.data(), ErrorKind::Unsupported, "metadata key a: nested arrays are not supported"));
}

TEST(GgufMalformed, InvalidValueTypes) {
    GgufWriter w = smallModel();
    w.add("bad.type", GgufMetaValue::raw(13, {0, 0, 0, 0}));
    EXPECT_TRUE(failsWith(imageOf(w), ErrorKind::BadFile, "metadata key bad.type has invalid type 13"));
    auto b = oneKey("bad.items", uint32_t(GgufType::Array));
    b.array(0xffffffffu, 1).u8(0);
    EXPECT_TRUE(failsWith(b.data(), ErrorKind::BadFile, "metadata key bad.items: invalid array element type 4294967295"));
}

TEST(GgufMalformed, DuplicateKey) {
    GgufWriter w = smallModel();
    w.add("general.architecture", GgufMetaValue::string("gpt2"));
    EXPECT_TRUE(failsWith(imageOf(w), ErrorKind::BadFile, "metadata key general.architecture appears twice"));
}

// Key and tensor names come from the file: shown with control bytes and invalid UTF-8 escaped, and
// cut short, so an error message can neither drive a terminal nor break a JSON encoder.
TEST(GgufMalformed, NamesInMessagesAreEscapedAndBounded) {
    GgufWriter w;
    w.add("evil\x1b[2J\xff.\xc3\xa9t\xc3\xa9", GgufMetaValue::u8(1));
    w.add("evil\x1b[2J\xff.\xc3\xa9t\xc3\xa9", GgufMetaValue::u8(1));
    EXPECT_TRUE(failsWith(imageOf(w), ErrorKind::BadFile, "metadata key evil\\x1b[2J\\xff.été appears twice"));
    GgufWriter t;
    t.addTensor("w\n\xc2\x9b", {8}, GgmlType::F32, patternBytes(32, 1));  // newline, C1 CSI
    t.addTensor("w\n\xc2\x9b", {8}, GgmlType::F32, patternBytes(32, 2));
    EXPECT_TRUE(failsWith(imageOf(t), ErrorKind::BadFile, "tensor w\\x0a\\xc2\\x9b appears twice"));
    const std::string longName(2000, 'n');
    GgufWriter l;
    l.add(longName, GgufMetaValue::raw(42, {}));
    EXPECT_TRUE(failsWith(imageOf(l), ErrorKind::BadFile,
                          "metadata key " + std::string(64, 'n') + "... (2000 bytes) has invalid type 42"));
}

// ---- general.alignment ---------------------------------------------------------------------------

TEST(GgufMalformed, BadAlignments) {
    EXPECT_TRUE(failsWith(withAlignment(GgufMetaValue::u32(0)), ErrorKind::BadFile,
                          "general.alignment 0 is not a power of two between 1 and 1 MiB"));
    EXPECT_TRUE(failsWith(withAlignment(GgufMetaValue::u32(3)), ErrorKind::BadFile,
                          "general.alignment 3 is not a power of two between 1 and 1 MiB"));
    EXPECT_TRUE(failsWith(withAlignment(GgufMetaValue::u64(uint64_t(1) << 21)), ErrorKind::BadFile,
                          "general.alignment 2097152 is not a power of two between 1 and 1 MiB"));
    EXPECT_TRUE(failsWith(withAlignment(GgufMetaValue::i32(-32)), ErrorKind::BadFile,
                          "general.alignment -32 is not a power of two between 1 and 1 MiB"));
    EXPECT_TRUE(failsWith(withAlignment(GgufMetaValue::string("32")), ErrorKind::BadFile,
                          "general.alignment has type string, expected an unsigned integer"));
    EXPECT_TRUE(failsWith(withAlignment(GgufMetaValue::f32(32)), ErrorKind::BadFile,
                          "general.alignment has type f32, expected an unsigned integer"));
}

TEST(GgufMalformed, KeysInAnyOrder) {
    // general.alignment last, general.architecture after the tokenizer: both still apply.
    GgufWriter w;
    w.add("tokenizer.ggml.model", GgufMetaValue::string("llama"));
    w.addTensor("a", {3}, GgmlType::F32, patternBytes(12, 1));
    w.addTensor("b", {3}, GgmlType::F32, patternBytes(12, 2));
    w.add("general.architecture", GgufMetaValue::string("llama"));
    w.add("general.alignment", GgufMetaValue::i32(128));  // any integer type with a valid value
    auto f = parseBytes(imageOf(w));
    ASSERT_TRUE(f) << f.error().message;
    EXPECT_EQ(f->alignment(), 128u);
    EXPECT_EQ(f->findTensor("b")->offset, 128u);
    EXPECT_EQ(f->metadata()[2].key, "general.alignment");
    EXPECT_EQ(**f->getString("general.architecture"), "llama");
}

// ---- typed look-ups of metadata with unexpected types ----------------------------------------------

TEST(GgufMalformed, TypedLookupsNameTheKeyAndTheType) {
    const std::vector<uint32_t> ids{1, 2};
    GgufWriter w;
    w.add("neg", GgufMetaValue::i32(-1));
    w.add("f", GgufMetaValue::f32(2.5f));
    w.add("ids", GgufMetaValue::array(std::span<const uint32_t>(ids)));
    w.add("big", GgufMetaValue::u64(std::numeric_limits<uint64_t>::max()));
    w.add("s", GgufMetaValue::string("x"));
    auto f = parseBytes(imageOf(w));
    ASSERT_TRUE(f) << f.error().message;
    EXPECT_EQ(f->getUint("neg").error().message, "metadata key neg is negative (-1)");
    EXPECT_EQ(f->getUint("f").error().message, "metadata key f has type f32, expected an integer");
    EXPECT_EQ(f->getUint("ids").error().message, "metadata key ids has type array of u32, expected an integer");
    EXPECT_EQ(**f->getUint("big"), std::numeric_limits<uint64_t>::max());
    EXPECT_FALSE(*f->getUint("absent"));
    EXPECT_EQ(**f->getFloat("neg"), -1.0);
    EXPECT_EQ(f->getFloat("s").error().message, "metadata key s has type string, expected a number");
    EXPECT_EQ(f->getString("f").error().message, "metadata key f has type f32, expected a string");
    EXPECT_EQ(f->getBool("f").error().message, "metadata key f has type f32, expected a bool");
    EXPECT_EQ(**f->getBool("big"), true);
}

// An integer used as a bool is true when non-zero, negative ones included.
TEST(GgufMalformed, NegativeIntegerAsBoolIsTrue) {
    GgufWriter w;
    w.add("tokenizer.ggml.add_bos_token", GgufMetaValue::i8(-1));
    auto f = parseBytes(imageOf(w));
    ASSERT_TRUE(f) << f.error().message;
    EXPECT_EQ(**f->getBool("tokenizer.ggml.add_bos_token"), true);
}
