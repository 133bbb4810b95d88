#!/usr/bin/env bash
# Daemon query load (docs/performance.md): pathprofd profiles example_hotloop (ptrace bursts +
# eBPF stacks) while pathprofd_load drives GetHotPaths(top 50) from many connections.
# usage: scripts/bench-daemon-load.sh [BUILD_DIR]   (default: build, RelWithDebInfo)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${1:-$root/build}/bin"
dir="$(mktemp -d /tmp/pathprofd-load-XXXXXX)"
sock="$dir/pathprofd.sock"
cleanup() {
  [ -n "${loop:-}" ] && kill "$loop" 2>/dev/null || true
  [ -n "${daemon:-}" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
# The per-client rate limit would (rightly) throttle one uid asking 500+ calls/s; lift it here.
"$bin/pathprofd" --config /dev/null --socket "$sock" --rate-qps 100000 --rate-burst 100000 \
  --log-level warning 2>"$dir/log" &
daemon=$!
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
"$bin/example_hotloop" 0 & loop=$!
id=$("$bin/pathctl" start --pid "$loop" --socket "$sock" 2>/dev/null)
sleep 3  # let the session fill its profile
echo "session $id on example_hotloop (pid $loop); nproc $(nproc)"
for spec in "50 500" "100 1000" "20 0"; do
  set -- $spec
  "$bin/pathprofd_load" --socket "$sock" --session "$id" --connections "$1" --qps "$2" \
    --seconds "${SECONDS_PER_RUN:-20}" --top 50 --daemon-pid "$daemon" || true
done
"$bin/pathctl" stats --socket "$sock"
