#!/usr/bin/env bash
# The ptrace tracer's fault table (docs/performance.md): N runs of each fault, counting what a
# fault must never leave behind. Each run starts its own target (a child of this script, so
# that it can be reaped) and its own collector, injects the fault, and then checks, a second
# and a half later:
#   traced   threads of the target whose TracerPid is not 0
#   stopped  threads of the target in state t or T
#   died     targets killed by a signal (a SIGTRAP left pending by a tracer killed mid-step)
#   unreaped targets that exited and that their parent (this script) could not reap within 2 s
# Faults: kill -9 of pathprofd, of pathctl (the collector's host) and of the tracer process,
# during a burst (bursts back to back) and between bursts (0.5 bursts/s); and targets that exit,
# exec, or create 1,000 threads a second while traced.
# Only processes this script started are signalled, by pid. Needs root.
# usage: scripts/fault-matrix.sh BUILD_DIR [RUNS] [STEP_MODE] [FAULTS]
#   RUNS: per fault (default 20); STEP_MODE: auto (default), emulate, breakpoints, int3 or step, for every
#   collector; FAULTS: all (default) or tracer (only the kill -9 of the tracer, both phases).
set -uo pipefail
build="$(cd "${1:?usage: scripts/fault-matrix.sh BUILD_DIR [RUNS]}" && pwd)"
runs="${2:-20}"
step_mode="${3:-auto}"
faults="${4:-all}"
bin="$build/bin"
work="$(mktemp -d /tmp/pathprof-faults-XXXXXX)"
daemon_pid=""
cleanup() {
  [[ -n "$daemon_pid" ]] && kill -9 "$daemon_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

tracer_of() { awk '/^TracerPid:/ {print $2}' "/proc/$1/status" 2>/dev/null; }

# Waits (up to 5 s) for the target to be traced.
wait_traced() {
  for _ in $(seq 1 100); do
    local t
    t="$(tracer_of "$1")"
    [[ -n "$t" && "$t" != 0 ]] && return 0
    sleep 0.05
  done
  return 1
}

traced=0 stopped=0 died=0 unreaped=0 failed_start=0

# Counts what is left on the target's threads, then kills and reaps it (unless gone).
check_target() {
  local target="$1"
  if [[ -d "/proc/$target/task" ]]; then
    for task in /proc/"$target"/task/*; do
      local tp st
      tp="$(awk '/^TracerPid:/ {print $2}' "$task/status" 2>/dev/null)"
      st="$(awk '/^State:/ {print $2}' "$task/status" 2>/dev/null)"
      [[ -n "$tp" && "$tp" != 0 ]] && traced=$((traced + 1))
      [[ "$st" == t || "$st" == T ]] && stopped=$((stopped + 1))
    done
  fi
  reap "$target" kill
}

# Reaps the target (killing it first when asked), counting a death by signal and a target that
# its parent cannot reap within 2 s.
reap() {
  local target="$1"
  [[ "${2:-}" == kill ]] && kill -0 "$target" 2>/dev/null && {
    # A signal death before our kill is counted; so look first.
    local state
    state="$(awk '/^State:/ {print $2}' "/proc/$target/status" 2>/dev/null)"
    if [[ "$state" != Z ]]; then kill -9 "$target" 2>/dev/null; fi
  }
  local done=0
  for _ in $(seq 1 40); do
    if ! kill -0 "$target" 2>/dev/null || [[ "$(awk '/^State:/ {print $2}' /proc/"$target"/status 2>/dev/null)" == Z ]]; then
      done=1
      break
    fi
    sleep 0.05
  done
  if [[ $done -eq 0 ]]; then
    unreaped=$((unreaped + 1))
    return
  fi
  wait "$target" 2>/dev/null
  local rc=$?
  # 137 is our own SIGKILL; any other death by a signal is the fault's.
  if [[ $rc -gt 128 && $rc -ne 137 ]]; then died=$((died + 1)); fi
}

start_daemon() {
  : >"$work/pathprofd.toml"
  "$bin/pathprofd" --config "$work/pathprofd.toml" --socket "$work/pathprofd.sock" \
    --log-level warning >>"$work/pathprofd.log" 2>&1 &
  daemon_pid=$!
  for _ in $(seq 1 100); do [[ -S "$work/pathprofd.sock" ]] && return 0; sleep 0.05; done
  return 1
}

# One run of a kill fault. $1: pathprofd|pathctl|tracer, $2: during|between.
kill_run() {
  local who="$1" phase="$2" rate cap
  if [[ "$phase" == during ]]; then rate=5000 cap=0.5; else rate=0.5 cap=0.04; fi
  "$bin/example_hotloop_static" 0 &
  local target=$! host=""
  if [[ "$who" == pathprofd ]]; then
    rm -f "$work/pathprofd.sock"
    start_daemon || { failed_start=$((failed_start + 1)); reap "$target" kill; return; }
    host=$daemon_pid
    "$bin/pathctl" start --pid "$target" --source ptrace --step-mode "$step_mode" --burst-rate "$rate" \
      --max-stopped "$cap" --socket "$work/pathprofd.sock" >/dev/null 2>&1
  else
    "$bin/pathctl" bursts --pid "$target" --step-mode "$step_mode" --burst-rate "$rate" \
      --max-stopped "$cap" --top 0 \
      >/dev/null 2>&1 &
    host=$!
  fi
  if ! wait_traced "$target"; then
    failed_start=$((failed_start + 1))
    kill -9 "$host" 2>/dev/null; wait "$host" 2>/dev/null
    reap "$target" kill
    return
  fi
  sleep 0.3
  local victim="$host"
  [[ "$who" == tracer ]] && victim="$(tracer_of "$target")"
  kill -9 "$victim" 2>/dev/null
  sleep 1.5
  check_target "$target"
  kill -9 "$host" 2>/dev/null
  wait "$host" 2>/dev/null
  daemon_pid=""
}

# Target behaviours, traced by pathctl bursts at the defaults.
exit_run() {
  "$bin/example_churn" --seconds 1.5 >/dev/null &
  local target=$!
  "$bin/pathctl" bursts --pid "$target" --top 0 >/dev/null 2>&1 &
  local host=$!
  wait_traced "$target" || failed_start=$((failed_start + 1))
  sleep 2
  reap "$target"
  wait "$host" 2>/dev/null
}

exec_run() {
  "$bin/example_churn" --exec-after 1 >/dev/null &
  local target=$!
  "$bin/pathctl" bursts --pid "$target" --duration 2.5 --top 0 >/dev/null 2>&1 &
  local host=$!
  wait_traced "$target" || failed_start=$((failed_start + 1))
  wait "$host" 2>/dev/null
  sleep 0.2
  check_target "$target"
}

threads_run() {
  "$bin/example_churn" --threads 1000 --seconds 2.5 >"$work/churn.out" &
  local target=$!
  "$bin/pathctl" bursts --pid "$target" --top 0 >/dev/null 2>&1 &
  local host=$!
  wait_traced "$target" || failed_start=$((failed_start + 1))
  sleep 3
  reap "$target"
  wait "$host" 2>/dev/null
  local slowest
  slowest="$(awk '$1 == "threads" {print $2}' "$work/churn.out" | sort -n | head -1)"
  [[ -n "$slowest" && "$slowest" -lt 500 ]] && froze=$((froze + 1))
}

[[ "$(id -u)" -eq 0 ]] || { echo "fault-matrix: needs root" >&2; exit 1; }
cpu="$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)"
hv="$(dmesg 2>/dev/null | sed -n 's/.*Hypervisor detected: //p' | head -1)"
mode="$("$bin/pathctl" caps --json 2>/dev/null |
  sed -n 's/.*"auto_step_mode":"STEP_MODE_\([A-Z0-9_]*\)".*/\1/p' | tr 'A-Z_' 'a-z-')"
[[ "$step_mode" != auto ]] && mode="$step_mode"
echo "fault matrix: $runs runs each; $cpu, hypervisor ${hv:-none/unknown}, kernel $(uname -r), step mode $mode"
echo
echo "| fault | runs | threads left traced | threads left stopped | targets killed by a signal | targets not reaped | other |"
echo "|---|---|---|---|---|---|---|"
row() {
  local label="$1" other="${2:-}"
  echo "| $label | $runs | $traced | $stopped | $died | $unreaped | $other |"
  traced=0 stopped=0 died=0 unreaped=0 failed_start=0
}
whos="pathprofd pathctl tracer"
[[ "$faults" == tracer ]] && whos=tracer
for who in $whos; do
  for phase in during between; do
    for _ in $(seq 1 "$runs"); do kill_run "$who" "$phase"; done
    row "kill -9 of $who, $phase bursts" "$([[ $failed_start -gt 0 ]] && echo "$failed_start did not start")"
  done
done
[[ "$faults" == tracer ]] && exit 0
for _ in $(seq 1 "$runs"); do exit_run; done
row "target exits while traced"
for _ in $(seq 1 "$runs"); do exec_run; done
row "target execs while traced"
froze=0
for _ in $(seq 1 "$runs"); do threads_run; done
row "target creates 1,000 threads/s" "$froze runs with a second under 500 threads"
