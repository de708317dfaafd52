#pragma once
// ChatModel: the messages of the open conversation, for the chat view. Lives and changes on the
// GUI thread only. Each row keeps, besides its text, the tokens it put in the context and (for
// answers) the engine's per-token records, which the visualizer and the store use.

#include <QAbstractListModel>
#include <QtQml/qqmlregistration.h>
#include <string>
#include <vector>

#include "app/pacer.h"
#include "chat/chat_message.h"
#include "chat/thinking.h"
#include "chat/token_heatmap.h"
#include "tokenizer/utf8_stream.h"

namespace inferscope {

class ChatModel : public QAbstractListModel {
    Q_OBJECT
    QML_ELEMENT
    QML_UNCREATABLE("ChatModel is owned by ChatController")
    Q_PROPERTY(int count READ count NOTIFY countChanged)
    // How answers are tinted: "off", "probability", "surprisal", "entropy" or "replay" (what a replay
    // changed). AppGraph keeps it equal to AppSettings.heatMode (the saved choice).
    Q_PROPERTY(QString heatMode READ heatMode WRITE setHeatMode NOTIFY heatModeChanged)
    Q_PROPERTY(bool darkTheme READ darkTheme WRITE setDarkTheme NOTIFY heatModeChanged)
    // The answer "Compare with…" tints was compared on the text (the tint's unit is bits, not nats).
    Q_PROPERTY(bool compareOnText READ compareOnText NOTIFY heatModeChanged)
public:
    enum Role {
        RoleRole = Qt::UserRole + 1,  // Message.User / Message.Assistant
        TextRole,
        StreamingRole,
        FinishReasonRole,
        StatsRole,
        TokenCountRole,               // tokens in the context from this message
        GeneratedCountRole,           // answers: tokens generated
        HeatRevisionRole,             // answers: changes when the heat map does (HeatDocument shows it); 0: none
        VariantIndexRole,             // answers: which version is shown (0-based)
        VariantCountRole,             // answers: how many versions there are
        ShownTextRole,                // the text as the view shows it: at most kShownChars characters
        HiddenCharsRole,              // characters of the text not in shownText (0 for all but huge messages)
        ThinkingRole,                 // answers of reasoning models: the <think> block's text, shown folded
                                      // (shownText and the heat text are the answer after it)
        ThinkingStateRole,            // "" (no block), "thinking" (streaming inside it), "done", "cut" (ended inside it)
        StructuredRole,               // answers asked to be structured: checked against it (structured_verdict.h); {} otherwise
        DraftsRole,                   // answers made with speculative decoding: their drafts' totals in words ("" otherwise)
    };
    Q_ENUM(Role)

    using QAbstractListModel::QAbstractListModel;

    // A message bubble lays out its whole text on the GUI thread in one go (about 0.7 ms per 1000
    // characters here: 10 MB would freeze the window for seconds), so the view gets at most this
    // many characters and says how many it leaves out; the text itself is kept, stored and exported whole.
    static constexpr qsizetype kShownChars = 20000;
    // While an answer streams its heat map is rebuilt at most every kStreamingHeatMs: tokens come
    // in batches of about 100 ms (one by one from a slow model) and laying out the rich text
    // again with each would slow the decoding.
    static constexpr qint64 kStreamingHeatMs = 100;
    // The clock of that pace (the app's unless a test gives its own).
    void setPacerClock(PacerClock& clock) { heatPace_.setClock(clock); }

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QHash<int, QByteArray> roleNames() const override;
    int count() const { return int(messages_.size()); }

    const ChatMessage& at(int row) const { return messages_[size_t(row)]; }
    // The row of the message the store keeps as `storeId` (a search hit's), -1 when none is here.
    // The "draft" tint of a fate ("accepted", "corrected", "bonus"; else transparent), in the theme
    // in use: the legend and the Probabilities panel show the colours the answer's text has.
    Q_INVOKABLE QColor draftColor(const QString& fate) const;
    Q_INVOKABLE int rowOfStored(qint64 storeId) const {
        for (int r = 0; r < count(); ++r)
            if (storeId != 0 && messages_[size_t(r)].storeId == storeId) return r;
        return -1;
    }
    // An answer's heat map (built on first use), nullptr for questions, empty answers or mode "off".
    const HeatText* heatText(int row) const;
    const std::vector<ChatMessage>& messages() const { return messages_; }
    int append(ChatMessage message);  // returns the new row
    // Streams steps into an answer: their bytes join the text (whole UTF-8 characters only).
    void appendSteps(int row, const std::vector<StepRecord>& steps);
    void setTokens(int row, std::vector<int32_t> tokens);
    // Token ids belong to a vocabulary and a template: after a change, the message and every
    // version of it are tokenized again from their text.
    void forgetTokens(int row);
    void setStoreId(int row, qint64 id);
    // Ends streaming: the final text (stop strings cut), finish reason and statistics.
    void finish(int row, const QString& text, Message::Finish finishReason, const AnswerStats& stats);
    void setText(int row, const QString& text);
    void setStats(int row, const AnswerStats& stats);  // an answer's figures known before it ends (its prefill)
    // What made an answer (set as it starts), and the text of tokens its steps name (added as they
    // stream, before the steps that name them).
    void setOrigin(int row, AnswerOrigin origin);
    void addTokenTexts(int row, std::map<int32_t, TokenText> texts);
    void truncate(int rows);  // keep the first `rows` messages
    void reset(std::vector<ChatMessage> messages);

    QString heatMode() const;
    void setHeatMode(const QString& mode);
    bool darkTheme() const { return dark_; }
    void setDarkTheme(bool dark);
    void setReplayChanged(int row, std::vector<uint8_t> changed);
    void setKvKl(int row, std::vector<float> kl);  // "What q8_0 costs" (kv_cost_model.h); empty: none
    // "Compare with…" (compare_model.h): per step KL(P_A ‖ P_B) and flips; empty: none. onText:
    // the vocabularies differ, and kl holds each step's word gap in bits instead (no flips).
    void setCompared(int row, std::vector<float> kl, std::vector<uint8_t> flips, bool onText = false);
    bool compareOnText() const { return compareOnText_; }

    // Versions of an answer: the active one is saved into the list, then `index` is shown.
    void addVariant(int row);          // records the current content as a version (before a new one streams in)
    bool showVariant(int row, int index);
    void abandonVariant(int row);      // drops the version being streamed (it failed) and shows the previous one
    void replaceSteps(int row, std::vector<StepRecord> steps);  // a branch starts with the kept steps

signals:
    void countChanged();
    void heatModeChanged();

private:
    void invalidateHeat(int row);
    void staleHeat(ChatMessage& m);  // its heat map is built again when next asked for, under a new revision
    bool hasHeat(const ChatMessage& m) const;
    quint64 heatRevisions_ = 0;
    std::vector<ChatMessage> messages_;
    HeatMode heatMode_ = HeatMode::Probability;
    bool compareOnText_ = false;  // the last setCompared's
    bool dark_ = false;
    std::vector<Utf8Stream> utf8_;  // one per row (only answers being streamed use theirs)
    // Asked with each batch, never ringing on its own: a heat map rebuilt between two batches
    // would be laid out and drawn in a frame of its own, and the next batch brings it anyway.
    Pacer heatPace_{kStreamingHeatMs, {}};
};

}  // namespace inferscope
