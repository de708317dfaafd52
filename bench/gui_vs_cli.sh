#!/usr/bin/env bash
# Decode speed inside the app against inferscope-cli on the same model and prompt, and with each
# inspector panel shown against the inspector hidden — interleaved repeats, medians.
#   bench/gui_vs_cli.sh MODEL.gguf [repeats=5] [tokens=128]
# The app runs offscreen-rendered under Xvfb with --screenshot (greedy answer, then quit) and
# prints the answer's decode rate; the CLI prints its own with --json. Run on a quiet machine.
set -euo pipefail
model=${1:?usage: bench/gui_vs_cli.sh MODEL.gguf [repeats] [tokens]}
repeats=${2:-5}
tokens=${3:-128}
root="$(cd "$(dirname "$0")/.." && pwd)"
app="$root/build/app/inferscope"
cli="$root/build/cli/inferscope-cli"
prompt="Once upon a time"
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
chmod 700 "$XDG_RUNTIME_DIR"
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT

declare -A runs walls guis
read -r -a variants <<< "${VARIANTS:-cli none probabilities layers attention timeline kv}"  # VARIANTS="none layers" runs fewer
wall_variants=(); for v in none layers attention; do [[ " ${variants[*]} " == *" $v "* ]] && wall_variants+=("$v"); done
for r in $(seq 1 "$repeats"); do
  for v in "${variants[@]}"; do
    if [ "$v" = cli ]; then
      rate=$("$cli" generate --model "$model" --prompt "$prompt" --temperature 0 --max-tokens "$tokens" --json 2>/dev/null \
             | tail -1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["decode_tokens_per_s"])')
    else
      rate=$(HOME="$home" xvfb-run -a -s "-screen 0 1400x900x24" "$app" --model "$model" --screenshot "$home/s.png" \
               --prompt "$prompt" --max-tokens "$tokens" --panel "$v" 2>&1 \
             | tee "$home/out.txt" | sed -n 's/.*decode \([0-9.]*\) tok\/s.*/\1/p')
      walls[$v]+="$(sed -n 's/.*wall \([0-9.]*\) tok\/s.*/\1/p' "$home/out.txt") "
      guis[$v]+="$(sed -n 's/.*GUI thread ran .*: \([0-9.]*\)% of a core.*/\1/p' "$home/out.txt") "
    fi
    runs[$v]+="$rate "
    echo "round $r $v: $rate tok/s" >&2
  done
done

# The GUI thread's CPU time while the answer streamed, in % of a core: on a machine with as many
# cores as decode threads, what it takes from the decode.
python3 - "$(for v in "${variants[@]}"; do echo "$v:${runs[$v]}:${guis[$v]:-}"; done)" <<'PY'
import statistics, sys
rows = [l.split(":") for l in sys.argv[1].splitlines()]
med = {k: statistics.median(float(x) for x in v.split()) for k, v, _ in rows}
gui = {k: statistics.median(float(x) for x in g.split()) if g.split() else None for k, _, g in rows}
print(f"{'run':<16}{'median tok/s':>14}{'vs cli':>9}{'vs app, inspector hidden':>27}{'GUI thread, % of a core':>26}")
for k, m in med.items():
    g = f"{gui[k]:.1f}" if gui[k] is not None else "-"
    print(f"{k:<16}{m:>14.1f}{m / med['cli']:>9.2f}{m / med['none']:>27.2f}{g:>26}")
PY

# Wall rate, first token to the end: what the engine's own decode timing leaves out (an open
# Layers or Attention panel inspects between two decode passes, outside them).
python3 - "$(for v in "${wall_variants[@]}"; do echo "$v:${walls[$v]}"; done)" <<'PY'
import statistics, sys
rows = [l.split(":") for l in sys.argv[1].splitlines()]
med = {k: statistics.median(float(x) for x in v.split()) for k, v in rows}
print(f"{'wall, run':<16}{'median tok/s':>14}{'vs app, inspector hidden':>27}")
for k, m in med.items():
    print(f"{k:<16}{m:>14.1f}{m / med['none']:>27.2f}")
PY
