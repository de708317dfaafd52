#include "chat/chat_model.h"

#include "chat/structured_verdict.h"
#include "chat/draft_summary.h"

namespace inferscope {
namespace {

// Characters of text shown: kShownChars, one less when that would split a surrogate pair.
qsizetype shownLength(const QString& text) {
    if (text.size() <= ChatModel::kShownChars) return text.size();
    qsizetype n = ChatModel::kShownChars;
    if (text[n - 1].isHighSurrogate()) --n;
    return n;
}

// An answer's folded <think> block (Qwen 3): none for questions.
ThinkingSplit thinkingOf(const ChatMessage& m) {
    return m.role == Message::Assistant ? splitThinking(m.text, m.streaming) : ThinkingSplit{};
}

}  // namespace

int ChatModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(messages_.size()); }

QVariant ChatModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
    const ChatMessage& m = messages_[size_t(index.row())];
    switch (role) {
        case Qt::DisplayRole:
        case TextRole: return m.text;
        case RoleRole: return int(m.role);
        case StreamingRole: return m.streaming;
        case FinishReasonRole: return int(m.finishReason);
        case StatsRole: return QVariant::fromValue(m.stats);
        case TokenCountRole: return int(m.tokens.size());
        case GeneratedCountRole: return int(m.steps.size());
        case HeatRevisionRole: return hasHeat(m) ? int(m.heatRevision) : 0;
        case VariantIndexRole: return m.activeVariant;
        case VariantCountRole: return std::max<int>(1, int(m.variants.size()));
        // The answer proper: a <think> block is shown folded apart (ThinkingRole).
        case ShownTextRole: {
            const QString answer = m.text.mid(thinkingOf(m).answerStart);
            return answer.size() <= kShownChars ? answer : answer.left(shownLength(answer));
        }
        case HiddenCharsRole: {
            const QString answer = m.text.mid(thinkingOf(m).answerStart);
            return int(answer.size() - shownLength(answer));
        }
        case ThinkingRole: {
            const ThinkingSplit t = thinkingOf(m);
            return t.thinking.left(shownLength(t.thinking));
        }
        case ThinkingStateRole: {
            const ThinkingSplit t = thinkingOf(m);
            return !t.present ? QString() : t.finished ? QStringLiteral("done") : m.streaming ? QStringLiteral("thinking") : QStringLiteral("cut");
        }
        case StructuredRole: return structuredVerdict(m);
        case DraftsRole: return m.streaming ? QString() : draftTotalsText(draftTotals(m.steps));
        default: return {};
    }
}

QColor ChatModel::draftColor(const QString& fate) const {
    for (auto f : {DraftRecord::Fate::Accepted, DraftRecord::Fate::Corrected, DraftRecord::Fate::Bonus})
        if (fate == QLatin1String(draftFateName(f))) return draftTint(f, dark_);
    return QColor(Qt::transparent);
}

bool ChatModel::hasHeat(const ChatMessage& m) const {
    return m.role == Message::Assistant && !m.steps.empty() && heatMode_ != HeatMode::Off;
}

void ChatModel::staleHeat(ChatMessage& m) {
    m.heatValid = false;
    m.heatRevision = ++heatRevisions_;
}

const HeatText* ChatModel::heatText(int row) const {
    if (row < 0 || row >= count()) return nullptr;
    const ChatMessage& m = messages_[size_t(row)];
    if (!hasHeat(m)) return nullptr;
    if (!m.heatValid) {
        const bool compare = heatMode_ == HeatMode::Compare;
        m.heat = buildHeatText(m.steps, heatMode_, m.trimLeadingSpace, dark_, m.replayChanged, thinkingOf(m).answerStart,
                               compare ? m.compareKl : m.kvKl, compare ? m.compareFlip : std::vector<uint8_t>{},
                               compare && m.compareOnText ? kCompareTextTintBits : kCompareTintNats);
        m.heatValid = true;
    }
    return &m.heat;
}

QHash<int, QByteArray> ChatModel::roleNames() const {
    return {{RoleRole, "role"},
            {TextRole, "text"},
            {StreamingRole, "streaming"},
            {FinishReasonRole, "finishReason"},
            {StatsRole, "stats"},
            {TokenCountRole, "tokenCount"},
            {GeneratedCountRole, "generatedCount"},
            {HeatRevisionRole, "heatRevision"},
            {VariantIndexRole, "variantIndex"},
            {VariantCountRole, "variantCount"},
            {ShownTextRole, "shownText"},
            {HiddenCharsRole, "hiddenChars"},
            {ThinkingRole, "thinking"},
            {ThinkingStateRole, "thinkingState"},
            {StructuredRole, "structured"},
            {DraftsRole, "drafts"}};
}

