#!/usr/bin/env bash
# Release packages: the .deb and the .tar.gz built for any x86-64 CPU (INFERSCOPE_NATIVE=OFF, where
# build/ is tuned for this machine), into build-package/packages/. Extra arguments go to cmake's
# configure step. `scripts/test-package.sh` checks the packages of build/ the same way.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
. scripts/ccache.sh
cmake -S . -B build-package -G Ninja "${ccache_args[@]}" -DCMAKE_BUILD_TYPE=Release -DINFERSCOPE_NATIVE=OFF -DINFERSCOPE_BUILD_TESTS=OFF "$@"
cmake --build build-package -j"$(nproc 2>/dev/null || echo 2)"
(cd build-package && cpack)
ls -l build-package/packages/*.deb build-package/packages/*.tar.gz
