#!/usr/bin/env bash
# Daemon memory with many stack sessions (docs/performance.md, "One stack sampler for the host"):
# for each count N, a fresh pathprofd, eight busy example_hotloop processes and N stacks-only
# sessions spread over them (DWARF call graphs, 99 Hz, the defaults); after SETTLE seconds the
# daemon's RSS, its perf events and its BPF ring buffers (from /proc/PID/fd and fdinfo).
# usage: scripts/bench-daemon-sessions.sh [BUILD_DIR] [N ...]   (default: build, 1 8 64)
# PATHPROFD=FILE runs another daemon binary (an older build, to compare); START_FLAGS are added
# to every `pathctl start` (e.g. "--call-graph fp").
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${1:-$root/build}/bin"
shift || true
if [ $# -gt 0 ]; then counts=("$@"); else counts=(1 8 64); fi
settle="${SETTLE:-10}"
. "$root/scripts/bench-daemon-lib.sh"
bench_scratch pathprofd-sessions
sock="$dir/pathprofd.sock"

rss_mib() { awk '/^VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }
# perf events and BPF ring buffers (map_type 27) the process holds open.
kernel_objects() {
  local events=0 rings=0 fd link
  for fd in /proc/"$1"/fd/*; do
    link=$(readlink "$fd" 2>/dev/null) || continue
    [ "$link" = "anon_inode:[perf_event]" ] && events=$((events + 1))
    if [ "$link" = "anon_inode:bpf-map" ] &&
      grep -q '^map_type:[[:space:]]*27$' "/proc/$1/fdinfo/${fd##*/}" 2>/dev/null; then
      rings=$((rings + 1))
    fi
  done
  echo "$events $rings"
}

start_busy 8
describe_host
echo "sessions  running  idle_rss_mib  rss_mib  per_session_kib  perf_events  ring_buffers"
for n in "${counts[@]}"; do
  "${PATHPROFD:-$bin/pathprofd}" --config /dev/null --socket "$sock" --max-sessions "$((n + 8))" \
    --max-sessions-per-admin "$((n + 8))" --max-memory-bytes 68719476736 --log-level warning 2>"$dir/log" &
  daemon=$!
  for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
  sleep 1
  idle=$(rss_mib "$daemon")
  for i in $(seq 0 $((n - 1))); do
    "$bin/pathctl" start --socket "$sock" --pid "${loops[$((i % 8))]}" --source none ${START_FLAGS:-} >/dev/null 2>&1
  done
  sleep "$settle"
  running=$("$bin/pathctl" sessions --socket "$sock" 2>/dev/null | grep -c ' running  ' || true)
  rss=$(rss_mib "$daemon")
  read -r events rings < <(kernel_objects "$daemon")
  per=$(awk -v a="$rss" -v b="$idle" -v n="$n" 'BEGIN {printf "%.0f", (a - b) * 1024 / n}')
  echo "$n  $running  $idle  $rss  $per  $events  $rings"
  kill "$daemon"
  wait "$daemon" 2>/dev/null || true
  daemon=
  rm -f "$sock"
done
