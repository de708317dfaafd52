#pragma once
// Reasoning models (Qwen 3, DeepSeek-R1 distills) think before they answer: the answer text begins
// with "<think>\n…\n</think>\n\n" and the answer proper follows. The chat shows that block folded
// above the answer; the text itself (stored, exported, reused as context tokens) stays whole.

#include <QString>

namespace inferscope {

struct ThinkingSplit {
    bool present = false;        // the text starts with <think> (after white space)
    bool finished = false;       // its </think> has been written
    QString thinking;            // between the tags, without the white space around it
    qsizetype answerStart = 0;   // where the answer proper starts: after </think> and the white space
                                 // after it; the text's length while still thinking; 0 without a block
};

// streaming: the text may end inside a tag ("<thi", "</th"), which is then not shown yet.
ThinkingSplit splitThinking(const QString& text, bool streaming);

}  // namespace inferscope
