#pragma once
// A message of the open conversation as ChatModel keeps it (ChatMessage, and AnswerVariant for
// each version of an answer), and what kind of message it is and how an answer ended as enums
// that QML reads by name (Message.User, Message.EndOfGeneration). The store keeps the names
// ("user", "eos"): roleName/finishName and back.

#include <QObject>
#include <QString>
#include <QtQml/qqmlregistration.h>
#include <string>
#include <vector>

#include "chat/answer_stats.h"
#include "chat/token_heatmap.h"
#include "record/answer_origin.h"
#include "record/step_record.h"

namespace inferscope {
namespace Message {
Q_NAMESPACE
QML_ELEMENT

enum Role { User, Assistant };
Q_ENUM_NS(Role)

// How an answer ended: the engine's FinishReason, or not yet (questions, answers streaming), or
// failed after some tokens were shown.
enum Finish { NotFinished, EndOfGeneration, StopString, MaxTokens, ContextFull, Cancelled, Failed };
Q_ENUM_NS(Finish)

}  // namespace Message

// As stored and exported: "user" / "assistant"; anything but "user" reads as an answer.
QString roleName(Message::Role role);
Message::Role roleFromName(const QString& name);
// As stored and exported: "" (not finished), "eos", "stop", "length", "context_full", "cancelled", "error".
QString finishName(Message::Finish finish);
Message::Finish finishFromName(const QString& name);
Message::Finish finishOf(FinishReason reason);

// One version of an answer: regenerating or branching adds one; the message shows the active one.
struct AnswerVariant {
    QString text;
    Message::Finish finishReason = Message::NotFinished;
    AnswerStats stats;
    std::vector<int32_t> tokens;
    std::vector<StepRecord> steps;
    AnswerOrigin origin;  // the model and backend that made it, and the text of every token its steps name
};

struct ChatMessage {
    qint64 storeId = 0;                 // row id in the ChatStore, 0 until saved
    Message::Role role = Message::User;
    QString text;
    bool streaming = false;
    Message::Finish finishReason = Message::NotFinished;  // answers
    AnswerStats stats;                  // answers: prefill, decoding, sampler (answer_stats.h)
    std::vector<int32_t> tokens;        // what this message contributed to the context
    std::vector<StepRecord> steps;      // answers: one record per generated token
    AnswerOrigin origin;                // answers: what made it (record/answer_origin.h); every view reads its tokens here
    std::string streamedBytes;          // answers while streaming: the raw bytes so far
    bool trimLeadingSpace = false;      // chat answers: the first token's word-start space is not shown
    // Answers: every version (the active one's fields are mirrored above), and which is shown.
    std::vector<AnswerVariant> variants;
    int activeVariant = 0;
    int previousVariant = 0;            // shown before the version being streamed (a failed one goes back to it)
    std::vector<uint8_t> replayChanged; // per step: a replay picked another token (heat mode "replay")
    std::vector<float> kvKl;            // per step: KL in nats against another KV cache type (heat mode "kvcost")
    std::vector<float> compareKl;       // per step: KL(P_A ‖ P_B) in nats against a second model (heat mode "compare"),
                                        // or, compareOnText, the gap in bits of the step's words (tokenGaps)
    std::vector<uint8_t> compareFlip;   // per step: the second model ranked another token first
    bool compareOnText = false;         // the second model's vocabulary differs: compared on the text
    // Heat-map text, built on demand and kept until the steps or the mode change.
    mutable bool heatValid = false;
    quint64 heatRevision = 0;  // ChatModel's count of heat maps made stale when this one last was
    mutable HeatText heat;

    // The shown version as an AnswerVariant, and a variant's fields made the shown ones.
    AnswerVariant shownVariant() const { return {text, finishReason, stats, tokens, steps, origin}; }
    void showFields(const AnswerVariant& v) {
        text = v.text;
        finishReason = v.finishReason;
        stats = v.stats;
        tokens = v.tokens;
        steps = v.steps;
        origin = v.origin;
    }
};

}  // namespace inferscope