int ChatModel::append(ChatMessage message) {
    const int row = int(messages_.size());
    beginInsertRows({}, row, row);
    messages_.push_back(std::move(message));
    staleHeat(messages_.back());
    utf8_.emplace_back();
    endInsertRows();
    emit countChanged();
    return row;
}

void ChatModel::appendSteps(int row, const std::vector<StepRecord>& steps) {
    ChatMessage& m = messages_[size_t(row)];
    std::string added;
    for (const StepRecord& s : steps) {
        m.steps.push_back(s);
        m.steps.back().inspection.reset();  // a first step's capture: PositionInspector keeps the latest only
        m.streamedBytes += s.piece;
        added += utf8_[size_t(row)].push(s.piece);
    }
    if (m.trimLeadingSpace && m.text.isEmpty() && added.starts_with(' ')) added.erase(0, 1);
    m.text += QString::fromUtf8(added);
    const QModelIndex i = index(row);
    const bool rebuildHeat = !m.streaming || heatPace_.due();
    if (!rebuildHeat) {
        emit dataChanged(i, i, {TextRole, ShownTextRole, HiddenCharsRole, ThinkingRole, ThinkingStateRole, GeneratedCountRole});
        return;
    }
    heatPace_.ran();
    staleHeat(m);
    emit dataChanged(i, i, {TextRole, ShownTextRole, HiddenCharsRole, ThinkingRole, ThinkingStateRole, GeneratedCountRole, HeatRevisionRole});
}

void ChatModel::setTokens(int row, std::vector<int32_t> tokens) {
    messages_[size_t(row)].tokens = std::move(tokens);
    const QModelIndex i = index(row);
    emit dataChanged(i, i, {TokenCountRole});
}

void ChatModel::forgetTokens(int row) {
    ChatMessage& m = messages_[size_t(row)];
    m.tokens.clear();
    for (AnswerVariant& v : m.variants) v.tokens.clear();
    const QModelIndex i = index(row);
    emit dataChanged(i, i, {TokenCountRole});
}

void ChatModel::setStoreId(int row, qint64 id) { messages_[size_t(row)].storeId = id; }

void ChatModel::finish(int row, const QString& text, Message::Finish finishReason, const AnswerStats& stats) {
    ChatMessage& m = messages_[size_t(row)];
    m.text = text;
    m.streaming = false;
    m.finishReason = finishReason;
    m.stats = stats;
    m.streamedBytes.clear();
    staleHeat(m);
    utf8_[size_t(row)] = Utf8Stream();
    if (!m.variants.empty()) m.variants[size_t(m.activeVariant)] = m.shownVariant();
    const QModelIndex i = index(row);
    emit dataChanged(i, i, {TextRole, ShownTextRole, HiddenCharsRole, ThinkingRole, ThinkingStateRole, StreamingRole, FinishReasonRole, StatsRole, GeneratedCountRole, HeatRevisionRole, DraftsRole,
                            VariantIndexRole, VariantCountRole, StructuredRole});
}

void ChatModel::setStats(int row, const AnswerStats& stats) {
    messages_[size_t(row)].stats = stats;
    const QModelIndex i = index(row);
    emit dataChanged(i, i, {StatsRole, DraftsRole});
}

void ChatModel::setOrigin(int row, AnswerOrigin origin) { messages_[size_t(row)].origin = std::move(origin); }

void ChatModel::addTokenTexts(int row, std::map<int32_t, TokenText> texts) {
    messages_[size_t(row)].origin.tokens.merge(texts);
}

void ChatModel::setText(int row, const QString& text) {
    messages_[size_t(row)].text = text;
    const QModelIndex i = index(row);
    emit dataChanged(i, i, {TextRole, ShownTextRole, HiddenCharsRole, ThinkingRole, ThinkingStateRole, StructuredRole});
}

void ChatModel::truncate(int rows) {
    if (rows >= int(messages_.size())) return;
    rows = std::max(0, rows);
    beginRemoveRows({}, rows, int(messages_.size()) - 1);
    messages_.resize(size_t(rows));
    utf8_.resize(size_t(rows));
    endRemoveRows();
    emit countChanged();
}

void ChatModel::reset(std::vector<ChatMessage> messages) {
    beginResetModel();
    messages_ = std::move(messages);
    for (ChatMessage& m : messages_) staleHeat(m);
    utf8_.assign(messages_.size(), Utf8Stream());
    endResetModel();
    emit countChanged();
}

}  // namespace inferscope

