#!/usr/bin/env bash
# CI: core, inferscope-cli and the core tests built with AddressSanitizer + UndefinedBehaviorSanitizer
# (GCC, as the release build; -fno-sanitize-recover=all: the first report fails its test), asserts
# kept (-O1 -g without NDEBUG), then the whole ctest suite of that build in build-asan/.
#
# Nothing is excluded or suppressed. oneDNN and OpenMP are Debian's uninstrumented libraries: ASan
# still checks every heap block they get from malloc and every access our code makes to their
# buffers, and their JIT-compiled kernels run unchecked (only instrumented code is). LeakSanitizer
# runs at every test's exit.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh >/dev/null
jobs=$(nproc 2>/dev/null || echo 2)

. scripts/ccache.sh
cmake -S . -B build-asan -G Ninja "${ccache_args[@]}" -DINFERSCOPE_BUILD_GUI=OFF -DINFERSCOPE_SANITIZE=address,undefined \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" >/dev/null
cmake --build build-asan -j"$jobs"

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
cd build-asan
# The server's soak (5 minutes in the release suite) runs one minute here: the same traffic under ASan.
export INFERSCOPE_SOAK_SECONDS=60
ctest --output-on-failure -j"$jobs"
