#pragma once
// RemoteVocabulary: a remote server names tokens by their bytes, never by an id the app could
// look up. The vocabulary interns each distinct byte string it meets to a synthetic id, so a
// remote step is a StepRecord like a local one: candidates keyed by id, rendered from their bytes
// (bytesOf). The id is a function of the bytes (FNV-1a, in [2^30, 2^31), the next free one on a
// collision): the same token has the same id in every session and conversation (stored answers,
// the export's piece map), and no id is a real vocabulary's (a local tokenizer shows such an id
// as nothing, never as another token). One per session; GUI thread.
//
// remoteStep turns one streamed token (openai_stream_parser.h) into that StepRecord:
// - the raw distribution is the server's log-probabilities: logit = logprob and logSumExp = 0,
//   so p = exp(logit - logSumExp) = exp(logprob) as for a local step;
// - candidates are the top alternatives (at most 20 by OpenAI's limit), each byte string once,
//   the chosen token added when the server left it out; rank and entropy are over those;
// - the stages: with Inferscope's extension ("inferscope"), each candidate's probability after
//   every sampler stage, p_final, the survivors, the full-vocabulary rank and entropy, as the
//   server's sampler recorded them; without it every stage repeats the raw probability (the
//   server reports no stage: EngineController::remoteStages says so to the funnel).
// No replay logits are kept: a remote step cannot be replayed or branched from (see README).

#include <QByteArray>
#include <QHash>
#include <optional>
#include <string>
#include <vector>

#include "record/step_record.h"
#include "remote/openai_stream_parser.h"

namespace inferscope {

class RemoteVocabulary {
public:
    int32_t intern(const QByteArray& bytes);
    std::optional<std::string> bytesOf(int32_t id) const;
    int32_t size() const { return int32_t(bytes_.size()); }
    static constexpr int32_t kFirstId = 1 << 30;

private:
    QHash<QByteArray, int32_t> ids_;
    QHash<int32_t, QByteArray> bytes_;
};

StepRecord remoteStep(const RemoteToken& token, int32_t step, int32_t position, RemoteVocabulary& vocabulary);
// A chunk's text with no logprobs (a server that returns none): one step holding the text, its
// probability unknown (NaN, drawn untinted), no candidates.
StepRecord remoteTextStep(const QByteArray& text, int32_t step, int32_t position, RemoteVocabulary& vocabulary);

}  // namespace inferscope
