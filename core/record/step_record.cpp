#include "record/step_record.h"

namespace inferscope {

std::string_view finishReasonName(FinishReason reason) {
    switch (reason) {
        case FinishReason::EndOfGeneration: return "eos";
        case FinishReason::StopString: return "stop";
        case FinishReason::MaxTokens: return "length";
        case FinishReason::ContextFull: return "context_full";
        case FinishReason::Cancelled: return "cancelled";
    }
    return "?";
}


}  // namespace inferscope
