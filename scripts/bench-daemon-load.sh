#!/usr/bin/env bash
# Daemon query load (docs/performance.md): pathprofd profiles example_hotloop (ptrace bursts +
# eBPF stacks) while pathprofd_load drives GetHotPaths(top 50) from many connections.
# usage: scripts/bench-daemon-load.sh [BUILD_DIR]   (default: build, RelWithDebInfo)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${1:-$root/build}/bin"
. "$root/scripts/bench-daemon-lib.sh"
bench_scratch pathprofd-load
# The per-client rate limit would (rightly) throttle one uid asking 500+ calls/s; lift it here.
start_daemon --rate-qps 100000 --rate-burst 100000
start_busy 1
loop=${loops[0]}
id=$("$bin/pathctl" start --pid "$loop" --socket "$sock" 2>/dev/null)
sleep 3  # let the session fill its profile
echo "session $id on example_hotloop (pid $loop); nproc $(nproc)"
for spec in "50 500" "100 1000" "20 0"; do
  set -- $spec
  "$bin/pathprofd_load" --socket "$sock" --session "$id" --connections "$1" --qps "$2" \
    --seconds "${SECONDS_PER_RUN:-20}" --top 50 --daemon-pid "$daemon" || true
done
"$bin/pathctl" stats --socket "$sock"
