#pragma once
// How each supported architecture (`general.architecture`) differs from the plain Llama forward
// pass, as named switches the one forward pass reads (llama_model.cpp). Filled once at load from
// the architecture's name; the numbers that go with the switches (soft-cap values, window size,
// RoPE bases) are metadata and live in LlamaHParams.
//
// Sources (llama.cpp b4747 and later; ../shared/reference/arch/README.md has the details):
//   llama   Llama 1/2/3.x, Mistral: the plain pass; Llama 3 differs only in data (rope_freqs, base)
//   qwen2   q/k/v biases, NEOX RoPE
//   qwen3   per-head RMS q/k norm, NEOX RoPE, head_dim from key_length
//   gemma2  embedding × √n_embd, post-attention/post-FFN norms, GELU(tanh) gate, attention and final
//           logit soft-caps, sliding window on even layers, NEOX RoPE
//   gemma3  gemma2 without soft-caps, with q/k norm; local (sliding) layers il % 6 < 5 with their own
//           RoPE base 10000 and no scaling; global layers use rope.freq_base and the file's scaling
//   phi3    fused QKV and gate|up matrices, NEOX RoPE, sliding window on every layer

#include <cstdint>
#include <string_view>

#include "common/error.h"

namespace inferscope {

// RoPE pairing within a head: Normal rotates (2i, 2i+1), Neox rotates (i, i + n_rot/2).
enum class RopeMode : uint8_t { Normal, Neox };
// The gated FFN's activation: down(act(gate·x) ⊙ up·x).
enum class FfnActivation : uint8_t { Silu, GeluTanh };
// Which layers attend through the sliding window (when the file gives one).
enum class SlidingPattern : uint8_t {
    None,       // every layer global
    All,        // every layer local (phi3)
    EvenLayers, // il % 2 == 0 local (gemma2)
    FiveToOne,  // il % 6 < 5 local (gemma3)
};

struct ArchOptions {
    RopeMode rope = RopeMode::Normal;
    FfnActivation ffnActivation = FfnActivation::Silu;
    SlidingPattern slidingPattern = SlidingPattern::None;
    bool qkvBias = false;         // blk.N.attn_{q,k,v}.bias added after the projections
    bool qkNorm = false;          // blk.N.attn_{q,k}_norm [head_dim]: RMSNorm per head before RoPE
    bool embedScale = false;      // x = token_embd[id] × √n_embd
    bool postNorms = false;       // blk.N.post_attention_norm / post_ffw_norm on each block's output
    bool fusedQkv = false;        // blk.N.attn_qkv: rows Q | K | V in one matrix
    bool fusedGateUp = false;     // blk.N.ffn_up: rows gate | up in one matrix, no ffn_gate
    bool softCapKeys = false;     // {arch}.attn_logit_softcapping / final_logit_softcapping are read
    bool localRopeBase10k = false; // sliding layers use RoPE base 10000 without scaling (gemma3)

    // True when layer il attends through the sliding window.
    bool isSlidingLayer(int32_t il) const {
        switch (slidingPattern) {
            case SlidingPattern::None: return false;
            case SlidingPattern::All: return true;
            case SlidingPattern::EvenLayers: return il % 2 == 0;
            case SlidingPattern::FiveToOne: return il % 6 < 5;
        }
        return false;
    }
};

// The options of a supported architecture; any other name is refused (ErrorKind::Unsupported)
// with a message naming it and the supported ones.
Result<ArchOptions> archOptionsFor(std::string_view architecture);

// "llama, qwen2, qwen3, gemma2, gemma3 and phi3": for messages and `info`.
std::string_view supportedArchitectures();

}  // namespace inferscope
