#pragma once
// A tool answer as it streams (tool_format.h): the text that may be shown as content (never a
// call, nor what may yet become one), and each call as soon as its name is written, then its
// arguments as they are generated, as OpenAI streams them. Calls are followed as the grammar
// writes them ({"name": "f", "arguments": ...}); the end of the answer is parsed whole, and what
// the stream did not send of its calls (a call written otherwise) is sent then.

#include <string>
#include <vector>

#include "server/tool_format.h"

namespace inferscope::server {

// "call_" and 24 random letters and digits.
std::string newToolCallId();

// One piece of a streamed call: its opening (id and name) or a fragment of its arguments.
struct CallDelta {
    size_t index = 0;
    bool opens = false;
    std::string id, name;  // opens
    std::string arguments;
};

struct StreamPart {
    std::string content;
    std::vector<CallDelta> calls;
};

class ToolCallStream {
public:
    ToolCallStream(ToolSyntax syntax, const std::vector<ToolFunction>& tools) : syntax_(syntax), tools_(tools) {}
    StreamPart push(const std::string& delta);
    // The answer is whole (`whole`: not cut short): the rest of its content and of its calls.
    // `calls`: whether the answer is calls (finish_reason "tool_calls").
    StreamPart finish(bool whole, bool& calls);
    const std::string& text() const { return text_; }

private:
    struct Open {
        std::string id, name;
        size_t argsStart = 0, sent = 0;  // the arguments' first byte in text_, bytes sent
        size_t scan = 0;                 // bytes of the arguments scanned for their end
        int depth = 0;
        bool inString = false, escaped = false, done = false;
    };
    void follow(StreamPart& out);
    bool scanArguments(Open& c);  // true: the arguments are whole (their end at argsStart + scan)
    size_t safeContent(size_t before);  // what may be shown, from what `before` bytes were

    // Every push costs the new bytes (and the opener's length), never the answer so far: an
    // answer as long as the context streams in linear time.
    ToolSyntax syntax_;
    const std::vector<ToolFunction>& tools_;
    std::string text_;
    size_t shown_ = 0;
    size_t spaceStart_ = 0;              // where the trailing run of white space begins
    bool isText_ = false;                // llama3, generic: the answer did not start with '{'
    size_t contentEnd_ = 0;              // the calls have begun: the content ends here
    size_t cursor_ = std::string::npos;  // where the next call is looked for; npos: no call yet
    std::vector<Open> calls_;
};

}  // namespace inferscope::server
