// The pure half of the remote client (gui/remote/): SSE bytes → events (split anywhere), the
// servers' variations, and a streamed token → the StepRecord the panels show. No network.
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>
#include <cmath>

#include "remote/openai_stream_parser.h"
#include "remote/remote_session.h"
#include "remote/remote_vocabulary.h"

using namespace inferscope;

namespace {

// An event as one comparable line.
QString describe(const StreamEvent& e) {
    QString s = QStringLiteral("%1|%2|%3|%4|").arg(int(e.kind)).arg(e.content, e.finishReason, e.error);
    if (e.usage) s += QStringLiteral("usage %1/%2|").arg(e.usage->promptTokens).arg(e.usage->completionTokens);
    for (const RemoteToken& t : e.tokens) {
        s += QString::fromLatin1(t.bytes.toHex()) + QLatin1Char('=') + (t.logprob ? QString::number(*t.logprob, 'g', 17) : QStringLiteral("null"));
        for (const RemoteAlternative& a : t.top) s += QLatin1Char(' ') + QString::fromLatin1(a.bytes.toHex()) + QLatin1Char(':') + QString::number(a.logprob, 'g', 17);
        s += QStringLiteral(" ext%1;").arg(t.extension.size());
    }
    return s;
}

QStringList describeAll(const std::vector<StreamEvent>& events) {
    QStringList out;
    for (const StreamEvent& e : events) out << describe(e);
    return out;
}

// A stream as Inferscope's server writes it, with a comment, CRLF line ends, a role-only first
// chunk, a token whose bytes are half a character, the extension, a usage chunk and [DONE].
const QByteArray kStream =
    ": keep-alive\r\n\r\n"
    "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}\r\n\r\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" Once\"},\"logprobs\":{\"content\":[{\"token\":\" Once\",\"logprob\":-0.25,\"bytes\":[32,79,110,99,101],"
    "\"top_logprobs\":[{\"token\":\" Once\",\"logprob\":-0.25,\"bytes\":[32,79,110,99,101]},{\"token\":\" The\",\"logprob\":-1.5,\"bytes\":[32,84,104,101]}],"
    "\"inferscope\":{\"p_final\":1,\"rank\":1,\"entropy_bits\":2.5,\"survivors\":{\"raw\":512,\"penalty\":512,\"top-k\":40,\"top-p\":3,\"min-p\":2,\"temperature\":1},"
    "\"top\":[{\"id\":7,\"piece\":\" Once\",\"logit\":3,\"p\":0.7788,\"stages\":{\"raw\":0.7788,\"penalty\":0.7788,\"top-k\":0.8,\"top-p\":0.85,\"min-p\":0.9,\"temperature\":1}}]}}]},"
    "\"finish_reason\":null}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\\u00e2\"},\"logprobs\":{\"content\":[{\"token\":\"\\ufffd\",\"logprob\":-2,\"bytes\":[226,128],\"top_logprobs\":[]}]},\"finish_reason\":\"stop\"}]}\n\n"
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":3,\"total_tokens\":15}}\n\n"
    "data: [DONE]\n\n";

}  // namespace

class TestOpenAiStreamParser : public QObject {
    Q_OBJECT
private slots:
    void wholeBody() {
        OpenAiStreamParser p;
        const QStringList events = describeAll(p.feed(kStream));
        QCOMPARE(events.size(), 5);
        QCOMPARE(events[0], QStringLiteral("0||||"));
        QCOMPARE(events[1], QStringLiteral("0| Once|||204f6e6365=-0.25 204f6e6365:-0.25 20546865:-1.5 ext5;"));
        QCOMPARE(events[2], QStringLiteral("0|\u00e2|stop||e280=-2 ext0;"));
        QCOMPARE(events[3], QStringLiteral("0||||usage 12/3|"));
        QCOMPARE(events[4], QStringLiteral("1||||"));
        QVERIFY(p.done());
        QVERIFY(p.finish().empty());
    }

    // Every split of the body into two reads, and one byte per read, gives the same events.
    void splitAnywhere() {
        OpenAiStreamParser whole;
        const QStringList expected = describeAll(whole.feed(kStream));
        for (qsizetype cut = 0; cut <= kStream.size(); ++cut) {
            OpenAiStreamParser p;
            QStringList got = describeAll(p.feed(kStream.left(cut)));
            got += describeAll(p.feed(kStream.mid(cut)));
            got += describeAll(p.finish());
            QVERIFY2(got == expected, qPrintable(QStringLiteral("cut at byte %1").arg(cut)));
        }
        OpenAiStreamParser bytewise;
        QStringList got;
        for (char c : kStream) got += describeAll(bytewise.feed(QByteArray(1, c)));
        QCOMPARE(got, expected);
    }

