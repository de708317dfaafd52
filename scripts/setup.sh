#!/usr/bin/env bash
# First command of the README: installs what is missing, builds, and starts Inferscope with the
# bundled stories260K model. Without a display (a server, CI), it renders one answer in a virtual
# X server instead and saves the window to build/inferscope-screenshot.png.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
  exec ./build/app/inferscope "$@"
fi
echo "setup: no display; rendering one answer with xvfb-run instead"
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
chmod 700 "$XDG_RUNTIME_DIR"
xvfb-run -a -s "-screen 0 1400x900x24" ./build/app/inferscope \
  --screenshot build/inferscope-screenshot.png --prompt "Once upon a time" "$@"
./build/cli/inferscope-cli generate --prompt "Once upon a time" --max-tokens 60 --temperature 0
