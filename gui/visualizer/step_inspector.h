#pragma once
// StepInspector: what the Probabilities panel shows — one generation step of one answer (the
// newest while an answer streams, or one the user picked in the text): its top candidates with
// their probability after every sampler stage, the pick, its rank, the step's entropy — and a
// replay of the whole answer with other sampler settings (StepReplay, step_replay.h).
// GUI thread; reads ChatController's ChatModel.

#include <QObject>
#include <QQmlEngine>
#include <QUrl>
#include <QVariantList>
#include <optional>

#include "visualizer/candidate_list_model.h"
#include "visualizer/step_replay.h"
#include "visualizer/step_values.h"
#include "sampler/replay.h"
#include "app/pacer.h"
#include "app/qml_singleton.h"
#include "record/answer_origin.h"

namespace inferscope {

class ChatController;
class ChatModel;
struct ChatMessage;

class StepInspector : public QObject, public QmlSingleton<StepInspector> {
    Q_OBJECT
    QML_ELEMENT
    QML_SINGLETON
    Q_PROPERTY(inferscope::StepSelection selection READ selection NOTIFY selectionChanged)
    Q_PROPERTY(bool following READ following WRITE setFollowing NOTIFY selectionChanged)  // track the newest step
    Q_PROPERTY(inferscope::StepDetails details READ details NOTIFY detailsChanged)
    Q_PROPERTY(inferscope::CandidateListModel* candidateModel READ candidateModel CONSTANT)  // details' candidates, updated in place
    Q_PROPERTY(inferscope::AnswerShown answer READ answer NOTIFY selectionChanged)
    Q_PROPERTY(inferscope::AnswerProfile profile READ profile NOTIFY profileChanged)
    // Whether a panel on screen shows the selection (Probabilities, Layers, Attention, Timeline;
    // Inspector.qml says). While none does, following the stream waits: a hidden panel's bars,
    // funnel and strip were rebuilt ten times a second and cost the decode 4% on two cores. The
    // newest step is taken the moment one is shown again. True when nothing says otherwise.
    Q_PROPERTY(bool shown READ shown WRITE setShown NOTIFY shownChanged)
    // Whether the Probabilities panel is on screen: the step's candidates, funnel and the answer's
    // surprisal strip (details, candidateModel, profile) are brought up to date only then — at
    // once when it is shown again. True unless told.
    Q_PROPERTY(bool detailsShown READ detailsShown WRITE setDetailsShown NOTIFY detailsShownChanged)
    // The replay of the selected answer with other sampler settings (step_replay.h).
    Q_PROPERTY(inferscope::StepReplay* replay READ replay CONSTANT)

public:
    StepInspector(ChatController* chat, QObject* parent);
    // The clock of its paces (following the stream, the details, the replay's rest): the app's
    // unless a test gives its own.
    void setPacerClock(PacerClock& clock);

    int row() const { return row_; }
    int step() const { return step_; }
    int stepCount() const;
    bool following() const { return following_; }
    void setFollowing(bool on);
    bool shown() const { return shown_; }
    void setShown(bool on);
    bool detailsShown() const { return detailsShown_; }
    int shownStep() const { return shownStep_; }
    void setDetailsShown(bool on);
    bool hasStep() const { return stepRecord() != nullptr; }
    QVariantMap current() const;
    QVariantList candidates() const;
    CandidateListModel* candidateModel() { return &candidateModel_; }
    QVariantList survivors() const;
    QStringList stageNames() const;
    bool answerRemote() const;
    QStringList answerStages() const;
    QString answerModel() const;
    // The selected answer's origin (an Unknown one while none is selected).
    const AnswerOrigin& answerOrigin() const;

    static constexpr double kStripMaxBits = 64.0;  // a pick of p 0 is infinitely surprising; the bar stops here
    QList<qreal> answerSurprisal() const { return surprisal_; }
    QList<qreal> answerEntropy() const { return entropy_; }
    StepSelection selection() const { return {row_, step_, stepCount(), hasStep()}; }
    const StepDetails& details() const { return details_; }
    AnswerShown answer() const { return {answerRemote(), answerStages(), answerModel()}; }
    AnswerProfile profile() const { return {surprisal_, entropy_}; }

    StepReplay* replay() const { return replay_; }

