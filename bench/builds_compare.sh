#!/bin/bash
# Two builds of inferscope-cli on the same GGUF files, interleaved round by round on a quiet
# machine (issue 15: the package built by scripts/package.sh against a -DINFERSCOPE_NATIVE=ON
# build; any two builds of the CLI):
#
#   bench/builds_compare.sh CLI_A CLI_B MODEL.gguf [MODEL.gguf ...]
#
# Per round and model each build runs `bench` once (which goes first alternates), pp$PP / tg$TG,
# $THREADS threads; prints per model and test both medians, min–max and B / A. Environment: ROUNDS
# (3), PP (128), TG (32), THREADS (2), OUT (a new temporary folder for every sample).
ROUNDS=${ROUNDS:-3} PP=${PP:-128} TG=${TG:-32} THREADS=${THREADS:-2}
OUT=${OUT:-$(mktemp -d /tmp/inferscope-builds.XXXXXX)}
HERE=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 3 ] || { echo "usage: $0 CLI_A CLI_B MODEL.gguf [MODEL.gguf ...]" >&2; exit 2; }
A=$1 B=$2
shift 2
for c in "$A" "$B"; do [ -x "$c" ] || { echo "builds_compare.sh: $c is not an executable" >&2; exit 1; }; done
for m in "$@"; do [ -f "$m" ] || { echo "builds_compare.sh: no model file $m" >&2; exit 1; }; done
mkdir -p "$OUT"
. "$HERE/wait_quiet.sh"

run() {  # cli tag model round
    wait_quiet
    "$1" bench --model "$3" --threads "$THREADS" --prompt-tokens "$PP" --gen-tokens "$TG" --repeat 1 \
        --wait-quiet 0 --peak-seconds 0.05 --probe-mib 64 --json \
        > "$OUT/$2-$(basename "$3")-$4.json" 2> "$OUT/$2-$(basename "$3")-$4.log"
}

echo "builds_compare.sh: A=$A B=$B, $ROUNDS rounds, pp$PP / tg$TG, samples in $OUT" >&2
for r in $(seq 1 "$ROUNDS"); do
    for m in "$@"; do
        echo "round $r: $(basename "$m") ($(uptime | sed 's/.*load/load/'))" >&2
        if [ $((r % 2)) -eq 1 ]; then run "$A" a "$m" "$r"; run "$B" b "$m" "$r"
        else run "$B" b "$m" "$r"; run "$A" a "$m" "$r"; fi
    done
done
python3 - "$OUT" "$@" <<'PY'
import glob, json, os, statistics, sys
out, models = sys.argv[1], sys.argv[2:]
print("| model | test | A tok/s | B tok/s | B / A |")
print("|---|---|---|---|---|")
for m in models:
    name = os.path.basename(m)
    per = {}
    for tag in ("a", "b"):
        for f in sorted(glob.glob(f"{out}/{tag}-{name}-*.json")):
            try:
                d = json.load(open(f))
            except (OSError, ValueError):
                continue
            for t in d.get("tests", []):
                per.setdefault(t["test"], {}).setdefault(tag, []).append(t["tokens_per_s"]["median"])
    for test, v in per.items():
        if "a" not in v or "b" not in v:
            continue
        a, b = statistics.median(v["a"]), statistics.median(v["b"])
        fmt = lambda xs, x: f"{x:.1f} ({min(xs):.1f}–{max(xs):.1f})"
        print(f"| {name} | {test} | {fmt(v['a'], a)} | {fmt(v['b'], b)} | **{b / a:.2f}** |")
PY
