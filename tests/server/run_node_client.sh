#!/usr/bin/env bash
# test_serve_node: installs the official `openai` package into $WORK (npm, at test time), starts
# `inferscope-cli serve` on 127.0.0.1 with a free port, runs the .mjs client against it, stops it.
# Exit 77 (ctest: skipped) with the reason when node or npm is missing or npm cannot install.
set -uo pipefail
script=$1
if [ -z "${NODE:-}" ] || [ -z "${NPM:-}" ] || [ ! -x "$NODE" ] || [ ! -x "$NPM" ]; then
  echo "SKIP: node or npm not found; install Node 20 to run the OpenAI client test"; exit 77
fi
mkdir -p "$WORK"
if [ ! -f "$WORK/node_modules/openai/package.json" ]; then
  (cd "$WORK" && [ -f package.json ] || echo '{"name":"inferscope-serve-test","private":true,"type":"module"}' > package.json)
  if ! (cd "$WORK" && timeout 300 "$NPM" install --no-audit --no-fund --loglevel=error openai@4 >npm.log 2>&1); then
    echo "SKIP: npm could not install the openai package (no registry reachable?):"; tail -5 "$WORK/npm.log"; exit 77
  fi
fi
# zod, for the client's structured-output helper (zodResponseFormat); without it that check is skipped.
if [ ! -f "$WORK/node_modules/zod/package.json" ]; then
  (cd "$WORK" && timeout 300 "$NPM" install --no-audit --no-fund --loglevel=error zod@3 >npm-zod.log 2>&1) ||
    echo "note: npm could not install zod; the zod helper check is skipped"
fi
out=$(mktemp)
"$CLI" serve --model "$MODEL" --port 0 --api-key test-key >"$out" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -f "$out"' EXIT
port=""
for _ in $(seq 1 600); do  # 60 s at most
  port=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$out" | head -1)
  grep -q "ready" "$out" && [ -n "$port" ] && break
  kill -0 $pid 2>/dev/null || { echo "server exited:"; cat "$out"; exit 1; }
  sleep 0.1
done
grep -q "ready" "$out" || { echo "server not ready in 60 s:"; cat "$out"; exit 1; }
cp "$script" "$WORK/client.mjs"
cd "$WORK" && timeout 300 "$NODE" client.mjs "http://127.0.0.1:$port/v1" test-key