    // Selects a step (row -1: none); stops following the stream.
    Q_INVOKABLE void select(int row, int step);
    Q_INVOKABLE void selectAtPosition(int row, int textPosition);  // the step under a character of the heat text
    Q_INVOKABLE void stepBy(int delta);
    // A one-line description of a step for the hover tooltip: the token, its probability, rank, alternatives.
    Q_INVOKABLE QString describe(int row, int step) const;
    // The hover tooltip for the character at a heat-text position: describe() of its step, or for a
    // character whose bytes came from several tokens, the split (each token, its bytes and probability) first.
    Q_INVOKABLE QString describeAt(int row, int position) const;
    // Continues the answer from the selected step with another candidate (see ChatController::branchFrom).
    Q_INVOKABLE bool branch(int tokenId);
    // The selected answer's per-token records, written atomically: "json" is {model, steps} with
    // each step in the one step-record schema (core/record/step_record_json.h, as the CLI's --json
    // and the conversation export write it); "csv" a flat table for spreadsheets, a row per token
    // with its top 5 candidates, tokens as the panel shows them.
    Q_INVOKABLE bool exportRecords(const QUrl& file, const QString& format);
    Q_INVOKABLE QString lastExportError() const { return exportError_; }
    // A token of the selected answer as the panels show it: spaces and line breaks made visible,
    // raw bytes as <0xNN>; its text from the answer's origin, never from the model loaded now.
    Q_INVOKABLE QString tokenText(int32_t id) const { return tokenTextIn(row_, id); }
    // The same for the answer at `row`. An id whose text the answer did not keep (stored before
    // origins were: its candidates) shows as "#id" — unless the loaded model is the one its stats
    // name, whose vocabulary is then the best guess there is.
    QString tokenTextIn(int row, int32_t id) const;
    // A token of the model loaded now (the Layers and Attention panels' live passes): "#id" when
    // no vocabulary has it.
    Q_INVOKABLE QString liveTokenText(int32_t id) const;
    ChatController* chat() const { return chat_; }
    // The tokens the messages before `row` put in the context (what precedes an answer's first step).
    std::vector<int32_t> contextBefore(int row) const;

signals:
    void selectionChanged();
    void profileChanged();
    void shownChanged();
    void detailsShownChanged();
    void detailsChanged();  // the selected step's details, when detailsShown

private:
    friend class StepReplay;  // reads the selected answer's steps and shows candidates as the panel does
    const StepRecord* stepRecord() const;
    const std::vector<StepRecord>* answerSteps() const;
    // The selection follows the model; `streaming`: the stream moved on (the details may wait).
    void onModelChanged(bool streaming = false);
    void follow();  // the stream moved on: onModelChanged, or behind_ while no panel shows the step
    QVariantMap candidateMap(const CandidateRecord& c, int32_t chosen) const;
    const ChatMessage* answerAt(int row) const;

    ChatController* chat_;
    int row_ = -1;
    int step_ = -1;
    bool following_ = true;
    bool shown_ = true;
    bool behind_ = false;  // following, unseen: the stream moved on since the last refresh
    bool detailsShown_ = true;
    int shownStep_ = -1;
    bool detailsBehind_ = false;  // the details were not refreshed since the selection or its answer changed
    StepReplay* replay_;  // a child
    QString exportError_;
    // Streaming text changes arrive with every step batch (about ten a second, more when a model's
    // steps are slow enough to be sent one by one); the panel follows at most once per kFollowMs —
    // with the batch when it can, so that the window draws the text and the panel in one frame
    // (a timer of its own drew a second frame a few ms after each batch's).
    static constexpr qint64 kFollowMs = 100;
    Pacer followPace_{kFollowMs, [this] { follow(); }};
    CandidateListModel candidateModel_;
    StepDetails details_;  // built by refreshDetails
    QList<qreal> surprisal_, entropy_;
    // The candidate model, the profile and detailsChanged, or detailsBehind_ while unseen. While an
    // answer streams, at most every kDetailsMs: a step 10 tokens on every 100 ms can be read no
    // better than one 25 tokens on every 250 ms, and each refresh lays the panel out and draws it
    // again (2-5 ms of the GUI thread, taken from the decode on two cores).
    void refreshDetails(bool streaming = false);
    static constexpr qint64 kDetailsMs = 250;
    Pacer detailsPace_{kDetailsMs, [this] {
        if (detailsBehind_) refreshDetails();
    }};
    void refreshProfile();
    void refreshCandidateModel();  // while an answer streams, the panel follows at most 10 times a second
};

}  // namespace inferscope
