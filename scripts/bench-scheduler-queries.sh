#!/usr/bin/env bash
# Scheduler queries (docs/schedulers.md, docs/performance.md "Scheduler queries"): pathprofd
# profiles example_hotloop selected by name (as a scheduler selects a unit or cgroup), and
# pathprofd_load asks the two scheduler questions at a scheduler's pace (a few connections, a
# modest rate) and at full speed, printing p50/p90/p99.
# usage: scripts/bench-scheduler-queries.sh [BUILD_DIR]   (default: build, RelWithDebInfo)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${1:-$root/build}/bin"
. "$root/scripts/bench-daemon-lib.sh"
bench_scratch pathprofd-sched
start_daemon --rate-qps 100000 --rate-burst 100000
start_busy 1
loop=${loops[0]}
sleep 0.2
id=$("$bin/pathctl" start --name example_hotloop --socket "$sock" 2>/dev/null)
sleep 3  # let the session fill its profile
echo "session $id on example_hotloop (pid $loop); nproc $(nproc)"
for query in methods cpu-share paths; do
  for spec in "4 100" "4 0"; do
    set -- $spec
    "$bin/pathprofd_load" --socket "$sock" --session "$id" --connections "$1" --qps "$2" \
      --seconds "${SECONDS_PER_RUN:-10}" --top 10 --query "$query" --root hot \
      --daemon-pid "$daemon" || true
  done
done
