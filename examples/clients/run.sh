#!/usr/bin/env bash
# Runs the Go and Python clients against a live `faultline serve` (loopback, a fresh state
# directory, a bundle built from the catalogue). Usage: examples/clients/run.sh FAULTLINE_BINARY
# Ends with `N passed, N failed`; exits 1 if a client failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
faultline=${1:-target/debug/faultline}
work=$(mktemp -d)
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -rf "$work"' EXIT
"$faultline" build catalogue/ -o "$work/provider-errors.flb" >/dev/null || exit 1
"$faultline" serve --listen 127.0.0.1:0 --bundle "$work/provider-errors.flb" --state "$work/state" 2>"$work/serve.log" &
server=$!
for _ in $(seq 1 600); do
  address=$(sed -n 's/^faultline serve: listening on //p' "$work/serve.log")
  [ -n "$address" ] && break
  sleep 0.1
done
if [ -z "$address" ]; then
  cat "$work/serve.log" >&2
  exit 1
fi
export FAULTLINE_URL=$address
passed=0
failed=0
if (cd examples/clients/go && GOFLAGS=-mod=mod go run .); then passed=$((passed + 1)); else failed=$((failed + 1)); fi
if python3 examples/clients/python/client.py; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
echo "clients: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
