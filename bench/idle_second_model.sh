#!/usr/bin/env bash
# The app's decode rate with a comparison's second model loaded and idle, against the app with one
# model (issue 30: "within 3%"). Each run starts the app under Xvfb with --screenshot: it answers
# the prompt greedily, then (variant "idle-b") compares the answer with MODEL_B (which loads B
# beside A on the worker and leaves it loaded) or (variant "alone") does nothing, then regenerates
# the answer once (--answer-again). The second answer's decode rate is the figure: the same model,
# prompt and length in both variants, the KV cache holding the same prefix. As this host's speed
# drifts by ±10% over minutes, each run's second answer is also divided by its own first (B not
# yet loaded in either variant): idle B costs what its second/first ratio loses against the one
# model's. Variants alternate within each round; medians and min–max per variant.
#   bench/idle_second_model.sh MODEL_A MODEL_B [rounds=6] [tokens=128]
# Env: OUT (results folder, default bench/results/idle-second-model-DATE). Run on a quiet machine.
set -euo pipefail
model_a=${1:?usage: bench/idle_second_model.sh MODEL_A MODEL_B [rounds] [tokens]}
model_b=${2:?usage: bench/idle_second_model.sh MODEL_A MODEL_B [rounds] [tokens]}
rounds=${3:-6}
tokens=${4:-128}
root="$(cd "$(dirname "$0")/.." && pwd)"
app="$root/build/app/inferscope"
out=${OUT:-"$root/bench/results/idle-second-model-$(date -u +%Y-%m-%d)"}
mkdir -p "$out"
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
chmod 700 "$XDG_RUNTIME_DIR"
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT

samples="$out/samples.txt"
: > "$samples"
for r in $(seq 1 "$rounds"); do
  for v in idle-b alone; do
    extra=()
    [ "$v" = idle-b ] && extra=(--compare "$model_b")
    rm -rf "$home/data"
    log=$(HOME="$home" xvfb-run -a -s "-screen 0 1400x900x24" "$app" --model "$model_a" --data-dir "$home/data" \
            --screenshot "$home/s.png" --prompt "Once upon a time" --max-tokens "$tokens" --panel probabilities \
            --answer-again "${extra[@]}" 2>&1)
    # The first answer's line, then the second's.
    rates=$(printf '%s\n' "$log" | sed -n 's/.*: answer of .*decode \([0-9.]*\) tok\/s.*/\1/p')
    first=$(printf '%s\n' "$rates" | head -1)
    rate=$(printf '%s\n' "$rates" | tail -1)
    if [ -z "$rate" ] || ! printf '%s\n' "$log" | grep -q 'answering again'; then
      printf '%s\n' "$log" >&2
      echo "round $r $v: no second answer" >&2
      exit 1
    fi
    [ "$v" = idle-b ] && ! printf '%s\n' "$log" | grep -q 'compared with' && { echo "round $r: no comparison" >&2; exit 1; }
    echo "$v $first $rate" >> "$samples"
    echo "round $r $v: first $first, second $rate tok/s" >&2
  done
done

commit=$(git -C "$root" rev-parse --short HEAD)
flags=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|avx512f|avx512_bf16|avx512_vnni|amx_tile)$' | tr '\n' ' ')
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
python3 - "$samples" "$out" "$commit" "$cpu" "$flags" "$model_a" "$model_b" "$tokens" <<'PY'
import json, statistics, sys
samples, out, commit, cpu, flags, a, b, tokens = sys.argv[1:]
runs, firsts, within = {}, {}, {}
for line in open(samples):
    v, first, rate = line.split()
    runs.setdefault(v, []).append(float(rate))
    firsts.setdefault(v, []).append(float(first))
    within.setdefault(v, []).append(float(rate) / float(first))
med = {v: statistics.median(r) for v, r in runs.items()}
wmed = {v: statistics.median(r) for v, r in within.items()}
ratio = med["idle-b"] / med["alone"]
wratio = wmed["idle-b"] / wmed["alone"]
doc = {"commit": commit, "cpu": cpu, "flags": flags.split(), "model_a": a, "model_b": b, "tokens": int(tokens),
       "decode_tok_s_second": runs, "decode_tok_s_first": firsts, "second_over_first": within, "median": med,
       "median_second_over_first": wmed, "idle_b_over_alone": ratio, "idle_b_over_alone_within_runs": wratio}
json.dump(doc, open(f"{out}/idle-second-model.json", "w"), indent=1)
with open(f"{out}/table.md", "w") as t:
    t.write(f"Inferscope {commit}, {cpu} ({flags.strip()}); A {a.split('/')[-1]}, B {b.split('/')[-1]}, {tokens} tokens\n\n")
    t.write("| variant | second answer tok/s median (min–max) | second / first, median (min–max) | runs |\n|---|---|---|---|\n")
    for v in ("alone", "idle-b"):
        r, w = runs[v], within[v]
        t.write(f"| {v} | {med[v]:.1f} ({min(r):.1f}–{max(r):.1f}) | {wmed[v]:.3f} ({min(w):.3f}–{max(w):.3f}) | {len(r)} |\n")
    t.write(f"\nidle B / alone: {ratio:.3f} (second answers), {wratio:.3f} (each run's second over its first)\n")
print(open(f"{out}/table.md").read())
PY
rm -f "$samples"
