#!/bin/bash
# Speculative decoding, Inferscope against llama.cpp on the same target and draft GGUFs, interleaved
# round by round in one run, each run started only once the machine is quiet.
#
#   bench/speculative_compare.sh LLAMA_BIN_DIR TARGET.gguf DRAFT.gguf|ngram [TARGET DRAFT|ngram ...]
#
# LLAMA_BIN_DIR holds llama-cli, llama-speculative and llama-lookup, built by hand outside this
# checkout (a CPU-only CMake build of ggerganov/llama.cpp; never vendored or built by the project).
# For each pair and round:
#   - Inferscope: `inferscope-cli bench --draft DRAFT | --draft-ngram 4` generates the same greedy
#     answer plainly and speculatively in one process and reports both decode tok/s (and checks the
#     two answers are the same tokens);
#   - llama.cpp: `llama-cli` (plain; its "eval time" tok/s) and `llama-speculative -md DRAFT`, or
#     `llama-lookup` for prompt lookup (n-grams up to 4 tokens, as ours), their "decoded … speed".
# With P_MIN set, both draft adaptively: a draft model's round stops at its first token whose
# probability under the drafter is below P_MIN (ours: --draft-p-min; llama.cpp: llama-speculative-simple
# --draft-p-min, the common_speculative code its server uses), so an unsure drafter costs little.
# Which tool goes first alternates between rounds. Greedy, TG tokens, draft length K, 2 threads,
# F16 KV cache (both tools' default here), weights copied into private memory (--no-mmap: on some
# virtual machines page-cache memory reads several times slower, erratically, for both tools).
# Prints a Markdown table of medians (min–max); every sample goes to $OUT.
#
# Environment: ROUNDS (3), TG (64), K (3), P_MIN (unset: fixed drafts), THREADS (2), PROMPT (the text; default below), CLI
# (build/cli/inferscope-cli), OUT (a new temporary folder), LLAMA_COMMIT (printed in the table).
set -euo pipefail
if [ $# -lt 3 ] || [ $((($# - 1) % 2)) -ne 0 ]; then
    echo "usage: bench/speculative_compare.sh LLAMA_BIN_DIR TARGET.gguf DRAFT.gguf|ngram [TARGET DRAFT|ngram ...]" >&2
    exit 1
fi
BIN=$1; shift
ROUNDS=${ROUNDS:-3} TG=${TG:-64} K=${K:-3} THREADS=${THREADS:-2}
PROMPT=${PROMPT:-"The cat sat on the mat. The dog sat on the log. The cat sat on the mat. The dog sat on the log. The cat sat on the mat. The dog sat on the log. The cat sat on the"}
CLI=${CLI:-build/cli/inferscope-cli}
OUT=${OUT:-$(mktemp -d /tmp/inferscope-speculative.XXXXXX)}
HERE=$(cd "$(dirname "$0")" && pwd)
SPECULATIVE=llama-speculative
[ -n "${P_MIN:-}" ] && SPECULATIVE=llama-speculative-simple
for tool in llama-cli "$SPECULATIVE" llama-lookup; do
    [ -x "$BIN/$tool" ] || { echo "speculative_compare.sh: no executable $BIN/$tool" >&2; exit 1; }
done
[ -x "$CLI" ] || { echo "speculative_compare.sh: $CLI not found (build first, or set CLI=)" >&2; exit 1; }
pairs=("$@")
for ((i = 0; i < ${#pairs[@]}; i += 2)); do
    [ -f "${pairs[i]}" ] || { echo "speculative_compare.sh: no model file ${pairs[i]}" >&2; exit 1; }
    [ "${pairs[i+1]}" = ngram ] || [ -f "${pairs[i+1]}" ] || { echo "speculative_compare.sh: no draft file ${pairs[i+1]}" >&2; exit 1; }
done
mkdir -p "$OUT"
. "$HERE/wait_quiet.sh"

common=(-t "$THREADS" --temp 0 -n "$TG" -c 2048 --no-mmap --ignore-eos -p "$PROMPT")
run_llama() {  # index round
    local target=${pairs[$1]} draft=${pairs[$1+1]} tag="$1-$2"
    wait_quiet
    "$BIN/llama-cli" -no-cnv -m "$target" "${common[@]}" < /dev/null > "$OUT/llama-plain-$tag.out" 2> "$OUT/llama-plain-$tag.log" || true
    wait_quiet
    if [ "$draft" = ngram ]; then
        "$BIN/llama-lookup" -m "$target" --draft-max "$K" "${common[@]}" > "$OUT/llama-spec-$tag.out" 2> "$OUT/llama-spec-$tag.log" || true
    else
        # shellcheck disable=SC2046
        "$BIN/$SPECULATIVE" -m "$target" -md "$draft" --draft-max "$K" --draft-min 0 -td "$THREADS" \
            $([ -n "${P_MIN:-}" ] && echo --draft-p-min "$P_MIN") "${common[@]}" \
            > "$OUT/llama-spec-$tag.out" 2> "$OUT/llama-spec-$tag.log" || true
    fi
}
run_ours() {  # index round
    local target=${pairs[$1]} draft=${pairs[$1+1]} tag="$1-$2" how
    if [ "$draft" = ngram ]; then how=(--draft-ngram 4); else how=(--draft "$draft" ${P_MIN:+--draft-p-min "$P_MIN"}); fi
    wait_quiet
    "$CLI" bench --model "$target" "${how[@]}" --draft-max "$K" --gen-tokens "$TG" --repeat 1 --threads "$THREADS" --no-mmap \
        --wait-quiet 0 --prompt "$PROMPT" --json > "$OUT/ours-$tag.json" 2> "$OUT/ours-$tag.log" || true
}

echo "speculative_compare.sh: $ROUNDS rounds, tg$TG, k $K${P_MIN:+, p-min $P_MIN}, $THREADS threads, samples in $OUT" >&2
for r in $(seq 1 "$ROUNDS"); do
    for ((i = 0; i < ${#pairs[@]}; i += 2)); do
        echo "round $r: $(basename "${pairs[i]}") + ${pairs[i+1]##*/} ($(uptime | sed 's/.*load/load/'))" >&2
        if [ $((r % 2)) -eq 1 ]; then run_llama "$i" "$r"; run_ours "$i" "$r"
        else run_ours "$i" "$r"; run_llama "$i" "$r"; fi
    done
done
LLAMA_COMMIT=${LLAMA_COMMIT:-unknown} P_MIN=${P_MIN:-} python3 "$HERE/speculative_table.py" "$OUT" "$@"
