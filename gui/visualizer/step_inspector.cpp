#include "visualizer/step_inspector.h"

#include <cmath>

#include "app/units.h"
#include "chat/chat_controller.h"
#include "chat/draft_summary.h"
#include "engine/engine_controller.h"
#include "chat/token_heatmap.h"
#include "tokenizer/utf8_stream.h"

namespace inferscope {
namespace {

QString printable(const QString& text);

// A token as the panel shows it: spaces and line breaks made visible, raw bytes as <0xNN>.
QString visible(const std::string& bytes, std::string_view piece) {
    if (bytes.empty()) return QString::fromUtf8(piece.data(), qsizetype(piece.size()));  // control: "</s>"
    auto byteLabel = [](uint8_t b) { return QStringLiteral("<0x%1>").arg(QString::number(b, 16).rightJustified(2, QLatin1Char('0')).toUpper()); };
    // A lone byte that is not a character by itself (DEL and controls included): as the byte.
    if (bytes.size() == 1 && (uint8_t(bytes[0]) >= 0x7F || (bytes[0] < 0x20 && bytes[0] != '\n'))) return byteLabel(uint8_t(bytes[0]));
    // Byte-level BPE splits a character's bytes between tokens: a part of one shows as its bytes
    // ("<0xF0><0x9F>"), not as U+FFFD.
    QString s;
    for (size_t i = 0; i < bytes.size();) {
        const int len = utf8Sequence(std::string_view(bytes).substr(i));
        if (len <= 0) {
            s += byteLabel(uint8_t(bytes[i++]));
            continue;
        }
        s += printable(QString::fromUtf8(bytes.data() + i, len));
        i += size_t(len);
    }
    return s;
}

// A whole character or more, with spaces, line breaks and invisible characters made visible.
QString printable(const QString& text) {
    QString s;
    for (const QChar c : text) {
        if (c == QLatin1Char(' ')) s += QChar(0x2423);  // ␣
        else if (c == QLatin1Char('\n')) s += QStringLiteral("\\n");
        else if (c == QLatin1Char('\t')) s += QStringLiteral("\\t");
        // Other spaces (no-break, hair…) and invisible characters showed as a blank: their code point.
        else if (!c.isSurrogate() && (c.isSpace() || !c.isPrint() || c.category() == QChar::Other_Format))
            s += QStringLiteral("<U+%1>").arg(QString::number(c.unicode(), 16).rightJustified(4, QLatin1Char('0')).toUpper());
        else s += c;
    }
    return s;
}

// Bits with two decimals; a pick of p 0 is infinitely surprising.
QString bitsText(double bits) { return std::isinf(bits) ? QStringLiteral("∞") : QString::number(bits, 'f', 2); }
}  // namespace

StepInspector::StepInspector(ChatController* chat, QObject* parent)
    : QObject(parent), chat_(chat), replay_(new StepReplay(*this)) {
    ChatModel* m = chat_->messages();
    connect(m, &QAbstractItemModel::rowsInserted, this, [this] { onModelChanged(); });
    connect(m, &QAbstractItemModel::rowsRemoved, this, [this] { onModelChanged(); });
    // Another conversation: its newest answer (a step picked in the previous one means nothing here).
    connect(m, &QAbstractItemModel::modelReset, this, [this] {
        following_ = true;
        onModelChanged();
    });
    // The stream moving on, at kFollowMs's pace. Batches come about every 100 ms, a few ms early
    // or late: one a little early is taken.
    followPace_.setEarlyMargin(kFollowMs * 2 / 10);
    connect(m, &QAbstractItemModel::dataChanged, this, [this] { followPace_.request(); });
    // A new answer is what the user waits for: the panel follows it again, even after a click on
    // an older token turned following off (Probabilities said "No token yet" while tokens streamed).
    connect(chat_, &ChatController::generatingChanged, this, [this] {
        if (chat_->generating()) setFollowing(true);
    });
    connect(chat_, &ChatController::answerFinished, this, [this](int row) {
        if (row == row_) {
            replay_->resetToAnswer();
        }
    });
}

void StepInspector::setPacerClock(PacerClock& clock) {
    followPace_.setClock(clock);
    detailsPace_.setClock(clock);
    replay_->setPacerClock(clock);
}

const std::vector<StepRecord>* StepInspector::answerSteps() const {
    const ChatModel* m = chat_->messages();
    if (row_ < 0 || row_ >= m->count()) return nullptr;
    const ChatMessage& msg = m->at(row_);
    return msg.role == Message::Assistant ? &msg.steps : nullptr;
}

const StepRecord* StepInspector::stepRecord() const {
    const auto* steps = answerSteps();
    if (!steps || step_ < 0 || step_ >= int(steps->size())) return nullptr;
    return &(*steps)[size_t(step_)];
}

int StepInspector::stepCount() const {
    const auto* steps = answerSteps();
    return steps ? int(steps->size()) : 0;
}

void StepInspector::follow() {
    if (following_ && !shown_) {
        behind_ = true;
        return;
    }
    onModelChanged(true);
}

void StepInspector::setShown(bool on) {
    if (on == shown_) return;
    shown_ = on;
    emit shownChanged();
    if (shown_ && behind_) onModelChanged();
}

void StepInspector::onModelChanged(bool streaming) {
    behind_ = false;
    const ChatModel* m = chat_->messages();
    const int oldRow = row_;
    if (following_) {
        // The newest step of the last answer.
        row_ = -1;
        for (int r = m->count() - 1; r >= 0; --r)
            if (m->at(r).role == Message::Assistant) {
                row_ = r;
                break;
            }
        step_ = row_ >= 0 ? int(m->at(row_).steps.size()) - 1 : -1;
    } else if (row_ >= m->count()) {
        row_ = -1;
        step_ = -1;
    } else if (row_ >= 0) {
        step_ = std::min(step_, int(m->at(row_).steps.size()) - 1);
    }
    if (row_ != oldRow) replay_->resetToAnswer();
    refreshDetails(streaming);
    emit selectionChanged();
}

void StepInspector::setDetailsShown(bool on) {
    if (on == detailsShown_) return;
    detailsShown_ = on;
    emit detailsShownChanged();
    if (detailsShown_ && detailsBehind_) refreshDetails();
}

void StepInspector::refreshDetails(bool streaming) {
    if (!detailsShown_) {
        detailsBehind_ = true;
        return;
    }
    if (streaming && !detailsPace_.due()) {
        detailsBehind_ = true;
        // The next batch past kDetailsMs brings them, drawn in its frame; the run a follow interval
        // after that is for a stream that stops (or a slow model's steps) before one comes.
        if (!detailsPace_.pending()) detailsPace_.runAfter(detailsPace_.intervalLeft() + kFollowMs);
        return;
    }
    detailsPace_.ran();
    detailsBehind_ = false;
    shownStep_ = step_;
    details_ = {shownStep_, current(), candidates(), survivors(), stageNames()};
    refreshCandidateModel();
    refreshProfile();
    emit detailsChanged();
}

void StepInspector::refreshCandidateModel() {
    QList<CandidateRow> rows;
    if (const StepRecord* r = stepRecord()) {
        rows.reserve(qsizetype(r->sample.top.size()));
        for (const CandidateRecord& c : r->sample.top) {
            CandidateRow row;
            row.id = c.id;
            row.token = tokenText(c.id);
            row.logit = c.logit;
            row.pRaw = c.p[0];
            row.pFinal = c.p[kSamplerStageCount - 1];
            for (float v : c.p) row.p.append(double(v));
            row.chosen = c.id == r->sample.id;
            rows.append(std::move(row));
        }
    }
    candidateModel_.set(std::move(rows));
}

void StepInspector::refreshProfile() {
    // Recomputed whole (a few thousand logs at most ten times a second cost microseconds): a
    // branch or another version of the same answer can change steps without changing their
    // count. Announced only when it changed, so moving the selection does not repaint the strip.
    QList<qreal> surprisal, entropy;
    if (const auto* steps = answerSteps()) {
        surprisal.reserve(qsizetype(steps->size()));
        entropy.reserve(qsizetype(steps->size()));
        for (const StepRecord& r : *steps) {
            surprisal.append(std::min(surprisalBits(double(r.sample.pRaw)), kStripMaxBits));
            entropy.append(double(r.sample.entropyBits));
        }
    }
    if (surprisal == surprisal_ && entropy == entropy_) return;
    surprisal_ = std::move(surprisal);
    entropy_ = std::move(entropy);
    emit profileChanged();
}

void StepInspector::setFollowing(bool on) {
    if (on == following_) return;
    following_ = on;
    onModelChanged();
}

void StepInspector::select(int row, int step) {
    following_ = false;
    const int oldRow = row_;
    row_ = row;
    step_ = step;
    if (row_ != oldRow) replay_->resetToAnswer();
    refreshDetails();
    emit selectionChanged();
    replay_->followStep();
}

void StepInspector::selectAtPosition(int row, int textPosition) {
    const HeatText* heat = chat_->messages()->heatText(row);
    if (!heat) return;
    const int step = stepAtPosition(heat->tokenStarts, textPosition);
    if (step >= 0) select(row, step);
}

void StepInspector::stepBy(int delta) {
    if (row_ < 0) return;
    select(row_, std::clamp(step_ + delta, 0, std::max(0, stepCount() - 1)));
}

const ChatMessage* StepInspector::answerAt(int row) const {
    const ChatModel* m = chat_->messages();
    if (row < 0 || row >= m->count() || m->at(row).role != Message::Assistant) return nullptr;
    return &m->at(row);
}

const AnswerOrigin& StepInspector::answerOrigin() const {
    static const AnswerOrigin none;
    const ChatMessage* a = answerAt(row_);
    return a ? a->origin : none;
}

bool StepInspector::answerRemote() const { return answerOrigin().remote(); }

QStringList StepInspector::answerStages() const {
    const AnswerOrigin& o = answerOrigin();
    if (o.remote() && !o.stagesReported) return {stageNames().first()};
    return stageNames();
}

QString StepInspector::answerModel() const {
    const AnswerOrigin& o = answerOrigin();
    return o.known() ? ChatController::originLabel(o) : QString();
}

QString StepInspector::liveTokenText(int32_t id) const {
    const auto t = chat_->engine()->tokenText(id);
    return t ? visible(t->bytes, t->label) : QStringLiteral("#%1").arg(id);
}

QString StepInspector::tokenTextIn(int row, int32_t id) const {
    if (const ChatMessage* a = answerAt(row)) {
        const AnswerOrigin& o = a->origin;
        if (const TokenText* t = o.text(id)) return visible(t->bytes, t->label);
        // Stored before answers kept their tokens' texts: the model its stats name, if that is
        // the one loaded (a local answer's ids are that vocabulary's).
        const EngineController* engine = chat_->engine();
        if (o.backend == AnswerBackend::Local && o.vocabularyHash == 0 && engine->abilities().tokenizes &&
            engine->modelName().toStdString() == o.modelName)
            if (const auto t = engine->tokenText(id)) return visible(t->bytes, t->label);
    }
    return QStringLiteral("#%1").arg(id);
}

QStringList StepInspector::stageNames() const {
    QStringList names;
    for (int s = 0; s < kSamplerStageCount; ++s) names << QString::fromLatin1(samplerStageName(SamplerStage(s)).data());
    return names;
}

QVariantMap StepInspector::candidateMap(const CandidateRecord& c, int32_t chosen) const {
    QVariantMap m = candidateValues(c, chosen);
    m.insert(QStringLiteral("token"), tokenText(c.id));
    return m;
}

QVariantMap StepInspector::current() const {
    const StepRecord* r = stepRecord();
    if (!r) return {};
    const SampleRecord& s = r->sample;
    return {{"step", r->step}, {"position", r->position}, {"id", s.id}, {"token", tokenText(s.id)},
            {"logit", double(s.logit)}, {"pRaw", double(s.pRaw)}, {"pFinal", double(s.pFinal)}, {"rank", s.rank},
            {"entropyBits", double(s.entropyBits)},
            {"surprisalBits", bitsText(surprisalBits(double(s.pRaw)))},
            {"forwardMs", double(r->forwardUs) / 1000.0},
            {"sampleMs", double(r->sampleUs) / 1000.0}, {"endOfGeneration", r->endOfGeneration},
            {"vocabulary", s.survivors[0]},
            // The grammar stage (structured output): what it removed, the "fight meter" (the
            // token's probability just before the mask), and whether one token was all it allowed.
            {"constrained", s.constrained}, {"grammarMassRemoved", double(s.grammarMassRemoved)},
            {"pBeforeGrammar", double(s.pBeforeGrammar)}, {"forced", s.forced()},
            {"grammarKept", s.survivors[size_t(SamplerStage::Grammar)]},
            // Speculative decoding: the token's draft and its fate (chat/draft_summary.h).
            {"draft", draftMap(r->draft.get(), [this](int32_t id) { return tokenText(id); }, s.id)}};
}

QVariantList StepInspector::candidates() const {
    QVariantList out;
    const StepRecord* r = stepRecord();
    if (!r) return out;
    for (const CandidateRecord& c : r->sample.top) out.append(candidateMap(c, r->sample.id));
    return out;
}

QVariantList StepInspector::survivors() const {
    QVariantList out;
    if (const StepRecord* r = stepRecord())
        for (int32_t n : r->sample.survivors) out.append(n);
    return out;
}

QString StepInspector::describe(int row, int step) const {
    const ChatModel* m = chat_->messages();
    if (row < 0 || row >= m->count() || step < 0 || step >= int(m->at(row).steps.size())) return {};
    const StepRecord& r = m->at(row).steps[size_t(step)];
    const SampleRecord& s = r.sample;
    const double bits = surprisalBits(double(s.pRaw));
    QString text = tr("“%1”  %2% · rank %3 · surprisal %4 bits · entropy %5 bits")
                       .arg(isolated(tokenTextIn(row, s.id)))
                       .arg(s.pRaw * 100, 0, 'f', 1)
                       .arg(s.rank)
                       .arg(bitsText(bits))
                       .arg(s.entropyBits, 0, 'f', 2);
    QStringList alternatives;
    for (const CandidateRecord& c : s.top) {
        if (c.id == s.id) continue;
        alternatives << tr("“%1” %2%").arg(isolated(tokenTextIn(row, c.id))).arg(c.p[0] * 100, 0, 'f', 1);
        if (alternatives.size() == 4) break;
    }
    if (!alternatives.isEmpty()) text += QLatin1Char('\n') + tr("else: ") + alternatives.join(QStringLiteral(" · "));
    return text;
}

QString StepInspector::describeAt(int row, int position) const {
    const HeatText* heat = chat_->messages()->heatText(row);
    if (!heat) return {};
    const JoinedCharacter* joined = joinedCharacterAt(*heat, position);
    if (!joined) return describe(row, stepAtPosition(heat->tokenStarts, position));
    // One character, several tokens: the split, then the token that completed it.
    const std::vector<StepRecord>& steps = chat_->messages()->at(row).steps;
    if (joined->lastStep >= int(steps.size())) return {};
    QStringList parts;
    double together = 1.0;
    for (int k = joined->firstStep; k <= joined->lastStep; ++k) {
        const SampleRecord& s = steps[size_t(k)].sample;
        parts << tr("“%1” %2%").arg(isolated(tokenTextIn(row, s.id))).arg(s.pRaw * 100, 0, 'f', 1);
        together *= double(s.pRaw);
    }
    const int count = joined->lastStep - joined->firstStep + 1;
    return tr("“%1” is one character from %2 tokens: %3 · together %4%")
               .arg(isolated(heat->plain.mid(joined->offset, joined->length)))
               .arg(count)
               .arg(parts.join(QStringLiteral(" + ")))
               .arg(together * 100, 0, 'f', 1) +
           QLatin1Char('\n') + describe(row, joined->lastStep);
}

bool StepInspector::branch(int tokenId) {
    if (!stepRecord()) return false;
    return chat_->branchFrom(row_, step_, tokenId);
}

std::vector<int32_t> StepInspector::contextBefore(int row) const {
    std::vector<int32_t> context;
    const ChatModel* m = chat_->messages();
    for (int r = 0; r < row && r < m->count(); ++r) context.insert(context.end(), m->at(r).tokens.begin(), m->at(r).tokens.end());
    return context;
}

}  // namespace inferscope
