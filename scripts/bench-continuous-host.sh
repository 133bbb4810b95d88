#!/usr/bin/env bash
# System-wide continuous mode's cost (docs/performance.md): BUSY example_hotloop processes, and
# pathprofd profiling the whole host (no selector, stacks only) at HZ in 10 s windows (WINDOW_S); the
# daemon's CPU over SECONDS (after a warm-up window), its peak memory, and each window's samples,
# drops and branch windows from its debug log. SOURCE=snapshot: hot paths of the whole host
# too (snapshot windows under BUDGET windows a second, default the daemon's: 300 per CPU).
# HOSTILE=1 adds, beside the busy ones, a process that forks 1,000 children and starts 1,000
# threads a second (example_churn), a shell that execs /bin/true in a loop, and a python3 that
# maps and unmaps a page 10,000 times a second (issue 42's bad input).
# CGROUPS=1 puts the daemon (and its helper) and the busy processes in two sibling CPU cgroups
# of the default weight, as systemd does for the packaged unit (pathprofd.service beside the
# users' slices or other services): the daemon's share is then its group's, not one process's
# among BUSY. Needs a writable cgroup CPU controller (v2's cpu.weight or v1's cpu.shares).
# WINDOW_S: the continuous window's length (default 10; the daemon's default is 60); the CPU is
# measured after the first window.
# ARCHIVE_EVENTS: continuous.archive_branch_events (each window's branches archived as a .pbs;
# default 65536, 0: none); the archive's size is printed.
# usage: [SOURCE=snapshot] [BUDGET=N] [HOSTILE=1] [CGROUPS=1] scripts/bench-continuous-host.sh [BUILD_DIR]
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

# Two sibling CPU cgroups (CGROUPS=1): the daemon's and the busy processes'; removed on exit.
cgroups=()
cgroup_new() {  # NAME: a new group under the CPU controller's root, its path in $cgroup
  local root
  for root in /sys/fs/cgroup /sys/fs/cgroup/unified /sys/fs/cgroup/cpu; do
    # A cgroup file system, not the tmpfs v1 mounts its controllers under (a file written
    # there by mistake is not a controller).
    case "$(stat -f -c %T "$root" 2>/dev/null)" in cgroupfs | cgroup2fs) ;; *) continue ;; esac
    if [[ -e $root/cpu.weight || -e $root/cpu.shares ]] ||
       grep -qw cpu "$root/cgroup.subtree_control" 2>/dev/null; then
      cgroup="$root/$1-$$"
      mkdir "$cgroup" && cgroups+=("$cgroup") && return 0
    fi
  done
  echo "CGROUPS=1: no writable cgroup CPU controller here" >&2
  return 1
}
cgroup_cleanup() {
  local g p
  for g in "${cgroups[@]}"; do
    while read -r p; do echo "$p" > "${g%/*}/cgroup.procs" 2>/dev/null || true; done < "$g/cgroup.procs"
    rmdir "$g" 2>/dev/null || true
  done
}
trap 'bench_cleanup; cgroup_cleanup' EXIT
busy_group="" daemon_group=""
if [[ "${CGROUPS:-0}" == 1 ]]; then
  cgroup_new pathprof-bench-busy; busy_group=$cgroup
  cgroup_new pathprof-bench-daemon; daemon_group=$cgroup
  # Children inherit the group: the busy loops started below, and the daemon's helper.
  echo $$ > "$busy_group/cgroup.procs"
fi

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
window_s = ${WINDOW_S:-10}
stack_hz = $hz
source = "${SOURCE:-none}"
window_budget = ${BUDGET:-0}
archive_dir = "$dir/windows"
keep_windows = 100
archive_branch_events = ${ARCHIVE_EVENTS:-65536}
TOML
[[ -n $daemon_group ]] && echo $$ > "$daemon_group/cgroup.procs"
"$bin/pathprofd" --config "$dir/pathprofd.toml" --socket "$dir/sock" --log-level debug \
  2>"$dir/log" &
daemon=$!
[[ -n $daemon_group ]] && echo $$ > "${daemon_group%/*}/cgroup.procs"
sleep $((${WINDOW_S:-10} + 2))  # the first window: images loaded, symbols read
t0=$(tree_ticks "$daemon")
sleep "$seconds"
t1=$(tree_ticks "$daemon")
hz_ticks=$(getconf CLK_TCK)
cpus=$(nproc)
awk -v d="$((t1 - t0))" -v s="$seconds" -v t="$hz_ticks" -v c="$cpus" -v b="$busy" -v h="$hz" \
  -v g="${daemon_group:+; daemon and busy processes in sibling CPU cgroups}" \
  'BEGIN {cpu = d / t / s * 100;
          printf "host: %d CPUs; %d busy processes; %d Hz%s\n", c, b, h, g;
          printf "daemon CPU (with its helpers): %.2f%% of one core (%.2f%% per CPU sampled)\n", cpu, cpu / c}'
grep -E '^(VmHWM|VmRSS)' "/proc/$daemon/status" | sed 's/^/daemon /'
for h in $(helpers "$daemon"); do
  grep -E '^(Name|VmHWM|VmRSS)' "/proc/$h/status" 2>/dev/null | sed "s/^/helper $h /" || true
done
grep -o 'continuous: window of [0-9]* process(es): .*' "$dir/log" || true
echo "windows archived: $(ls "$dir/windows" 2>/dev/null | grep -c '\.pb\.gz$' || true)"
# No .pbs (SOURCE=none) is no failure: the pipe would fail under pipefail.
{ du -b "$dir"/windows/*.pbs 2>/dev/null || true; } | awk '{n++; s += $1} END {if (n) printf "branches archived: %d .pbs, %.0f KB each on average\n", n, s / n / 1000}'