    void nothingAfterDone() {
        OpenAiStreamParser p;
        const auto events = p.feed("data: [DONE]\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"late\"}}]}\n\n");
        QCOMPARE(events.size(), size_t(1));
        QCOMPARE(events[0].kind, StreamEvent::Kind::Done);
    }

    // A server that never ends its event (one endless line, or data lines without the blank line)
    // is cut off at 1 MiB with an error, and nothing it sends after counts.
    void anEndlessEventIsAnError() {
        const QByteArray chunk(1 << 17, 'a');
        for (const QByteArray& opening : {QByteArray("data: "), QByteArray("data: x\n")}) {
            OpenAiStreamParser p;
            std::vector<StreamEvent> events = p.feed(opening);
            for (int i = 0; i < 9 && events.empty(); ++i)  // 9 × 128 KiB: past 1 MiB
                events = p.feed(opening.endsWith('\n') ? QByteArray("data: ") + chunk + "\n" : chunk);
            QCOMPARE(events.size(), size_t(1));
            QCOMPARE(events[0].kind, StreamEvent::Kind::Error);
            QCOMPARE(events[0].error, QStringLiteral("The server sent an event of more than 1 MiB: not an answer this app reads."));
            QVERIFY(p.done());
            QVERIFY(p.feed("\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"late\"}}]}\n\n").empty());
            QVERIFY(p.finish().empty());
        }
        // Just under the limit an event is read.
        OpenAiStreamParser p;
        const QByteArray text((1 << 20) - 64, 'b');
        const auto events = p.feed("data: {\"choices\":[{\"delta\":{\"content\":\"" + text + "\"}}]}\n\n");
        QCOMPARE(events.size(), size_t(1));
        QCOMPARE(events[0].kind, StreamEvent::Kind::Delta);
        QCOMPARE(events[0].content.size(), text.size());
    }

    // A hostile server: 10,000 alternatives for one token, repeated byte strings, an endless token,
    // an error message of a megabyte with control characters. Kept: the 20 most probable, each
    // once; 256 bytes of a token; 300 characters of a message on one line.
    void whatAServerSendsIsBounded() {
        QByteArray alternatives;
        for (int i = 0; i < 10000; ++i)
            alternatives += (i ? "," : "") + QByteArrayLiteral("{\"token\":\"t") + QByteArray::number(i % 5000) + "\",\"logprob\":" +
                            QByteArray::number(-double(i % 5000) / 100.0 - (i >= 5000 ? 1.0 : 0.0)) + "}";
        const QByteArray longToken(100000, 'x');
        OpenAiStreamParser p;
        const auto events = p.feed("data: {\"choices\":[{\"delta\":{\"content\":\"a\"},\"logprobs\":{\"content\":[{\"token\":\"a\",\"logprob\":-0.5,"
                                   "\"top_logprobs\":[" + alternatives + "]},{\"token\":\"" + longToken + "\",\"logprob\":-1}]}}]}\n\n");
        QCOMPARE(events.size(), size_t(1));
        QCOMPARE(events[0].tokens.size(), size_t(2));
        const auto& top = events[0].tokens[0].top;
        QCOMPARE(top.size(), kMaxAlternatives);
        for (size_t i = 0; i < top.size(); ++i) {
            QCOMPARE(top[i].bytes, QByteArray("t") + QByteArray::number(qsizetype(i)));  // each once, its highest logprob
            QCOMPARE(top[i].logprob, -double(i) / 100.0);
        }
        QCOMPARE(events[0].tokens[1].bytes.size(), kMaxTokenBytes);
        RemoteVocabulary vocab;
        QCOMPARE(remoteStep(events[0].tokens[0], 0, 0, vocab).sample.top.size(), kMaxAlternatives + 1);  // and the pick
        QString noisy = QStringLiteral("line one\nline two\x1b[31m") + QString(1000000, QLatin1Char('e'));
        const QString shown = errorMessageOf(QJsonDocument(QJsonObject{{"error", QJsonObject{{"message", noisy}}}}).toJson());
        QCOMPARE(shown.size(), kMaxErrorChars + 1);
        QVERIFY(shown.startsWith(QStringLiteral("line one line two[31m")));
        QVERIFY(!shown.contains(QChar(0x1b)));
    }

