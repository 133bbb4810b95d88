#!/usr/bin/env bash
# Daemon memory over many user sessions, one after another (docs/performance.md, "Memory over
# time"): a fresh pathprofd, one busy example_hotloop, and COUNT sessions on it, each started
# for DURATION, its hot paths read, then removed; the daemon's RSS after each. A daemon serving
# sessions for days must not grow with their count (each session's threads end with it, and
# what they freed may stay in their malloc arenas).
# usage: scripts/bench-session-churn.sh [BUILD_DIR] [COUNT] [SOURCE]
#        (default: build, 30, auto; SOURCE as pathctl start --source takes it)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${1:-$root/build}/bin"
count="${2:-30}"
source_kind="${3:-auto}"
duration=2
. "$root/scripts/bench-daemon-lib.sh"
bench_scratch pathprofd-churn
start_daemon --max-sessions 4  # more than one at a time is never asked for
start_busy 1
export PATHPROF_SOCKET="$sock"
describe_host
echo "session  daemon_rss_kib  (source $source_kind, ${duration}s each)"
for i in $(seq "$count"); do
  id=$("$bin/pathctl" start --pid "${loops[0]}" --source "$source_kind" \
    --duration "${duration}s" 2>/dev/null | head -1)
  sleep "$duration.3"
  "$bin/pathctl" paths "$id" --top 3 >/dev/null || true
  "$bin/pathctl" rm "$id" >/dev/null
  # the daemon's own figure (pathctl stats: its RSS as its metrics report it)
  echo "$i  $("$bin/pathctl" stats --json | grep -o '"daemon_rss_bytes":"[0-9]*"' |
    grep -o '[0-9]*' | awk '{print int($1 / 1024)}')"
done
