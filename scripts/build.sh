#!/usr/bin/env bash
# Configures (Release, Ninja) and builds into build/. Extra arguments go to cmake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
. scripts/ccache.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${ccache_args[@]}" "$@"
cmake --build build -j"$jobs"
