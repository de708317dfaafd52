#!/usr/bin/env bash
# Release packages: the .deb and the .tar.gz, for any x86-64 CPU (the default build: the kernels
# choose AVX-512, AVX2 or portable code at run time, core/common/kernel_set.h), into
# build-package/packages/. Extra arguments go to cmake's configure step. `scripts/test-package.sh`
# checks the packages of build/, the same build, which CI tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
. scripts/ccache.sh
cmake -S . -B build-package -G Ninja "${ccache_args[@]}" -DCMAKE_BUILD_TYPE=Release -DINFERSCOPE_NATIVE=OFF -DINFERSCOPE_BUILD_TESTS=OFF "$@"
cmake --build build-package -j"$(nproc 2>/dev/null || echo 2)"
(cd build-package && cpack)
ls -l build-package/packages/*.deb build-package/packages/*.tar.gz
