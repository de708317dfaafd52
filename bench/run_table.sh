#!/bin/bash
# Reproduces bench/README.md's table: writes the synth models (once) under $DIR, then runs
# `inferscope-cli bench` on each, each run started only once the machine has been idle for 3 s
# (other builds on a 2-core machine halve OpenMP throughput), and prints the markdown table.
#   bench/run_table.sh [build dir] [models dir]      e.g. bench/run_table.sh build /tmp/inferscope-bench
set -euo pipefail
BUILD=${1:-build}
DIR=${2:-/tmp/inferscope-bench}
CLI="$BUILD/cli/inferscope-cli"
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$DIR"

synth() {  # shape dtype file
    [ -f "$DIR/$3" ] || "$CLI" synth --shape "$1" --dtype "$2" --out "$DIR/$3"
}
synth tinyllama-1.1b bf16 tinyllama-bf16.gguf
synth tinyllama-1.1b f32 tinyllama-f32.gguf
synth tinyllama-1.1b f16 tinyllama-f16.gguf
synth llama-110m f32 llama110m-f32.gguf

. "$HERE/wait_quiet.sh"

run() {  # tag, then bench arguments
    local tag=$1; shift
    wait_quiet
    echo "$tag: start $(uptime)" >&2
    "$CLI" bench "$@" --wait-quiet 60 --json > "$DIR/$tag.json"
    echo "$tag: end   $(uptime)" >&2
}
run tinyllama-bf16 --model "$DIR/tinyllama-bf16.gguf" --repeat 5
run tinyllama-f32 --model "$DIR/tinyllama-f32.gguf" --repeat 5
run tinyllama-f16 --model "$DIR/tinyllama-f16.gguf" --repeat 5
run tinyllama-int8 --model "$DIR/tinyllama-bf16.gguf" --compute int8 --repeat 5
run llama110m-f32 --model "$DIR/llama110m-f32.gguf" --repeat 5 --depth 2000
run llama110m-int8 --model "$DIR/llama110m-f32.gguf" --compute int8 --repeat 5
python3 "$HERE/table.py" "$DIR"/tinyllama-bf16.json "$DIR"/tinyllama-f32.json "$DIR"/tinyllama-f16.json \
    "$DIR"/tinyllama-int8.json "$DIR"/llama110m-f32.json "$DIR"/llama110m-int8.json
