// libFuzzer target: the bytes an OpenAI-compatible server streams to the app
// (gui/remote/openai_stream_parser.h), and the bodies of its other answers. The first input byte
// chooses where the body is split; besides the sanitizers it checks what the app relies on: the
// same events whether the body comes whole or in two pieces, nothing after [DONE] or an error that
// ends the stream, every error saying something, no event larger than the parser's limit.

#include <QByteArray>
#include <cstdint>

#include <vector>

#include "remote/openai_stream_parser.h"
#include "require.h"

namespace {

using namespace inferscope;

QByteArray describe(const std::vector<StreamEvent>& events) {
    QByteArray out;
    for (const StreamEvent& e : events) {
        out += QByteArray::number(int(e.kind)) + '|' + e.content.toUtf8() + '|' + e.finishReason.toUtf8() + '|' + e.error.toUtf8();
        if (e.usage) out += '|' + QByteArray::number(e.usage->promptTokens) + ',' + QByteArray::number(e.usage->completionTokens);
        for (const RemoteToken& t : e.tokens) {
            out += "|t" + t.bytes.toHex() + ':' + (t.logprob ? QByteArray::number(*t.logprob, 'g', 17) : QByteArray("null"));
            for (const RemoteAlternative& a : t.top) out += ',' + a.bytes.toHex() + ':' + QByteArray::number(a.logprob, 'g', 17);
        }
        out += '\n';
    }
    return out;
}

std::vector<StreamEvent> parse(const std::vector<QByteArray>& pieces) {
    OpenAiStreamParser p;
    std::vector<StreamEvent> all;
    for (const QByteArray& piece : pieces) {
        auto events = p.feed(piece);
        all.insert(all.end(), std::make_move_iterator(events.begin()), std::make_move_iterator(events.end()));
    }
    auto rest = p.finish();
    all.insert(all.end(), std::make_move_iterator(rest.begin()), std::make_move_iterator(rest.end()));
    return all;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const QByteArray body(reinterpret_cast<const char*>(data + 1), qsizetype(size - 1));
    const qsizetype cut = body.isEmpty() ? 0 : qsizetype(data[0]) * body.size() / 256;
    const auto whole = parse({body});
    const auto split = parse({body.left(cut), body.mid(cut)});
    FUZZ_REQUIRE(describe(whole) == describe(split), "the same events whole and split");
    for (size_t i = 0; i < whole.size(); ++i) {
        const StreamEvent& e = whole[i];
        if (e.kind == StreamEvent::Kind::Done) FUZZ_REQUIRE(i + 1 == whole.size(), "nothing after [DONE]");
        if (e.kind == StreamEvent::Kind::Error) FUZZ_REQUIRE(!e.error.isEmpty(), "an error says something");
        FUZZ_REQUIRE(e.content.size() <= OpenAiStreamParser::kMaxEventBytes, "no event past the limit");
    }
    // A whole (non-streamed) answer, a model list and an error body, as the app reads them.
    (void)parseStreamData(body);
    if (const auto ids = parseModelList(body)) for (const QString& id : *ids) FUZZ_REQUIRE(!id.isEmpty(), "no empty model id");
    (void)errorMessageOf(body);
    return 0;
}
