#!/usr/bin/env bash
# Second command of the README (and what CI runs): installs what is missing, builds, and runs the
# whole test suite with ctest, then the package test (scripts/test-package.sh). GUI tests run on the
# offscreen platform: no display needed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
export QT_QPA_PLATFORM=offscreen
(cd build && ctest --output-on-failure -j"$(nproc 2>/dev/null || echo 2)")
echo "test: the acceptance suite's screenshots of every step are in build/acceptance-screens/"
scripts/test-package.sh
