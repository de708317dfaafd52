#!/usr/bin/env bash
# CI: builds the libFuzzer target (clang 16, ASan + UBSan + coverage, in build-fuzz/) and fuzzes
# everything that reads a model file's header for FUZZ_SECONDS seconds (default 60), starting from
# the bundled model, small generated seeds and every input kept in tests/data/fuzz/. The model
# files of tests/data/ (32000-token vocabularies: 0.1-0.5 s an input under ASan, depending on the
# machine's load) are run once each under the same limits rather than mutated, so that the 1 s
# timeout measures the code and not the neighbours.
# Fails on a crash, a sanitizer report, a broken property (fuzz/model_file_target.h), an input
# that runs longer than 1 s, or an allocation past the limits below; the input is then in
# build-fuzz/artifacts/: keep it in tests/data/fuzz/ and fix the defect (tests/data/fuzz/README.md).
#
# Limits: -max_len 2 MiB (the largest real seed is 1.75 MB). The reader's own bound (its heap
# against the input's size) is checked per input inside the target; -malloc_limit_mb=64 (32 x the
# largest input) and -rss_limit_mb=2048 catch any later stage trusting a size it read.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh >/dev/null
seconds=${FUZZ_SECONDS:-60}
# Symbolized stacks in reports when an llvm-symbolizer is installed (without one, the kept input
# replays symbolized in the sanitizer build's ctest).
for s in /usr/lib/llvm-16/bin/llvm-symbolizer /usr/bin/llvm-symbolizer; do
  if [ -x "$s" ]; then export ASAN_SYMBOLIZER_PATH="$s"; break; fi
done
jobs=$(nproc 2>/dev/null || echo 2)

. scripts/ccache.sh
cmake -S . -B build-fuzz -G Ninja "${ccache_args[@]}" -DINFERSCOPE_FUZZ=ON -DCMAKE_C_COMPILER=clang-16 -DCMAKE_CXX_COMPILER=clang++-16 >/dev/null
cmake --build build-fuzz -j"$jobs"

corpus=build-fuzz/corpus
rm -rf "$corpus" build-fuzz/artifacts
mkdir -p "$corpus" build-fuzz/artifacts
cp resources/models/stories260K.gguf "$corpus"/
find tests/data/fuzz -type f ! -name '*.md' -exec cp {} "$corpus"/ \;
build-fuzz/fuzz/make_seeds "$corpus" resources/models/stories260K.gguf

