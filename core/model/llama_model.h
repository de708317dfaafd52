#pragma once
// A Llama-family model: hyperparameters and weights from a GGUF file, and the forward pass.
// One forward pass serves every supported architecture; the steps in [brackets] run only where
// the architecture's options (hp.arch, arch_options.h) say so.
//
// Forward pass over m tokens at positions p0 .. p0+m-1 (m = prompt length in prefill, 1 in decode):
//   x = token_embd[tokens]                  [× √n_embd]        [m, n_embd]
//   per layer:
//     q, k, v = rmsnorm(x) · Wq/Wk/Wvᵀ      [Wqkv fused] [+ biases]   [m, n_head·d], [m, n_head_kv·d] ×2
//     [per-head rmsnorm(q), rmsnorm(k)]
//     RoPE(q, k) (normal or NEOX pairs, the layer's table); cache[layer] ← k, v at p0 ..
//     a = attention(q, cache[layer, 0 .. p0+m-1]) · Woᵀ     causal GQA [sliding window] [score soft-cap]
//     x += a                                 [a = rmsnorm(a) first: post-attention norm]
//     f = (act(rmsnorm(x)·Wgateᵀ) ⊙ rmsnorm(x)·Wupᵀ) · Wdownᵀ   act = SiLU or GELU(tanh) [gate|up fused]
//     x += f                                 [f = rmsnorm(f) first: post-FFN norm]
//   logits = rmsnorm(x[m-1]) · Woutputᵀ      [final soft-cap]   [n_vocab] (last position only)
//
// decodeBatch runs this pass for B sequences of one token each, every one on its own context at its
// own position: the matrix multiplies over all B rows together, the rest per sequence.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backend/compute_device.h"
#include "backend/kernels.h"
#include "common/aligned_buffer.h"
#include "common/error.h"
#include "gguf/gguf_file.h"
#include "kv_cache/kv_cache.h"
#include "model/forward_probe.h"
#include "model/llama_hparams.h"

namespace inferscope {

// Precision of the matrix multiplies. Auto keeps the file's precision: BF16 tensors compute in
// BF16 (bf16 weights, f32 activations), F32 and F16 tensors in F32 from the weights as stored
// (mapped, F16 widened in registers), quantized blocks (Q4_K, Q8_0, ...) in place from the mapping
// (ComputeType::Blocks: decoded per block as they are multiplied). F32 converts everything to
// F32, BF16 to bf16; Int8 re-quantizes every matrix per output channel to s8 (see linear.h).
enum class ComputePrecision { Auto, F32, BF16, Int8 };
Result<ComputePrecision> parseComputePrecision(std::string_view text);  // "auto" | "f32" | "bf16" | "int8"

// Called during loading with the fraction done (0..1) and what is being prepared.
using LoadProgress = std::function<void(float fraction, std::string_view stage)>;

struct LayerWeights {
    const float* attnNorm = nullptr;     // [n_embd]
    Linear wq, wk, wv;                   // [n_head·d, n_embd], [n_head_kv·d, n_embd] ×2 (unless fused)
    Linear wqkv;                         // phi3: [(n_head + 2·n_head_kv)·d, n_embd], output rows Q | K | V
    const float* bq = nullptr;           // qwen2: [n_head·d]
    const float* bk = nullptr;           //        [n_head_kv·d]
    const float* bv = nullptr;           //        [n_head_kv·d]
    const float* qNorm = nullptr;        // qwen3, gemma3: [d], applied to each head
    const float* kNorm = nullptr;        //                [d]
    Linear wo;                           // [n_embd, n_head·d]
    const float* postAttnNorm = nullptr; // gemma: [n_embd]
    const float* ffnNorm = nullptr;      // [n_embd]
    Linear gate, up;                     // [n_ff, n_embd] ×2 (unless fused)
    Linear gateUp;                       // phi3: [2·n_ff, n_embd], output rows gate | up
    Linear down;                         // [n_embd, n_ff]
    const float* postFfnNorm = nullptr;  // gemma: [n_embd]
    int ropeTable = 0;                   // which of the context's RoPE tables (gemma3: local or global)
    AttentionOptions attention;          // sliding window, score soft-cap
};

// Per-session runtime state: the KV cache and the scratch buffers of the forward pass. A server
// keeps one per slot, all on the one LlamaModel (decodeBatch).
class LlamaContext {
public:
    KvCache& cache() { return cache_; }
    const KvCache& cache() const { return cache_; }
    int32_t maxBatch() const { return maxBatch_; }

private:
    friend class LlamaModel;
    KvCache cache_;
    int32_t maxBatch_ = 0;
    std::vector<AlignedBuffer<float>> ropeTables;  // per distinct (base, scale): [n_ctx][n_rot/2][cos, sin]
    AlignedBuffer<float> x, xn, q, k, v, att, tmp, gate, up;  // [maxBatch, ·] activations
    AlignedBuffer<float> fused;      // phi3: [maxBatch, max(Q + 2·KV, 2·n_ff)] a fused matrix's output
    AlignedBuffer<float> logits;     // [n_vocab]
    AlignedBuffer<float> scores;     // attentionScratchFloats(): per thread, a query group's scores
};

// One sequence of a batched decode step (LlamaModel::decodeBatch): its context, whose KV cache
// holds the sequence's history, and its next token at `position` (the positions before it cached).
struct DecodeSequence {
    LlamaContext* ctx = nullptr;
    int32_t token = 0;
    int32_t position = 0;
    CellOrigin origin = CellOrigin::Generated;
};

class LlamaModel {
public:
    static Result<std::unique_ptr<LlamaModel>> load(GgufFile file, ComputeDevice& device, ComputePrecision precision,
                                                    const LoadProgress& progress = {});

