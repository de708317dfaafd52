#!/usr/bin/env bash
# First command of the README: installs what is missing, builds, and runs the main job —
# inferscope-cli generating a story with the bundled stories260K model.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
./build/cli/inferscope-cli generate --prompt "Once upon a time" --max-tokens 120 --temperature 0.8 --seed 42
