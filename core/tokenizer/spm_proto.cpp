#include "tokenizer/spm_proto.h"

#include <cstring>
#include <fmt/format.h>

namespace inferscope {
namespace {

// Protobuf wire types.
enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLength = 2, kFixed32 = 5 };

// Appends protobuf fields to a byte string. Integers are varints (negative int32 values are
// sign-extended to 10 bytes, as protobuf requires), floats little-endian fixed32.
class ProtoWriter {
public:
    void varintField(uint32_t field, uint64_t v) { tag(field, kVarint); varint(v); }
    void int32Field(uint32_t field, int32_t v) { varintField(field, uint64_t(int64_t(v))); }
    void boolField(uint32_t field, bool v) { varintField(field, v ? 1 : 0); }
    void floatField(uint32_t field, float v) {
        tag(field, kFixed32);
        char b[4];
        std::memcpy(b, &v, 4);  // x86-64 and every platform we target are little-endian
        out_.append(b, 4);
    }
    void bytesField(uint32_t field, std::string_view v) {
        tag(field, kLength);
        varint(v.size());
        out_.append(v);
    }
    std::string take() { return std::move(out_); }

private:
    void tag(uint32_t field, WireType wt) { varint((uint64_t(field) << 3) | wt); }
    void varint(uint64_t v) {
        while (v >= 0x80) {
            out_.push_back(char(uint8_t(v) | 0x80));
            v >>= 7;
        }
        out_.push_back(char(v));
    }
    std::string out_;
};

// Bounds-checked protobuf reader over one message's bytes.
class ProtoReader {
public:
    explicit ProtoReader(std::string_view bytes) : p_(bytes) {}
    bool done() const { return p_.empty(); }

    bool varint(uint64_t& v) {
        v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (p_.empty()) return false;
            const uint8_t b = uint8_t(p_.front());
            p_.remove_prefix(1);
            v |= uint64_t(b & 0x7f) << shift;
            if (!(b & 0x80)) return true;
        }
        return false;  // more than 10 bytes
    }
    bool tag(uint32_t& field, uint32_t& wireType) {
        uint64_t t;
        if (!varint(t) || (t >> 3) == 0 || (t >> 3) > 0x1fffffff) return false;
        field = uint32_t(t >> 3);
        wireType = uint32_t(t & 7);
        return true;
    }
    bool bytes(std::string_view& v) {
        uint64_t n;
        if (!varint(n) || n > p_.size()) return false;
        v = p_.substr(0, size_t(n));
        p_.remove_prefix(size_t(n));
        return true;
    }
    bool fixed32(uint32_t& v) {
        if (p_.size() < 4) return false;
        std::memcpy(&v, p_.data(), 4);
        p_.remove_prefix(4);
        return true;
    }
    // Skips a field we do not read.
    bool skip(uint32_t wireType) {
        uint64_t v;
        uint32_t u;
        std::string_view s;
        switch (wireType) {
            case kVarint: return varint(v);
            case kFixed64: if (p_.size() < 8) return false; p_.remove_prefix(8); return true;
            case kLength: return bytes(s);
            case kFixed32: return fixed32(u);
            default: return false;  // groups (3, 4) are not used by ModelProto
        }
    }

private:
    std::string_view p_;
};

Error broken(std::string what) { return Error{ErrorKind::BadFile, "not a valid SentencePiece model: " + what}; }

}  // namespace

std::string writeModelProto(const Vocab& vocab) {
    ProtoWriter model;
    for (int32_t id = 0; id < vocab.size(); ++id) {
        ProtoWriter piece;
        piece.bytesField(1, vocab.pieces[id]);
        piece.floatField(2, vocab.scores[id]);
        // SentencePiece has exactly one UNKNOWN piece, the unk id's. Phi-3's file marks <unk> CONTROL
        // and its 53 padding pieces UNKNOWN: the unk id is written UNKNOWN, other UNKNOWN pieces
        // UNUSED (never produced by encoding, as in llama.cpp).
        TokenType type = vocab.types[id];
        if (vocab.unkId >= 0) {
            if (id == vocab.unkId) type = TokenType::Unknown;
            else if (type == TokenType::Unknown) type = TokenType::Unused;
        }
        piece.varintField(3, uint64_t(type));
        model.bytesField(1, piece.take());
    }

    ProtoWriter trainer;
    trainer.varintField(3, 2);  // model_type = BPE
    trainer.int32Field(4, vocab.size());
    // SentencePiece refuses BYTE pieces without byte_fallback, and byte_fallback without all 256.
    trainer.boolField(35, vocab.hasByteTokens());
    trainer.int32Field(40, vocab.unkId);
    trainer.int32Field(41, vocab.bosId);
    trainer.int32Field(42, vocab.eosId);
    trainer.int32Field(43, vocab.padId);
    model.bytesField(2, trainer.take());

    // Every flag written explicitly: the proto2 defaults of add_dummy_prefix and
    // remove_extra_whitespaces are true.
    ProtoWriter normalizer;
    normalizer.bytesField(1, "identity");  // with no precompiled_charsmap: no Unicode normalization
    normalizer.boolField(3, vocab.addSpacePrefix);
    normalizer.boolField(4, false);  // llama.cpp keeps runs of spaces: "a  b" -> ▁a ▁ ▁b
    normalizer.boolField(5, true);   // ' ' -> U+2581
    model.bytesField(3, normalizer.take());
    return model.take();
}

std::string withWhitespaceKept(std::string serialized) {
    ProtoWriter normalizer;
    normalizer.boolField(4, false);
    ProtoWriter tail;
    tail.bytesField(3, normalizer.take());
    return serialized + tail.take();
}

Result<Vocab> readModelProtoPieces(std::string_view serialized) {
    Vocab vocab;
    ProtoReader model(serialized);
    while (!model.done()) {
        uint32_t field, wireType;
        if (!model.tag(field, wireType)) return std::unexpected(broken("bad field tag"));
        if (field != 1 || wireType != kLength) {
            if (!model.skip(wireType)) return std::unexpected(broken(fmt::format("field {} is cut short", field)));
            continue;
        }
        std::string_view pieceBytes;
        if (!model.bytes(pieceBytes)) return std::unexpected(broken("a piece runs past the end"));
        if (vocab.pieces.size() >= kMaxVocabSize)
            return std::unexpected(broken(fmt::format("more than {} pieces", kMaxVocabSize)));

        std::string_view text;
        float score = 0;
        uint64_t type = uint64_t(TokenType::Normal);  // the proto default
        ProtoReader piece(pieceBytes);
        while (!piece.done()) {
            uint32_t f, wt;
            if (!piece.tag(f, wt)) return std::unexpected(broken("bad field tag in a piece"));
            bool ok;
            uint32_t bits = 0;
            if (f == 1 && wt == kLength) ok = piece.bytes(text);
            else if (f == 2 && wt == kFixed32) { ok = piece.fixed32(bits); std::memcpy(&score, &bits, 4); }
            else if (f == 3 && wt == kVarint) ok = piece.varint(type);
            else ok = piece.skip(wt);
            if (!ok) return std::unexpected(broken("a piece is cut short"));
        }
        if (type < 1 || type > 6)
            return std::unexpected(broken(fmt::format("piece {} has type {}", vocab.pieces.size(), type)));
        vocab.pieces.emplace_back(text);
        vocab.scores.push_back(score);
        vocab.types.push_back(TokenType(type));
    }
    return vocab;
}

}  // namespace inferscope