    const LlamaHParams& hparams() const { return hp_; }
    const GgufFile& file() const { return file_; }
    ComputeDevice& device() { return device_; }
    bool tiedOutput() const { return tiedOutput_; }
    // Bytes of weights one token's forward pass reads (all matrices + one embedding row + norms).
    uint64_t weightBytesPerToken() const { return weightBytesPerToken_; }
    // Bytes held by the weights in memory as computed (mapped or converted).
    uint64_t weightBytesResident() const { return weightBytesResident_; }
    uint64_t weightBytesConverted() const { return weightBytesConverted_; }
    // Matmul multiply-adds per token (2 FLOPs each), excluding attention over the cache.
    uint64_t matmulMacsPerToken() const { return matmulMacsPerToken_; }
    std::string precisionSummary() const;  // "F32" / "BF16" / "BF16 (converted from F16)"

    // Context with a cache of nCtx positions and room for maxBatch tokens per forward pass.
    Result<std::unique_ptr<LlamaContext>> createContext(int32_t nCtx, int32_t maxBatch, KvType kvType = KvType::F32) const;

    // Grows ctx's per-thread scratch (attention) to the device's current thread count: call after
    // ComputeDevice::setThreads raises it (Engine::setThreads does).
    Result<void> fitThreads(LlamaContext& ctx) const;

    // Runs one decode pass and one short batch through ctx and forgets them (the cache is left
    // empty, its counters reset): OpenMP's threads start and every code path is touched before the
    // first real prefill is timed. Call on the thread that will compute.
    void warmUp(LlamaContext& ctx);

    // Runs tokens (1 <= size <= ctx.maxBatch(), positions position0 .. fitting the cache) through
    // the model, writes their K/V into the cache (marked `origin`) and returns the last token's
    // logits [n_vocab] (valid until the next call).
    // probe (forward_probe.h): keeps the last token's residual after each layer and, if asked, its
    // attention weights; with probe->rerun the tokens' positions must already be cached and the
    // cache is neither written nor counted (K/V read from it). Null: one pointer test per layer.
    // everyRow: when given, the logits of every row, [m, n_vocab], are written there (teacher-forced
    // scoring in batches: the LM head then runs on all m rows); the return value is its last row.
    std::span<const float> forward(LlamaContext& ctx, std::span<const int32_t> tokens, int32_t position0,
                                   CellOrigin origin, ForwardProbe* probe = nullptr, float* everyRow = nullptr);