# A smaller ASan quarantine than the default 256 MB: recycling it in one go (a 32000-token
# vocabulary frees ~20 MB per input) stalled an input past the 1 s timeout on a loaded machine.
export ASAN_OPTIONS="quarantine_size_mb=32${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
limits=(-timeout=1 -max_len=2097152 -malloc_limit_mb=64 -rss_limit_mb=2048 -artifact_prefix=build-fuzz/artifacts/)
status=0
build-fuzz/fuzz/fuzz_model_file "${limits[@]}" -runs=1 tests/data/*.gguf >build-fuzz/replay.log 2>&1 || status=$?
if [ "$status" -ne 0 ]; then
  tail -n 80 build-fuzz/replay.log
  echo "ci-fuzz: FAILED on a model file of tests/data (exit $status)" >&2
  exit 1
fi
echo "ci-fuzz: fuzzing the model-file reader for ${seconds} s from $(ls "$corpus" | wc -l) inputs"
build-fuzz/fuzz/fuzz_model_file "${limits[@]}" -max_total_time="$seconds" -dict=fuzz/gguf.dict -print_final_stats=1 \
  "$corpus" >build-fuzz/fuzz.log 2>&1 || status=$?
if [ "$status" -ne 0 ]; then
  tail -n 80 build-fuzz/fuzz.log
  echo "ci-fuzz: FAILED (exit $status); inputs: $(ls build-fuzz/artifacts)" >&2
  exit 1
fi
grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss_mb)" build-fuzz/fuzz.log || true

# The parsers of what the network sends, each for some seconds from its seeds and dictionary.
#   fuzz_parser TARGET SECONDS SEEDS DICT MAX_LEN WHAT
fuzz_parser() {
  local target=$1 seconds=$2 seeds=$3 dict=$4 maxlen=$5 what=$6
  local corpus=build-fuzz/$target-corpus log=build-fuzz/$target.log
  rm -rf "$corpus" && mkdir -p "$corpus"
  cp "$seeds"/* "$corpus"/
  echo "ci-fuzz: fuzzing $what for ${seconds} s (inputs up to $maxlen bytes)"
  # A 256 KiB stack: anything that recursed on the input's nesting would overflow it at once.
  (ulimit -s 256 && build-fuzz/fuzz/"$target" -timeout=5 -max_len="$maxlen" -malloc_limit_mb=512 -rss_limit_mb=2048 \
    -artifact_prefix=build-fuzz/artifacts/ -max_total_time="$seconds" -dict="$dict" -print_final_stats=1 \
    "$corpus" "${@:7}") >"$log" 2>&1 || status=$?
  if [ "$status" -ne 0 ]; then
    tail -n 80 "$log"
    echo "ci-fuzz: FAILED on $what (exit $status); inputs: $(ls build-fuzz/artifacts)" >&2
    exit 1
  fi
  grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss_mb)" "$log" || true
}
# The server's request parser (server/openai_request.cpp: what `inferscope-cli serve` reads), with
# inputs up to the server's body limit (4 MiB) and seeds nested a million levels deep.
deep=build-fuzz/deep-seeds
rm -rf "$deep" && mkdir -p "$deep"
repeat() { head -c "$2" /dev/zero | tr '\0' "$1"; }
msg='{"role":"user","content":"hi"}'
{ printf '{"messages":[%s],"stream":' "$msg"; repeat '[' 1000000; repeat ']' 1000000; printf '}'; } >"$deep/deep-stream"
{ printf '{"messages":[{"role":'; repeat '[' 1000000; repeat ']' 1000000; printf ',"content":"x"}]}'; } >"$deep/deep-role"
repeat '{' 2000000 >"$deep/deep-objects"
{ printf '{"prompt":"a","stop":['; repeat 'x' 600000 | sed 's/x/0,/g'; printf '0]}'; } >"$deep/wide"
fuzz_parser fuzz_openai_request "${FUZZ_REQUEST_SECONDS:-30}" fuzz/openai_seeds fuzz/openai.dict 4194304 "the OpenAI request parser" "$deep"
# The grammar engine on what a client sends as `grammar` or a JSON schema (core/grammar), up to the
# server's limit of 256 KiB and past it.
fuzz_parser fuzz_grammar "${FUZZ_GRAMMAR_SECONDS:-30}" fuzz/grammar_seeds fuzz/grammar.dict 262145 "the grammar parser and schema converter"
# The head of a request and the policy that judges it (server/http/head_reader.cpp, request_policy.cpp),
# up to the transport's header limit (16 KiB) and past it.
fuzz_parser fuzz_request_head "${FUZZ_HEAD_SECONDS:-20}" fuzz/head_seeds fuzz/http.dict 20000 "the request head and its policy"
# The app's reader of a server's streamed answer (gui/remote/openai_stream_parser.cpp).
fuzz_parser fuzz_openai_stream "${FUZZ_STREAM_SECONDS:-20}" fuzz/sse_seeds fuzz/sse.dict 65536 "the app's OpenAI stream parser"
# The app's reader of a server's slot report (gui/remote/slot_report.cpp), up to the 64 KiB it is read with.
fuzz_parser fuzz_slot_report "${FUZZ_SLOTS_SECONDS:-15}" fuzz/slots_seeds fuzz/slots.dict 65536 "the app's slot report reader"
# The model catalog's readers of other tools' files and our header cache (catalog/source_files.cpp,
# header_cache.cpp), up to the 1 MiB such a file is read with; and of what the hub sends
# (catalog/hub_responses.cpp, a GGUF header from a prefix), up to the 8 MiB a listing may take.
fuzz_parser fuzz_catalog_files "${FUZZ_CATALOG_SECONDS:-20}" fuzz/catalog_seeds fuzz/catalog.dict 1048577 "the model catalog's file parsers"
fuzz_parser fuzz_hub_responses "${FUZZ_HUB_SECONDS:-20}" fuzz/hub_seeds fuzz/hub.dict 8388609 "the hub client's response parsers"
echo "ci-fuzz: no defect found"
