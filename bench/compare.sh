#!/bin/bash
# The figure of record: Inferscope against llama.cpp on the same GGUF files, interleaved round by
# round in one run, each run started only once the machine is quiet.
#
#   bench/compare.sh LLAMA_BENCH MODEL.gguf [MODEL.gguf ...]
#
# LLAMA_BENCH is a llama-bench binary built by hand outside this checkout (a CPU-only CMake build
# of ggerganov/llama.cpp; never vendored or built by the project). Per round and model, both tools
# run once (which one goes first alternates between rounds), 2 threads, F16 KV cache (both tools'
# default), prompt PP tokens and TG generated tokens. Prints, per model and test, both medians,
# min–max and the ratio Inferscope / llama.cpp, as a Markdown table; every sample goes to
# $OUT/compare-*.json.
#
# Environment: ROUNDS (4), PP (128), TG (32), THREADS (2), CLI (build/cli/inferscope-cli),
# OUT (a new temporary folder), INFERSCOPE_ARGS (extra `inferscope-cli bench` arguments, e.g.
# "--compute int8"), LLAMA_ARGS (extra llama-bench arguments), LLAMA_COMMIT (the llama.cpp commit
# to print when llama-bench reports "unknown", as a build from a source archive does), NEIGHBOUR
# (0; 1: every run shares the machine with one busy process, a shell loop on one core, started once
# the machine is quiet and stopped after the run: what a browser or a build next to us costs).
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: bench/compare.sh LLAMA_BENCH MODEL.gguf [MODEL.gguf ...]" >&2
    exit 1
fi
LLAMA_BENCH=$1; shift
ROUNDS=${ROUNDS:-4} PP=${PP:-128} TG=${TG:-32} THREADS=${THREADS:-2}
CLI=${CLI:-build/cli/inferscope-cli}
OUT=${OUT:-$(mktemp -d /tmp/inferscope-compare.XXXXXX)}
HERE=$(cd "$(dirname "$0")" && pwd)
[ -x "$LLAMA_BENCH" ] || { echo "compare.sh: $LLAMA_BENCH is not an executable llama-bench" >&2; exit 1; }
[ -x "$CLI" ] || { echo "compare.sh: $CLI not found (build first, or set CLI=)" >&2; exit 1; }
for m in "$@"; do [ -f "$m" ] || { echo "compare.sh: no model file $m" >&2; exit 1; }; done
mkdir -p "$OUT"

. "$HERE/wait_quiet.sh"

NEIGHBOUR=${NEIGHBOUR:-0}
neighbour_pid=
start_neighbour() {
    [ "$NEIGHBOUR" = 1 ] || return 0
    sh -c 'while :; do :; done' &
    neighbour_pid=$!
}
stop_neighbour() {
    [ -n "$neighbour_pid" ] || return 0
    kill "$neighbour_pid" 2>/dev/null || true
    wait "$neighbour_pid" 2>/dev/null || true
    neighbour_pid=
}
trap stop_neighbour EXIT

run_llama() {  # model round
    wait_quiet
    start_neighbour
    # shellcheck disable=SC2086
    "$LLAMA_BENCH" -m "$1" -t "$THREADS" -p "$PP" -n "$TG" -r 1 -o json ${LLAMA_ARGS:-} \
        > "$OUT/llama-$(basename "$1")-$2.json" 2> "$OUT/llama-$(basename "$1")-$2.log"
    stop_neighbour
}
run_ours() {  # model round
    wait_quiet
    start_neighbour
    # shellcheck disable=SC2086
    "$CLI" bench --model "$1" --threads "$THREADS" --prompt-tokens "$PP" --gen-tokens "$TG" --repeat 1 \
        --wait-quiet 0 --peak-seconds 0.05 --probe-mib 64 --json ${INFERSCOPE_ARGS:-} \
        > "$OUT/ours-$(basename "$1")-$2.json" 2> "$OUT/ours-$(basename "$1")-$2.log"
    stop_neighbour
}

echo "compare.sh: $ROUNDS rounds, pp$PP / tg$TG, $THREADS threads, busy neighbour $NEIGHBOUR, samples in $OUT" >&2
for r in $(seq 1 "$ROUNDS"); do
    for m in "$@"; do
        echo "round $r: $(basename "$m") ($(uptime | sed 's/.*load/load/'))" >&2
        if [ $((r % 2)) -eq 1 ]; then run_llama "$m" "$r"; run_ours "$m" "$r"
        else run_ours "$m" "$r"; run_llama "$m" "$r"; fi
    done
done
python3 "$HERE/compare_table.py" "$OUT" "$PP" "$TG" "$@"
