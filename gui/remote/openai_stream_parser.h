#pragma once
// OpenAiStreamParser: the bytes of an OpenAI-compatible streamed answer (Server-Sent Events,
// `POST /v1/chat/completions` with `stream: true`) turned into what each event says: the text
// added, the tokens with their log-probabilities and top alternatives, the finish reason, usage,
// `[DONE]` and error objects. Pure: no network, no clock; bytes may arrive split anywhere (one
// byte at a time gives the same events as the whole body at once).
//
// What the servers differ in (the README's compatibility table) and how each is read here:
// - `bytes` of a token or an alternative may be missing or null (then the token's UTF-8 text);
// - `logprobs` may be null or absent on a chunk (role-only first chunk, the finish chunk, a server
//   that returns none), `content` may be null;
// - a last chunk may carry only `usage` (`stream_options.include_usage`) and `choices: []`;
// - an error comes as `data: {"error": {...}}` (or `{"error": "text"}`) inside the stream;
// - Inferscope's server adds `inferscope` per token: its sampler's record (post-sampler
//   probabilities, what each stage kept), kept here as the raw JSON object.
// Lines end in "\n" or "\r\n"; comment lines (":") and fields other than `data` are ignored.

#include <QByteArray>
#include <QJsonObject>
#include <QString>
#include <QStringList>
#include <optional>
#include <vector>

namespace inferscope {

struct RemoteAlternative {
    QByteArray bytes;        // the token's bytes (may be part of a UTF-8 character)
    double logprob = 0;
};

// What is kept of a token whatever a server sends: OpenAI's limit of alternatives, and the
// bytes of the longest token a vocabulary has (llama.cpp's are at most 256 bytes).
inline constexpr size_t kMaxAlternatives = 20;
inline constexpr qsizetype kMaxTokenBytes = 256;
// A server's error message as shown: at most this many characters, control characters removed.
inline constexpr qsizetype kMaxErrorChars = 300;

struct RemoteToken {
    QByteArray bytes;                   // at most kMaxTokenBytes (longer: cut)
    std::optional<double> logprob;      // nullopt: the server sent null
    std::vector<RemoteAlternative> top; // the kMaxAlternatives most probable, each byte string once, most probable first
    QJsonObject extension;              // Inferscope's "inferscope" record; empty elsewhere
};

struct RemoteUsage {
    int promptTokens = 0;
    int completionTokens = 0;
};

struct StreamEvent {
    enum class Kind { Delta, Done, Error };
    Kind kind = Kind::Delta;
    QString content;                 // text added by this chunk ("" when none or null)
    std::vector<RemoteToken> tokens; // the tokens of this chunk that came with logprobs
    QString finishReason;            // "stop", "length"… on the last chunk, else ""
    std::optional<RemoteUsage> usage;
    QString error;                   // Kind::Error: the server's message
};

class OpenAiStreamParser {
public:
    // The most bytes one event (or one line still waiting for its end) may hold: past it the
    // server is not sending an answer; the parser reports an error and reads nothing more. A real
    // chunk (a token, 20 alternatives, Inferscope's record of every stage) is a few KiB; 1 MiB of
    // JSON parses in milliseconds on the GUI thread.
    static constexpr qsizetype kMaxEventBytes = 1 << 20;

    // Appends bytes and returns the events completed by them, in order.
    std::vector<StreamEvent> feed(const QByteArray& bytes);
    // The body ended: an event not closed by a blank line is still read (some servers end so).
    std::vector<StreamEvent> finish();
    bool done() const { return done_; }

private:
    void takeLine(QByteArray line, std::vector<StreamEvent>& out);
    void dispatch(std::vector<StreamEvent>& out);
    void tooLarge(std::vector<StreamEvent>& out);

    QByteArray pending_;   // bytes after the last line break
    QByteArray data_;      // the current event's data lines, joined by "\n"
    bool hasData_ = false;
    bool done_ = false;
};

// One event's data, as JSON: exposed for the tests and for non-streamed bodies.
StreamEvent parseStreamData(const QByteArray& data);
// A token's bytes from an OpenAI logprob entry {token, bytes?}: `bytes` when it is an array of
// 0..255, else the UTF-8 of `token`.
QByteArray tokenBytes(const QJsonObject& entry);

// `GET /v1/models`: the ids listed, or nullopt when the body is not an OpenAI model list.
std::optional<QStringList> parseModelList(const QByteArray& body);
// The message of an OpenAI error body ({"error": {"message": …}} or {"error": "…"}), or "".
QString errorMessageOf(const QByteArray& body);

}  // namespace inferscope
