#!/usr/bin/env bash
# System-wide continuous mode's cost (docs/performance.md): BUSY example_hotloop processes, and
# pathprofd profiling the whole host (no selector, stacks only) at HZ in 10 s windows; the
# daemon's CPU over SECONDS (after a warm-up window), its peak memory, and each window's samples,
# drops and branch windows from its debug log. SOURCE=snapshot: hot paths of the whole host
# too (snapshot windows under BUDGET windows a second, default the daemon's: 300 per CPU).
# HOSTILE=1 adds, beside the busy ones, a process that forks 1,000 children and starts 1,000
# threads a second (example_churn), a shell that execs /bin/true in a loop, and a python3 that
# maps and unmaps a page 10,000 times a second (issue 42's bad input).
# usage: [SOURCE=snapshot] [BUDGET=N] [HOSTILE=1] scripts/bench-continuous-host.sh [BUILD_DIR]
#        [BUSY] [HZ] [SECONDS]   (default: build, 50, 19, 40)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${1:-$root/build}/bin"
busy="${2:-50}"
hz="${3:-19}"
seconds="${4:-40}"
. "$root/scripts/bench-daemon-lib.sh"
bench_scratch pathprofd-host
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# The daemon's helpers (snapshot windows are emulated in pathprof-emulator, a child of its own):
# their CPU and memory are the daemon's cost too.
helpers() { awk -v d="$1" '$4 == d {print $1}' /proc/[0-9]*/stat 2>/dev/null || true; }
tree_ticks() {
  local t
  t=$(cpu_ticks "$1")
  for h in $(helpers "$1"); do t=$((t + $(cpu_ticks "$h" 2>/dev/null || echo 0))); done
  echo "$t"
}

start_busy "$busy"
if [[ "${HOSTILE:-0}" == 1 ]]; then
  "$bin/example_churn" --threads 1000 --forks 1000 --seconds 3600 >/dev/null &
  loops+=($!)
  sh -c 'while :; do /bin/true; done' &
  loops+=($!)
  python3 -c '
import mmap, time
while True:
    t = time.monotonic()
    for _ in range(1000):
        mmap.mmap(-1, 4096).close()
    time.sleep(max(0.0, 0.1 - (time.monotonic() - t)))
' &
  loops+=($!)
fi
cat >"$dir/pathprofd.toml" <<TOML
[continuous]
enabled = true
window_s = 10
stack_hz = $hz
source = "${SOURCE:-none}"
window_budget = ${BUDGET:-0}
archive_dir = "$dir/windows"
keep_windows = 100
TOML
"$bin/pathprofd" --config "$dir/pathprofd.toml" --socket "$dir/sock" --log-level debug \
  2>"$dir/log" &
daemon=$!
sleep 12  # the first window: images loaded, symbols read
t0=$(tree_ticks "$daemon")
sleep "$seconds"
t1=$(tree_ticks "$daemon")
hz_ticks=$(getconf CLK_TCK)
cpus=$(nproc)
awk -v d="$((t1 - t0))" -v s="$seconds" -v t="$hz_ticks" -v c="$cpus" -v b="$busy" -v h="$hz" \
  'BEGIN {cpu = d / t / s * 100;
          printf "host: %d CPUs; %d busy processes; %d Hz\n", c, b, h;
          printf "daemon CPU (with its helpers): %.2f%% of one core (%.2f%% per CPU sampled)\n", cpu, cpu / c}'
grep -E '^(VmHWM|VmRSS)' "/proc/$daemon/status" | sed 's/^/daemon /'
for h in $(helpers "$daemon"); do
  grep -E '^(Name|VmHWM|VmRSS)' "/proc/$h/status" 2>/dev/null | sed "s/^/helper $h /" || true
done
grep -o 'continuous: window of [0-9]* process(es): .*' "$dir/log" || true
echo "windows archived: $(ls "$dir/windows" 2>/dev/null | grep -c '\.pb\.gz$' || true)"
