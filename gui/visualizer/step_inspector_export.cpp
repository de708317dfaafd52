// StepInspector, the export: the selected answer's per-token records written to a file, as JSON
// in the one step-record schema or as a flat CSV table for spreadsheets.
#include "visualizer/step_inspector.h"

#include <QSaveFile>

#include "chat/chat_controller.h"
#include "chat/draft_summary.h"
#include "record/step_record_json.h"

namespace inferscope {
namespace {

bool wasDrafted(const DraftRecord& d) { return d.fate == DraftRecord::Fate::Accepted || d.fate == DraftRecord::Fate::Corrected; }

}  // namespace

bool StepInspector::exportRecords(const QUrl& file, const QString& format) {
    exportError_.clear();
    const auto* steps = answerSteps();
    if (!steps || steps->empty()) {
        exportError_ = tr("no answer is selected");
        return false;
    }
    const QString path = file.isLocalFile() ? file.toLocalFile() : file.toString();
    QSaveFile out(path);
    if (!out.open(QIODevice::WriteOnly)) {
        exportError_ = out.errorString();
        return false;
    }
    if (format == QLatin1String("csv")) {
        auto csv = [](QString s) { return QLatin1Char('"') + s.replace(QLatin1Char('"'), QStringLiteral("\"\"")) + QLatin1Char('"'); };
        QString text = QStringLiteral("step,position,id,token,p,p_final,logit,rank,entropy_bits,forward_ms,sample_ms");
        for (int c = 1; c <= 5; ++c) text += QStringLiteral(",top%1_id,top%1_token,top%1_p").arg(c);
        // Speculative decoding (empty without): the token's fate, and the drafted token's q and p.
        text += QStringLiteral(",draft_fate,drafted,accepted,corrected,draft_id,draft_token,q,p_target,accept_probability");
        text += QLatin1Char('\n');
        for (const StepRecord& r : *steps) {
            const SampleRecord& s = r.sample;
            text += QStringLiteral("%1,%2,%3,%4,%5,%6,%7,%8,%9").arg(r.step).arg(r.position).arg(s.id).arg(csv(tokenText(s.id)))
                        .arg(double(s.pRaw), 0, 'g', 7).arg(double(s.pFinal), 0, 'g', 7).arg(double(s.logit), 0, 'g', 7)
                        .arg(s.rank).arg(double(s.entropyBits), 0, 'g', 6);
            text += QStringLiteral(",%1,%2").arg(double(r.forwardUs) / 1000.0, 0, 'f', 3).arg(double(r.sampleUs) / 1000.0, 0, 'f', 3);
            for (size_t c = 0; c < 5; ++c) {
                if (c < s.top.size())
                    text += QStringLiteral(",%1,%2,%3").arg(s.top[c].id).arg(csv(tokenText(s.top[c].id))).arg(double(s.top[c].p[0]), 0, 'g', 7);
                else
                    text += QStringLiteral(",,,");
            }
            if (const DraftRecord* d = r.draft.get()) {
                const bool drafted = wasDrafted(*d);
                text += QStringLiteral(",%1,%2,%3,%4").arg(QLatin1String(draftFateName(d->fate))).arg(int(drafted))
                            .arg(int(d->fate == DraftRecord::Fate::Accepted)).arg(int(d->fate == DraftRecord::Fate::Corrected));
                if (drafted)
                    text += QStringLiteral(",%1,%2,%3,%4,%5").arg(d->draftedId).arg(csv(tokenText(d->draftedId)))
                                .arg(double(d->q), 0, 'g', 7).arg(double(d->p), 0, 'g', 7).arg(double(d->acceptProbability), 0, 'g', 7);
                else
                    text += QStringLiteral(",,,,,");
            } else {
                text += QStringLiteral(",,,,,,,,,");
            }
            text += QLatin1Char('\n');
        }
        out.write(text.toUtf8());
    } else {
        // The one schema of step records (core/record/step_record_json.h, the CLI's --json and the
        // conversation export's "token_records");
        // the answer's origin names the model and every candidate's piece.
        const AnswerOrigin& origin = answerOrigin();
        const StepPieceLookup pieceOf = [&origin](int32_t id) -> std::optional<std::string> {
            const TokenText* t = origin.text(id);
            return t ? std::optional(t->bytes) : std::nullopt;
        };
        auto array = nlohmann::ordered_json::array();
        for (const StepRecord& r : *steps) {
            auto step = stepRecordJson(r, pieceOf);
            if (r.draft) step["speculative"] = draftRecordJson(*r.draft, pieceOf);
            array.push_back(std::move(step));
        }
        const nlohmann::ordered_json document{{"model", origin.modelName},
                                              {"backend", std::string(answerBackendName(origin.backend))},
                                              {"timed_by", std::string(origin.timedBy())},
                                              {"steps", std::move(array)}};
        out.write(QByteArray::fromStdString(document.dump(1, ' ', false, nlohmann::ordered_json::error_handler_t::replace)));
        out.write("\n");
    }
    if (!out.commit()) {
        exportError_ = out.errorString();
        return false;
    }
    return true;
}

}  // namespace inferscope