    void errorObjects() {
        OpenAiStreamParser p;
        const auto events = p.feed("data: {\"error\":{\"message\":\"model is loading\",\"type\":\"server_error\",\"code\":503}}\n\n"
                                   "data: {\"error\":\"plain text error\"}\n\n"
                                   "data: not json\n\n");
        QCOMPARE(events.size(), size_t(3));
        QCOMPARE(events[0].kind, StreamEvent::Kind::Error);
        QCOMPARE(events[0].error, QStringLiteral("model is loading"));
        QCOMPARE(events[1].error, QStringLiteral("plain text error"));
        QCOMPARE(events[2].kind, StreamEvent::Kind::Error);
        QCOMPARE(events[2].error, QStringLiteral("The server sent an event that is not JSON: not json"));
        QCOMPARE(errorMessageOf("{\"error\":{\"message\":\"invalid api key\",\"type\":\"invalid_request_error\"}}"), QStringLiteral("invalid api key"));
        QCOMPARE(errorMessageOf("<html>nope</html>"), QString());
        // A message of nothing but control characters, and an empty one, still say there was an error.
        const QString unreadable = QStringLiteral("The server reported an error without a readable message.");
        const auto events2 = p.feed("data: {\"error\":{\"message\":\"\\u0000\\u0001\\u001b\",\"code\":252}}\n\n");
        QCOMPARE(events2.size(), size_t(1));
        QCOMPARE(events2[0].kind, StreamEvent::Kind::Error);
        QCOMPARE(events2[0].error, unreadable);
        QCOMPARE(errorMessageOf("{\"error\":\"\"}"), unreadable);
    }