namespace inferscope {

QString ChatModel::heatMode() const { return heatModeName(heatMode_); }

void ChatModel::setHeatMode(const QString& mode) {
    const HeatMode m = heatModeFromName(mode);
    if (m == heatMode_) return;
    heatMode_ = m;
    for (ChatMessage& m : messages_) staleHeat(m);
    if (!messages_.empty()) emit dataChanged(index(0), index(int(messages_.size()) - 1), {HeatRevisionRole});
    emit heatModeChanged();
}

void ChatModel::setDarkTheme(bool dark) {
    if (dark == dark_) return;
    dark_ = dark;
    for (ChatMessage& m : messages_) staleHeat(m);
    if (!messages_.empty()) emit dataChanged(index(0), index(int(messages_.size()) - 1), {HeatRevisionRole});
    emit heatModeChanged();
}

void ChatModel::invalidateHeat(int row) {
    staleHeat(messages_[size_t(row)]);
    const QModelIndex i = index(row);
    emit dataChanged(i, i, {HeatRevisionRole});
}

void ChatModel::setReplayChanged(int row, std::vector<uint8_t> changed) {
    messages_[size_t(row)].replayChanged = std::move(changed);
    if (heatMode_ == HeatMode::Replay) invalidateHeat(row);
}

void ChatModel::setKvKl(int row, std::vector<float> kl) {
    if (row < 0 || row >= count()) return;
    messages_[size_t(row)].kvKl = std::move(kl);
    if (heatMode_ == HeatMode::KvCost) invalidateHeat(row);
}

void ChatModel::setCompared(int row, std::vector<float> kl, std::vector<uint8_t> flips, bool onText) {
    if (row < 0 || row >= count()) return;
    messages_[size_t(row)].compareKl = std::move(kl);
    messages_[size_t(row)].compareFlip = std::move(flips);
    messages_[size_t(row)].compareOnText = onText;
    if (compareOnText_ != onText) {
        compareOnText_ = onText;
        emit heatModeChanged();
    }
    if (heatMode_ == HeatMode::Compare) invalidateHeat(row);
}

void ChatModel::addVariant(int row) {
    ChatMessage& m = messages_[size_t(row)];
    if (m.variants.empty()) m.variants.push_back(m.shownVariant());
    else m.variants[size_t(m.activeVariant)] = m.shownVariant();
    m.previousVariant = m.activeVariant;
    m.variants.push_back({});
    m.activeVariant = int(m.variants.size()) - 1;
    m.text.clear();
    m.finishReason = Message::NotFinished;
    m.stats = {};
    m.tokens.clear();
    m.steps.clear();
    m.origin = {};
    m.replayChanged.clear();
    m.kvKl.clear();
    m.compareKl.clear();
    m.compareFlip.clear();
    m.compareOnText = false;
    m.streaming = true;
    staleHeat(m);
    utf8_[size_t(row)] = Utf8Stream();
    const QModelIndex i = index(row);
    emit dataChanged(i, i);
}

bool ChatModel::showVariant(int row, int variant) {
    if (row < 0 || row >= count()) return false;
    ChatMessage& m = messages_[size_t(row)];
    if (m.streaming || variant < 0 || variant >= int(m.variants.size()) || variant == m.activeVariant) return false;
    m.variants[size_t(m.activeVariant)] = m.shownVariant();
    m.showFields(m.variants[size_t(variant)]);
    m.replayChanged.clear();
    m.kvKl.clear();
    m.compareKl.clear();
    m.compareFlip.clear();
    m.compareOnText = false;
    m.activeVariant = variant;
    staleHeat(m);
    const QModelIndex i = index(row);
    emit dataChanged(i, i);
    return true;
}

void ChatModel::abandonVariant(int row) {
    ChatMessage& m = messages_[size_t(row)];
    if (m.variants.size() < 2) return;
    m.variants.erase(m.variants.begin() + m.activeVariant);
    m.activeVariant = std::min(m.previousVariant, int(m.variants.size()) - 1);
    m.showFields(m.variants[size_t(m.activeVariant)]);
    m.streaming = false;
    m.streamedBytes.clear();
    staleHeat(m);
    if (m.variants.size() == 1) m.variants.clear();
    utf8_[size_t(row)] = Utf8Stream();
    const QModelIndex i = index(row);
    emit dataChanged(i, i);
}

void ChatModel::replaceSteps(int row, std::vector<StepRecord> steps) {
    ChatMessage& m = messages_[size_t(row)];
    m.steps = std::move(steps);
    m.text.clear();
    m.streamedBytes.clear();
    utf8_[size_t(row)] = Utf8Stream();
    std::string added;
    for (const StepRecord& s : m.steps) added += utf8_[size_t(row)].push(s.piece);
    if (m.trimLeadingSpace && added.starts_with(' ')) added.erase(0, 1);
    m.text = QString::fromUtf8(added);
    staleHeat(m);
    const QModelIndex i = index(row);
    emit dataChanged(i, i, {TextRole, ShownTextRole, HiddenCharsRole, ThinkingRole, ThinkingStateRole, GeneratedCountRole, HeatRevisionRole, DraftsRole});
}

}  // namespace inferscope
