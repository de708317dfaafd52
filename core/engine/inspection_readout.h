#pragma once
// The engine's side of inspecting a position: what a ForwardProbe kept, turned into a
// PositionInspection (inspection.cpp). Used by Engine::inspectPosition and by generate() for the
// steps GenerateRequest::inspect asks for.

#include <cstdint>

#include "common/error.h"
#include "engine/inspection.h"
#include "model/forward_probe.h"
#include "model/llama_model.h"

namespace inferscope {

// Error{InvalidArgument} for a lens top-k outside [1, kMaxTopN].
Result<void> checkInspectOptions(const InspectOptions& options);

// The lens rows (every layer's residual through the model's final norm and LM head, ranked with
// the sampler's raw softmax; `options.lensTopK` each) and the attention weights the probe kept.
// `token` is the probe's input token at probe.position.
Result<PositionInspection> readInspection(LlamaModel& model, const ForwardProbe& probe, int32_t token, const InspectOptions& options);

}  // namespace inferscope