    // What vLLM, llama.cpp, SGLang and Ollama do differently.
    void serverVariations() {
        OpenAiStreamParser p;
        const auto events = p.feed(
            // no bytes (Ollama), a null bytes (vLLM for some tokens), a null alternative logprob
            "data: {\"choices\":[{\"delta\":{\"content\":\"h\\u00e9\"},\"logprobs\":{\"content\":[{\"token\":\"h\\u00e9\",\"logprob\":-0.5,"
            "\"top_logprobs\":[{\"token\":\"h\\u00e9\",\"logprob\":-0.5,\"bytes\":null},{\"token\":\"x\",\"logprob\":null}]}]}}]}\n\n"
            // null logprobs for a token (llama.cpp's -inf), content null with a finish reason
            "data: {\"choices\":[{\"delta\":{\"content\":\"!\"},\"logprobs\":{\"content\":[{\"token\":\"!\",\"logprob\":null,\"bytes\":[33],\"top_logprobs\":[]}]}}]}\n\n"
            "data: {\"choices\":[{\"delta\":{\"content\":null},\"logprobs\":null,\"finish_reason\":\"length\"}]}\n\n"
            // usage on the last chunk with choices (llama.cpp's timings beside it)
            "data: {\"choices\":[{\"delta\":{},\"finish_reason\":null}],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":2},\"timings\":{\"predicted_per_second\":9}}\n\n"
            // an event never closed by a blank line
            "data: [DONE]");
        const QStringList got = describeAll(events);
        QCOMPARE(got.size(), 4);
        QCOMPARE(got[0], QStringLiteral("0|h\u00e9|||68c3a9=-0.5 68c3a9:-0.5 ext0;"));
        QCOMPARE(got[1], QStringLiteral("0|!|||21=null ext0;"));
        QCOMPARE(got[2], QStringLiteral("0||length||"));
        QCOMPARE(got[3], QStringLiteral("0||||usage 4/2|"));
        const auto last = p.finish();
        QCOMPARE(last.size(), size_t(1));
        QCOMPARE(last[0].kind, StreamEvent::Kind::Done);
    }

    // A server that ignored stream: true answers with one whole object: read the same way.
    void wholeAnswer() {
        const StreamEvent e = parseStreamData(
            "{\"object\":\"chat.completion\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"Hi!\"},"
            "\"logprobs\":{\"content\":[{\"token\":\"Hi\",\"logprob\":-0.1,\"bytes\":[72,105],\"top_logprobs\":[]},"
            "{\"token\":\"!\",\"logprob\":-0.2,\"bytes\":[33],\"top_logprobs\":[]}]},\"finish_reason\":\"stop\"}],"
            "\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":2}}");
        QCOMPARE(describe(e), QStringLiteral("0|Hi!|stop||usage 7/2|4869=-0.10000000000000001 ext0;21=-0.20000000000000001 ext0;"));
    }

    void multiLineData() {
        OpenAiStreamParser p;
        const auto events = p.feed("event: message\nid: 3\ndata: {\"choices\":[{\"delta\":\ndata: {\"content\":\"a\"}}]}\n\n");
        QCOMPARE(events.size(), size_t(1));
        QCOMPARE(events[0].content, QStringLiteral("a"));
    }

    // A streamed token as the panels' StepRecord: p = exp(logprob), the pick among the
    // candidates, each byte string once, stages from the extension when present.
    void tokenToStep() {
        OpenAiStreamParser p;
        const auto events = p.feed(kStream);
        RemoteVocabulary vocab;
        const StepRecord once = remoteStep(events[1].tokens[0], 0, 0, vocab);
        QCOMPARE(once.piece, std::string(" Once"));
        QCOMPARE(vocab.bytesOf(once.sample.id), std::optional<std::string>(" Once"));
        QCOMPARE(once.sample.top.size(), size_t(2));
        QCOMPARE(once.sample.top[0].id, once.sample.id);
        QCOMPARE(once.sample.top[0].p[0], float(std::exp(-0.25)));
        QCOMPARE(once.sample.top[1].p[0], float(std::exp(-1.5)));
        QCOMPARE(vocab.bytesOf(once.sample.top[1].id), std::optional<std::string>(" The"));
        QCOMPARE(once.sample.pRaw, float(std::exp(-0.25)));
        QCOMPARE(once.sample.pFinal, 1.0f);  // the extension's p_final
        const auto at = [](SamplerStage st) { return size_t(st); };
        QCOMPARE(once.sample.survivors[at(SamplerStage::TopK)], 40);
        QCOMPARE(once.sample.top[0].p[at(SamplerStage::Temperature)], 1.0f);  // matched by bytes: the server's stages
        QCOMPARE(once.sample.top[0].p[at(SamplerStage::TopP)], 0.85f);
        QCOMPARE(once.sample.top[1].p[at(SamplerStage::Temperature)], float(std::exp(-1.5)));  // not in the extension: raw repeated
        // A server from before the grammar stage names six: nothing was masked, the penalty's figures stand.
        QCOMPARE(once.sample.survivors[at(SamplerStage::Grammar)], 512);
        QCOMPARE(once.sample.top[0].p[at(SamplerStage::Grammar)], once.sample.top[0].p[at(SamplerStage::Penalty)]);
        QCOMPARE(once.sample.entropyBits, 2.5f);

        // No extension, the pick missing from its (empty) alternatives: added as the only candidate.
        const StepRecord half = remoteStep(events[2].tokens[0], 1, 1, vocab);
        QCOMPARE(half.piece, std::string("\xe2\x80"));
        QCOMPARE(half.sample.top.size(), size_t(1));
        QCOMPARE(half.sample.top[0].id, half.sample.id);
        QCOMPARE(half.sample.rank, 1);
        QCOMPARE(half.sample.pFinal, half.sample.pRaw);
        // The same bytes are the same id in any later step, and in another session; never a real
        // vocabulary's id.
        QCOMPARE(vocab.intern(" The"), once.sample.top[1].id);
        RemoteVocabulary other;
        QCOMPARE(other.intern(" The"), once.sample.top[1].id);
        QVERIFY(once.sample.top[1].id >= RemoteVocabulary::kFirstId);
        QCOMPARE(other.bytesOf(once.sample.id), std::nullopt);  // not met in that session
        QCOMPARE(other.intern(""), int32_t(RemoteVocabulary::kFirstId | (2166136261u & 0x3fffffffu)));
    }

    void modelListsAndAddresses() {
        QCOMPARE(parseModelList("{\"object\":\"list\",\"data\":[{\"id\":\"a\"},{\"id\":\"b/c\"}]}"), std::optional<QStringList>({"a", "b/c"}));
        QCOMPARE(parseModelList("{\"models\":[]}"), std::nullopt);
        QCOMPARE(parseModelList("<html></html>"), std::nullopt);
        QCOMPARE(RemoteSession::normalizeBase("127.0.0.1:8080"), QUrl("http://127.0.0.1:8080"));
        QCOMPARE(RemoteSession::normalizeBase("http://host:8000/v1/"), QUrl("http://host:8000"));
        QCOMPARE(RemoteSession::normalizeBase("https://example.org/api/v1"), QUrl("https://example.org/api"));
        QVERIFY(!RemoteSession::normalizeBase("ftp://host").isValid());
        QVERIFY(!RemoteSession::normalizeBase("").isValid());
    }
};

QTEST_GUILESS_MAIN(TestOpenAiStreamParser)
#include "tst_openai_stream_parser.moc"
