#include "record/step_record_codec.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <fmt/format.h>

namespace inferscope {
namespace {

constexpr char kMagicV5[4] = {'I', 'S', 'R', '5'};
constexpr char kMagicV4[4] = {'I', 'S', 'R', '4'};
constexpr char kMagic[4] = {'I', 'S', 'R', '3'};
constexpr char kMagicV2[4] = {'I', 'S', 'R', '2'};
constexpr char kMagicV1[4] = {'I', 'S', 'R', '1'};
constexpr size_t kGrammarStage = size_t(SamplerStage::Grammar);

class Writer {
public:
    template <class T>
    void put(T v) {
        const auto* p = reinterpret_cast<const uint8_t*>(&v);
        out.insert(out.end(), p, p + sizeof(T));
    }
    void bytes(const void* data, size_t n) {
        const auto* p = static_cast<const uint8_t*>(data);
        out.insert(out.end(), p, p + n);
    }
    std::vector<uint8_t> out;
};

class Reader {
public:
    explicit Reader(std::span<const uint8_t> b) : b_(b) {}
    template <class T>
    bool get(T& v) {
        if (b_.size() - pos_ < sizeof(T)) return false;
        std::memcpy(&v, b_.data() + pos_, sizeof(T));
        pos_ += sizeof(T);
        return true;
    }
    bool bytes(std::string& s, size_t n) {
        if (b_.size() - pos_ < n) return false;
        s.assign(reinterpret_cast<const char*>(b_.data() + pos_), n);
        pos_ += n;
        return true;
    }
    size_t remaining() const { return b_.size() - pos_; }

private:
    std::span<const uint8_t> b_;
    size_t pos_ = 0;
};

// Fixed bytes of a step before its piece and candidates.
// (ISR1/ISR2: six stages and no grammar fields; the smaller sizes bound their counts.)
constexpr size_t kStepFixedBytes = 4 * 3 + 4 * 3 + 4 + 4 * 2 + 4 * (kSamplerStageCount - 1) + 8 * 2 + 1 + 2 + 2;
constexpr size_t kCandidateBytes = 4 + 4 + 4 * (kSamplerStageCount - 1);

// Reads one value per stage; an old record's six skip the grammar stage, which copies the penalty's.
template <class T>
bool getStages(Reader& r, std::array<T, kSamplerStageCount>& values, bool v3) {
    bool ok = true;
    for (size_t i = 0; i < values.size(); ++i) {
        if (!v3 && i == kGrammarStage) continue;
        ok = ok && r.get(values[i]);
    }
    if (!v3) values[kGrammarStage] = values[kGrammarStage - 1];
    return ok;
}

// A speculative answer's draft record, after the step's replay logits (ISR4).
constexpr size_t kDraftBytes = 1 + 4 + 4 * 3 + 4 * 2 + 8 * 2 + 4;

void putDraft(Writer& w, const DraftRecord* d) {
    w.put(uint8_t(d ? 1 : 0));
    if (!d) return;
    w.put(uint8_t(d->fate));
    w.put(int32_t(d->draftedId));
    w.put(d->q);
    w.put(d->p);
    w.put(d->acceptProbability);
    w.put(int32_t(d->draftIndex));
    w.put(int32_t(d->draftLength));
    w.put(int64_t(d->draftUs));
    w.put(int64_t(d->verifyUs));
    w.put(int32_t(d->verifyRows));
    // ISR5: the position's candidates with p and q, and a correction's residual.
    const size_t nCandidates = std::min(d->candidates.size(), kDraftCandidates);
    w.put(uint8_t(nCandidates));
    for (size_t i = 0; i < nCandidates; ++i) {
        w.put(int32_t(d->candidates[i].id));
        w.put(d->candidates[i].p);
        w.put(d->candidates[i].q);
    }
    const size_t nResidual = std::min(d->residual.size(), kDraftResidual);
    w.put(uint8_t(nResidual));
    for (size_t i = 0; i < nResidual; ++i) {
        w.put(int32_t(d->residual[i].id));
        w.put(d->residual[i].r);
    }
    w.put(d->residualMass);
}

// False when truncated or the fate is unknown; `v5`: the candidates and the residual follow.
bool getDraft(Reader& r, std::shared_ptr<const DraftRecord>& out, bool v5) {
    uint8_t has = 0;
    if (!r.get(has) || has > 1) return false;
    if (!has) return true;
    if (r.remaining() < kDraftBytes) return false;
    auto d = std::make_shared<DraftRecord>();
    uint8_t fate = 0;
    r.get(fate);
    if (fate > uint8_t(DraftRecord::Fate::Undrafted)) return false;
    d->fate = DraftRecord::Fate(fate);
    int64_t draftUs = 0, verifyUs = 0;
    r.get(d->draftedId);
    r.get(d->q);
    r.get(d->p);
    r.get(d->acceptProbability);
    r.get(d->draftIndex);
    r.get(d->draftLength);
    r.get(draftUs);
    r.get(verifyUs);
    r.get(d->verifyRows);
    d->draftUs = draftUs;
    d->verifyUs = verifyUs;
    if (v5) {
        uint8_t nCandidates = 0;
        if (!r.get(nCandidates) || nCandidates > kDraftCandidates || r.remaining() < size_t(nCandidates) * 12) return false;
        d->candidates.resize(nCandidates);
        for (DraftCandidate& c : d->candidates) {
            r.get(c.id);
            r.get(c.p);
            r.get(c.q);
        }
        uint8_t nResidual = 0;
        if (!r.get(nResidual) || nResidual > kDraftResidual || r.remaining() < size_t(nResidual) * 8 + 4) return false;
        d->residual.resize(nResidual);
        for (DraftResidual& e : d->residual) {
            r.get(e.id);
            r.get(e.r);
        }
        r.get(d->residualMass);
    }
    out = std::move(d);
    return true;
}

}  // namespace

std::vector<uint8_t> encodeStepRecords(std::span<const StepRecord> steps) {
    Writer w;
    // ISR3 unless a step has a draft record: a plain answer stays readable by a release before ISR4.
    const bool v4 = std::any_of(steps.begin(), steps.end(), [](const StepRecord& r) { return r.draft != nullptr; });
    w.bytes(v4 ? kMagicV5 : kMagic, 4);
    w.put(uint32_t(steps.size()));
    for (const StepRecord& r : steps) {
        const SampleRecord& s = r.sample;
        w.put(int32_t(r.step));
        w.put(int32_t(r.position));
        w.put(int32_t(s.id));
        w.put(s.logit);
        w.put(s.pRaw);
        w.put(s.pFinal);
        w.put(int32_t(s.rank));
        w.put(s.entropyBits);
        w.put(s.logSumExp);
        for (int32_t n : s.survivors) w.put(n);
        w.put(uint8_t(s.constrained ? 1 : 0));
        w.put(s.grammarMassRemoved);
        w.put(s.pBeforeGrammar);
        w.put(int64_t(r.forwardUs));
        w.put(int64_t(r.sampleUs));
        w.put(uint8_t(r.endOfGeneration ? 1 : 0));
        const size_t pieceBytes = std::min<size_t>(r.piece.size(), 0xffff);
        w.put(uint16_t(pieceBytes));
        w.bytes(r.piece.data(), pieceBytes);
        const size_t nTop = std::min<size_t>(s.top.size(), 0xffff);
        w.put(uint16_t(nTop));
        for (size_t c = 0; c < nTop; ++c) {
            w.put(int32_t(s.top[c].id));
            w.put(s.top[c].logit);
            for (float p : s.top[c].p) w.put(p);
        }
        w.put(uint32_t(r.replayIds.size()));
        w.bytes(r.replayIds.data(), r.replayIds.size() * sizeof(int32_t));
        w.bytes(r.replayLogits.data(), r.replayLogits.size() * sizeof(float));
        if (v4) putDraft(w, r.draft.get());
    }
    return std::move(w.out);
}

Result<std::vector<StepRecord>> decodeStepRecords(std::span<const uint8_t> bytes) {
    const bool v5 = bytes.size() >= 4 && std::memcmp(bytes.data(), kMagicV5, 4) == 0;
    const bool v4 = v5 || (bytes.size() >= 4 && std::memcmp(bytes.data(), kMagicV4, 4) == 0);
    const bool v3 = v4 || (bytes.size() >= 4 && std::memcmp(bytes.data(), kMagic, 4) == 0);
    if (bytes.size() < 8 || (!v3 && std::memcmp(bytes.data(), kMagicV2, 4) != 0 && std::memcmp(bytes.data(), kMagicV1, 4) != 0))
        return fail(ErrorKind::BadFile, "token records: not in the ISR1/ISR2/ISR3/ISR4/ISR5 format");
    const bool v2 = v3 || std::memcmp(bytes.data(), kMagicV2, 4) == 0;
    Reader r(bytes.subspan(4));
    uint32_t count = 0;
    r.get(count);
    if (count > r.remaining() / kStepFixedBytes)
        return fail(ErrorKind::BadFile, fmt::format("token records: {} steps cannot fit in {} bytes", count, bytes.size()));
    std::vector<StepRecord> steps(count);
    for (uint32_t k = 0; k < count; ++k) {
        StepRecord& st = steps[k];
        SampleRecord& s = st.sample;
        int32_t step = 0, position = 0, id = 0, rank = 0;
        int64_t fwd = 0, smp = 0;
        uint8_t eog = 0;
        uint16_t pieceBytes = 0, nTop = 0;
        bool ok = r.get(step) && r.get(position) && r.get(id) && r.get(s.logit) && r.get(s.pRaw) && r.get(s.pFinal) &&
                  r.get(rank) && r.get(s.entropyBits) && r.get(s.logSumExp);
        ok = ok && getStages(r, s.survivors, v3);
        if (v3) {
            uint8_t constrained = 0;
            ok = ok && r.get(constrained) && r.get(s.grammarMassRemoved) && r.get(s.pBeforeGrammar);
            s.constrained = constrained != 0;
        }
        ok = ok && r.get(fwd) && r.get(smp) && r.get(eog) && r.get(pieceBytes) && r.bytes(st.piece, pieceBytes) && r.get(nTop);
        if (!ok || nTop > r.remaining() / kCandidateBytes)
            return fail(ErrorKind::BadFile, fmt::format("token records: step {} is truncated", k));
        st.step = step;
        st.position = position;
        s.id = id;
        s.rank = rank;
        st.forwardUs = fwd;
        st.sampleUs = smp;
        st.endOfGeneration = eog != 0;
        s.top.resize(nTop);
        for (auto& c : s.top) {
            r.get(c.id);
            r.get(c.logit);
            getStages(r, c.p, v3);
        }
        if (!v2) continue;
        uint32_t nReplay = 0;
        if (!r.get(nReplay) || nReplay > r.remaining() / 8)
            return fail(ErrorKind::BadFile, fmt::format("token records: step {} is truncated", k));
        st.replayIds.resize(nReplay);
        st.replayLogits.resize(nReplay);
        for (auto& id : st.replayIds) r.get(id);
        for (auto& l : st.replayLogits) r.get(l);
        if (v4 && !getDraft(r, st.draft, v5)) return fail(ErrorKind::BadFile, fmt::format("token records: step {}'s draft is truncated or unknown", k));
    }
    if (r.remaining() != 0) return fail(ErrorKind::BadFile, fmt::format("token records: {} unexpected bytes at the end", r.remaining()));
    return steps;
}

}  // namespace inferscope
