#!/bin/bash
# Serving many clients at once: `inferscope-cli serve --parallel C` against llama.cpp's
# `llama-server -np C` (continuous batching, on by default) on the same GGUF, interleaved round by
# round in one run, each round started only once the machine is quiet.
#
#   bench/serve_compare.sh LLAMA_BIN_DIR MODEL.gguf [MODEL ...]
#
# LLAMA_BIN_DIR holds llama-server, built by hand outside this checkout (a CPU-only CMake build of
# ggerganov/llama.cpp; never vendored or built by the project). For each model and each client
# count C, both servers are started with C slots and a context of C × CTX (both split it evenly
# among the slots), THREADS threads, F16 KV cache, weights in private memory (--no-mmap). A warm-up
# round for each is discarded; then each round runs C clients at once against one server and then
# the other (which goes first alternates), each client streaming one completion of TG tokens
# (bench/serve_load.py: ignore_eos, greedy, a different prompt per client). Reported per round:
# aggregate tokens/s (all tokens over the round's wall time), time to first token, time per output
# token p50/p95. Prints a Markdown table of medians (min–max); every sample goes to $OUT.
#
# Environment: ROUNDS (3), TG (128), CLIENTS ("1 4 8"), THREADS (2), CTX (512 a slot), CLI
# (build/cli/inferscope-cli), OUT (a new temporary folder), LLAMA_COMMIT (printed in the table).
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: bench/serve_compare.sh LLAMA_BIN_DIR MODEL.gguf [MODEL ...]" >&2
    exit 1
fi
BIN=$1; shift
ROUNDS=${ROUNDS:-3} TG=${TG:-128} CLIENTS=${CLIENTS:-"1 4 8"} THREADS=${THREADS:-2} CTX=${CTX:-512}
CLI=${CLI:-build/cli/inferscope-cli}
OUT=${OUT:-$(mktemp -d /tmp/inferscope-serve.XXXXXX)}
HERE=$(cd "$(dirname "$0")" && pwd)
[ -x "$BIN/llama-server" ] || { echo "serve_compare.sh: no executable $BIN/llama-server" >&2; exit 1; }
[ -x "$CLI" ] || { echo "serve_compare.sh: $CLI not found (build first, or set CLI=)" >&2; exit 1; }
for m in "$@"; do [ -f "$m" ] || { echo "serve_compare.sh: no model file $m" >&2; exit 1; }; done
mkdir -p "$OUT"
. "$HERE/wait_quiet.sh"
OURS_PORT=18431 LLAMA_PORT=18432
pids=()
stop_servers() { for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; wait "$p" 2> /dev/null || true; done; pids=(); }
trap stop_servers EXIT
wait_health() {  # port: until GET /health answers 200, 10 minutes at most
    for _ in $(seq 1200); do
        [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$1/health")" = 200 ] && return 0
        sleep 0.5
    done
    echo "serve_compare.sh: the server on port $1 never became ready" >&2
    return 1
}
load() {  # tool port model clients round
    python3 "$HERE/serve_load.py" --port "$2" --clients "$4" --tokens "$TG" --seed "$5" --tag "$1" |
        python3 -c "import json,sys; d=json.load(sys.stdin); d.update(tool='$1', model='$(basename "$3")', round=$5); print(json.dumps(d))"
}

for model in "$@"; do
    for c in $CLIENTS; do
        tag=$(basename "$model" .gguf)-np$c
        "$CLI" serve --model "$model" --port $OURS_PORT --parallel "$c" --ctx $((c * CTX)) --threads "$THREADS" --kv f16 --no-mmap \
            --queue 64 --log-file /dev/null > "$OUT/ours-$tag.log" 2>&1 &
        pids+=($!)
        "$BIN/llama-server" -m "$model" --host 127.0.0.1 --port $LLAMA_PORT -np "$c" -c $((c * CTX)) -t "$THREADS" --no-mmap \
            > "$OUT/llama-$tag.log" 2>&1 &
        pids+=($!)
        wait_health $OURS_PORT
        wait_health $LLAMA_PORT
        load ours $OURS_PORT "$model" "$c" 0 > /dev/null      # warm-up, discarded
        load llama.cpp $LLAMA_PORT "$model" "$c" 0 > /dev/null
        for r in $(seq "$ROUNDS"); do
            if [ $((r % 2)) -eq 1 ]; then order="ours llama.cpp"; else order="llama.cpp ours"; fi
            for tool in $order; do
                port=$OURS_PORT; [ "$tool" = llama.cpp ] && port=$LLAMA_PORT
                wait_quiet
                load "$tool" "$port" "$model" "$c" "$r" | tee -a "$OUT/samples.jsonl"
            done
        done
        stop_servers
    done
done
python3 "$HERE/serve_table.py" "$OUT/samples.jsonl" "$(git -C "$HERE" rev-parse --short HEAD)" "${LLAMA_COMMIT:-?}"
echo "samples: $OUT"