    // One decode step of B independent sequences (a server's slots, each with its own context):
    // every sequence's token runs at its own position against its own KV cache, and its logits
    // [n_vocab] are put in logits[i] (ctx's buffer: valid until that context's next pass). The
    // matrix multiplies take the B rows together, in groups of ComputeDevice::exactRows (8 for
    // F32/BF16/F16 and Int8, 4 for the block formats, 2 for K-quant matrices; 1 on a GPU), so each weight is read once per group instead of once per
    // sequence (decode is bandwidth-bound); embedding, norms, RoPE, the cache write, attention and
    // the activations run per sequence, on its own context, through the steps forward() runs.
    // Exactness (CPU, every kernel set): each sequence's logits and the K/V written into its cache
    // are bit for bit those of forward(ctx, {token}, position, origin), whatever the other
    // sequences hold, their positions, B, and the order of the batch (test_decode_batch); the
    // GEMV computes each row of a group on its own (gemvExactRows, gemv.h), and everything else is
    // the same call on the same context as that one-token forward().
    // The contexts must be distinct and made by this model, position + 1 <= capacity, 1 <= B. The
    // staging rows are allocated at the first call (OutOfMemory otherwise; nothing is run then).
    Result<void> decodeBatch(std::span<const DecodeSequence> batch, std::span<std::span<const float>> logits);
    // The most rows any of the model's matrices takes in one decode-kernel call with each row
    // exactly its one-row result (ComputeDevice::exactRows over every matrix and the LM head): a
    // forward() of up to this many tokens computes each row as a one-token decode step does
    // (speculative verification's pass size).
    int exactDecodeRows() const;

    // The model's head on residual rows: logits[rows, n_vocab] = LM head(final RMSNorm(x[rows, n_embd]))
    // [final soft-cap]. forward() ends with it for its last row; the logit lens runs it on every
    // layer's residual. normed: [rows, n_embd] scratch.
    void readOut(const float* x, int64_t rows, float* normed, float* logits);

private:
    LlamaModel(GgufFile file, ComputeDevice& device) : file_(std::move(file)), device_(device) {}
    Result<void> loadWeights(ComputePrecision precision, const LoadProgress& progress);
    size_t scratchFloatsFor(const LlamaContext& ctx) const;

    // forward()'s steps on ctx's first m rows (llama_model_steps.cpp). decodeBatch runs them per
    // sequence (m = 1) around its batched multiplies: one code path for both passes.
    enum class Stage { Qkv, Output, GateUp, Down, Head };  // the matrix multiplies, in pass order
    struct StageIo {                  // one stage's matrices, the ctx rows they read and write
        const Linear* w[3] = {};
        float* y[3] = {};             // y[j]: [m, w[j]->rows()]
        int n = 0;
        const float* x = nullptr;     // [m, w[0]->cols()]
    };
    StageIo stageIo(LlamaContext& ctx, const LayerWeights* L, Stage stage) const;
    void multiply(LlamaContext& ctx, const LayerWeights& L, Stage stage, int64_t m);
    void embed(LlamaContext& ctx, std::span<const int32_t> tokens) const;
    // [split fused QKV] [biases] [q/k norms], RoPE, K/V into the cache (storeKv), attention → att.
    void attentionBlock(LlamaContext& ctx, int32_t l, int64_t m, int32_t position0, bool storeKv, ForwardProbe* probe) const;
    void afterAttention(LlamaContext& ctx, const LayerWeights& L, int64_t m) const;  // [post-norm], residual, ffn norm → xn
    void gateActivation(LlamaContext& ctx, int64_t m) const;                       // act(gate) ⊙ up → gate
    void afterFfn(LlamaContext& ctx, const LayerWeights& L, int64_t m) const;        // [post-norm], residual
    // decodeBatch's multiply of one stage: each context's row gathered, in groups of exactRows.
    void multiplyBatch(std::span<const DecodeSequence> batch, const LayerWeights* L, Stage stage);

    GgufFile file_;
    ComputeDevice& device_;
    LlamaHParams hp_;
    const GgufTensorInfo* tokenEmbd_ = nullptr;  // looked up row by row, in the file's type
    std::vector<LayerWeights> layers_;
    const float* outputNorm_ = nullptr;
    Linear output_;
    bool tiedOutput_ = false;
    std::vector<AlignedBuffer<float>> ownedNorms_;  // norms that needed conversion to f32
    AlignedBuffer<float> ropeFreqFactors_;          // rope_freqs.weight, when present
    std::vector<std::pair<double, double>> ropeTableSpecs_;  // (base, scale) of each RoPE table
    uint64_t weightBytesPerToken_ = 0;
    uint64_t weightBytesResident_ = 0;
    uint64_t weightBytesConverted_ = 0;
    uint64_t matmulMacsPerToken_ = 0;
    std::map<std::string, int> precisionCounts_;
    AlignedBuffer<float> batchX_, batchY_;  // decodeBatch: a group's input rows, its output rows
};

}  // namespace inferscope
