#!/bin/bash
# Compare mode's cost against plain prefill (issue 30: "a comparison … under a prefill's time"):
# `inferscope-cli compare` has A write an answer of TG tokens, then both models read prompt + answer
# teacher-forced (compare_ms: A's pass and B's, in lockstep batches); `inferscope-cli bench` then
# times a plain prefill of the same number of tokens on each model. The ratio
# (prefill A + prefill B) / compare is the comparison's speed as a fraction of prefill's (1 = as fast).
#
#   bench/compare_pass.sh A.gguf B.gguf
#
# Environment: ROUNDS (3), TG (300), THREADS (2), CLI (build/cli/inferscope-cli), OUT (a new folder).
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: bench/compare_pass.sh A.gguf B.gguf" >&2; exit 1; }
A=$1 B=$2
ROUNDS=${ROUNDS:-3} TG=${TG:-300} THREADS=${THREADS:-2}
CLI=${CLI:-build/cli/inferscope-cli}
OUT=${OUT:-$(mktemp -d /tmp/inferscope-compare-pass.XXXXXX)}
HERE=$(cd "$(dirname "$0")" && pwd)
PROMPT="Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends."
mkdir -p "$OUT"
. "$HERE/wait_quiet.sh"
common=(--threads "$THREADS" --kv f16 --no-mmap)
for r in $(seq 1 "$ROUNDS"); do
    wait_quiet
    "$CLI" compare --model "$A" --model-b "$B" --prompt "$PROMPT" --max-tokens "$TG" --temperature 0 --ctx 2048 "${common[@]}" --json \
        | tail -n 1 > "$OUT/compare-$r.json"
    n=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['prompt_tokens'] + d['tokens'])" "$OUT/compare-$r.json")
    for m in A B; do
        wait_quiet
        "$CLI" bench --model "${!m}" --prompt-tokens "$n" --gen-tokens 1 --repeat 1 --wait-quiet 0 --peak-seconds 0.05 --probe-mib 64 \
            "${common[@]}" --json > "$OUT/prefill-$m-$r.json"
    done
done
python3 - "$OUT" "$ROUNDS" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
rows = []
for r in range(1, rounds + 1):
    c = json.load(open(f"{out}/compare-{r}.json"))
    pre = []
    for m in "AB":
        b = json.load(open(f"{out}/prefill-{m}-{r}.json"))
        t = b["tests"][0]
        pre.append(t["time_to_first_token_ms"]["median"])
    rows.append((c["prompt_tokens"] + c["tokens"], c["compare_ms"], pre[0], pre[1], (pre[0] + pre[1]) / c["compare_ms"]))
for n, cm, pa, pb, ratio in rows:
    print(f"{n} tokens: compare {cm:.0f} ms | prefill A {pa:.0f} ms + B {pb:.0f} ms | prefill / compare = {ratio:.2f}")
print(f"median ratio {statistics.median(r[4] for r in rows):.2f} (min {min(r[4] for r in rows):.2f}, max {max(r[4] for r in rows):.2f}); samples in {out}")
PY
