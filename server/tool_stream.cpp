// A tool answer as it streams (see tool_stream.h).
#include "server/tool_stream.h"

#include <algorithm>
#include <mutex>
#include <random>

namespace inferscope::server {
namespace {

constexpr std::string_view kSpace = " \t\n\r";
bool isSpace(char c) { return kSpace.find(c) != std::string_view::npos; }

}  // namespace

std::string newToolCallId() {
    static std::mutex mutex;
    static std::mt19937_64 random{std::random_device{}()};
    constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    std::lock_guard lock(mutex);
    std::string id = "call_";
    for (int i = 0; i < 24; ++i) id += kAlphabet[random() % kAlphabet.size()];
    return id;
}

bool ToolCallStream::scanArguments(Open& c) {
    for (; c.argsStart + c.scan < text_.size(); ++c.scan) {
        const char ch = text_[c.argsStart + c.scan];
        if (c.inString) {
            if (c.escaped) c.escaped = false;
            else if (ch == '\\') c.escaped = true;
            else if (ch == '"') c.inString = false;
        } else if (ch == '"') {
            c.inString = true;
        } else if (ch == '{' || ch == '[') {
            ++c.depth;
        } else if ((ch == '}' || ch == ']') && --c.depth == 0) {
            ++c.scan;
            return true;
        }
    }
    return false;
}

void ToolCallStream::follow(StreamPart& out) {
    const std::string key = std::string("\", \"") + (syntax_ == ToolSyntax::Llama3 ? "parameters" : "arguments") + "\": ";
    constexpr std::string_view kName = "{\"name\": \"";
    for (int guard = 0; guard < 1 << 16; ++guard) {  // each turn opens or ends a call, or returns
        if (!calls_.empty() && !calls_.back().done) {
            Open& c = calls_.back();
            const bool whole = scanArguments(c);
            if (c.scan > c.sent) {
                out.calls.push_back(CallDelta{calls_.size() - 1, false, {}, {}, text_.substr(c.argsStart + c.sent, c.scan - c.sent)});
                c.sent = c.scan;
            }
            if (!whole) return;
            c.done = true;
            cursor_ = c.argsStart + c.scan;
        }
        const size_t at = text_.find(kName, cursor_);
        if (at == std::string::npos) {  // looked for once: the next search starts where this one could not match
            cursor_ = std::max(cursor_, text_.size() >= kName.size() ? text_.size() - (kName.size() - 1) : size_t(0));
            return;
        }
        cursor_ = at;
        const size_t nameStart = at + kName.size();
        const size_t nameEnd = std::string_view(text_).substr(0, std::min(text_.size(), nameStart + kMaxToolNameBytes + 1)).find('"', nameStart);
        if (nameEnd == std::string::npos) {
            if (text_.size() > nameStart + kMaxToolNameBytes) cursor_ = nameStart;  // no offered name is this long
            return;
        }
        if (text_.size() < nameEnd + key.size() + 1) return;  // not yet written
        const std::string name = text_.substr(nameStart, nameEnd - nameStart);
        const bool offered = std::any_of(tools_.begin(), tools_.end(), [&](const ToolFunction& t) { return t.name == name; });
        if (text_.compare(nameEnd, key.size(), key) != 0 || text_[nameEnd + key.size()] != '{' || !offered) {
            cursor_ = nameEnd;  // not as the grammar writes a call: left to the parse at the end
            continue;
        }
        Open c;
        c.id = newToolCallId();
        c.name = name;
        c.argsStart = nameEnd + key.size();
        out.calls.push_back(CallDelta{calls_.size(), true, c.id, c.name, {}});
        calls_.push_back(std::move(c));
    }
}

size_t ToolCallStream::safeContent(size_t before) {
    for (size_t i = text_.size(); i > before; --i)  // the trailing white space, from the new bytes
        if (!isSpace(text_[i - 1])) {
            spaceStart_ = i;
            break;
        }
    if (cursor_ != std::string::npos) return contentEnd_;
    if (syntax_ == ToolSyntax::Llama3 || syntax_ == ToolSyntax::Generic) {  // a call is the whole answer
        if (isText_) return text_.size();
        for (size_t i = before; i < text_.size(); ++i) {
            if (isSpace(text_[i])) continue;
            if (text_[i] != '{') {
                isText_ = true;
                return text_.size();
            }
            cursor_ = i;
            return contentEnd_ = 0;
        }
        return 0;
    }
    const std::string_view open = syntax_ == ToolSyntax::Hermes ? "<tool_call>" : "[TOOL_CALLS]";
    const size_t from = before >= open.size() ? before - (open.size() - 1) : 0;
    auto backOverSpace = [&](size_t end) {  // never below what is shown
        while (end > shown_ && isSpace(text_[end - 1])) --end;
        return end;
    };
    if (const size_t at = text_.find(open, from); at != std::string::npos) {
        cursor_ = at;
        return contentEnd_ = std::max(shown_, backOverSpace(at));
    }
    // Held back: a tail that may become the opener, and the white space before it.
    for (size_t k = std::min(open.size() - 1, text_.size()); k > 0; --k)
        if (std::string_view(text_).substr(text_.size() - k) == open.substr(0, k)) return std::max(shown_, backOverSpace(text_.size() - k));
    return std::max(shown_, spaceStart_);
}

StreamPart ToolCallStream::push(const std::string& delta) {
    const size_t before = text_.size();
    text_ += delta;
    StreamPart out;
    const size_t safe = safeContent(before);
    if (safe > shown_) {
        out.content = text_.substr(shown_, safe - shown_);
        shown_ = safe;
    }
    if (cursor_ != std::string::npos) follow(out);
    return out;
}

StreamPart ToolCallStream::finish(bool whole, bool& calls) {
    ParsedAnswer answer = whole ? parseToolAnswer(syntax_, text_, tools_) : ParsedAnswer{text_, {}};
    StreamPart out;
    calls = !answer.calls.empty();
    if (answer.content.size() > shown_) out.content = answer.content.substr(shown_);
    shown_ = std::max(shown_, answer.content.size());
    for (size_t i = 0; i < answer.calls.size(); ++i) {
        const ToolCall& call = answer.calls[i];
        size_t sent = 0;
        if (i < calls_.size() && calls_[i].name == call.name &&
            call.arguments.compare(0, calls_[i].sent, text_, calls_[i].argsStart, calls_[i].sent) == 0) {
            sent = calls_[i].sent;
        } else {
            if (i < calls_.size()) break;  // the stream sent something else: nothing more can agree with it
            out.calls.push_back(CallDelta{i, true, newToolCallId(), call.name, {}});
        }
        if (call.arguments.size() > sent) out.calls.push_back(CallDelta{i, false, {}, {}, call.arguments.substr(sent)});
    }
    return out;
}

}  // namespace inferscope::server
