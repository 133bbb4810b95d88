#!/usr/bin/env bash
# Overhead of ptrace bursts on a CPU-bound program: example_hotloop_static doing a fixed amount
# of work, without and with `pathctl bursts` attached, in interleaved pairs (baseline, traced),
# so that drift of the host cancels out. Per pair: the target's CPU time (perf stat task-clock:
# the scheduler's clock; tick-sampled user+sys from time(1) swings +-15% on a VM) and its wall
# time, as traced/baseline ratios; each line is the median of REPEATS pairs.
#   usage: scripts/bench-ptrace-overhead.sh [BUILD_DIR] [ROUNDS] [REPEATS] [RATES...]
# Rates in the sweep run with --max-stopped 0.5 (the highest cap allowed: none at these rates), so they show the raw cost of a rate;
# the "default" lines use pathctl's defaults (rate 20/s, stopped-time cap 4%), once with auto
# and once per step mode that works on this host (pathctl caps).
set -euo pipefail
BUILD=${1:-build}
ROUNDS=${2:-3000000}
REPEATS=${3:-5}
shift $(( $# < 3 ? $# : 3 ))
RATES=${*:-"10 25 50 100"}
EXE=$BUILD/bin/example_hotloop_static
PATHCTL=$BUILD/bin/pathctl
for f in "$EXE" "$PATHCTL"; do
  [[ -x $f ]] || { echo "missing $f: cmake --build $BUILD --target pathctl example_hotloop_static" >&2; exit 2; }
done
command -v perf >/dev/null || { echo "perf not installed (Debian: linux-perf)" >&2; exit 2; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

now() { date +%s.%N; }
task_clock_ms() { awk -F, '/task-clock/ {print $1}' "$1"; }

# One run of the target; with flags, `pathctl bursts FLAGS` attached for its whole life.
# Prints "cpu_ms wall_s collector_cpu_s".
run_once() {
  local flags=$1 t0 t1 ccpu=0
  t0=$(now)
  perf stat -x, -e task-clock -o "$TMP/stat" "$EXE" "$ROUNDS" >/dev/null &
  local wrapper=$!
  if [[ -n $flags ]]; then
    local pid=""
    for _ in $(seq 1 200); do
      pid=$(pgrep -P "$wrapper" -x example_hotloop 2>/dev/null || true)
      [[ -n $pid ]] && break
      sleep 0.005
    done
    # shellcheck disable=SC2086
    /usr/bin/time -f "%U %S" -o "$TMP/collector" "$PATHCTL" bursts --pid "$pid" --top 0 $flags \
      2>"$TMP/log" >/dev/null || true
    ccpu=$(awk 'END {print $1 + $2}' "$TMP/collector")
  fi
  wait "$wrapper"
  t1=$(now)
  echo "$(task_clock_ms "$TMP/stat") $(echo "$t1 - $t0" | bc) $ccpu"
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

BASE_CPU_ALL=()
printf "%-18s %10s %10s %14s %s\n" "bursts" "cpu ratio" "wall ratio" "collector cpu" \
  "windows, stopped share (last run)"
report() {
  local label=$1 flags=$2
  : >"$TMP/pairs"
  for _ in $(seq 1 "$REPEATS"); do
    read -r bc bw _ < <(run_once "")
    read -r tc tw cc < <(run_once "$flags")
    echo "$bc $bw $tc $tw $cc" >>"$TMP/pairs"
    BASE_CPU_ALL+=("$bc")
  done
  local cr wr ccr
  cr=$(awk '{print $3 / $1}' "$TMP/pairs" | median)
  wr=$(awk '{print $4 / $2}' "$TMP/pairs" | median)
  ccr=$(awk '{print 100 * $5 * 1000 / $1}' "$TMP/pairs" | median)
  printf "%-18s %10.3f %10.3f %13.1f%% %s\n" "$label" "$cr" "$wr" "$ccr" \
    "$(grep -o '[0-9]* windows (\|stopped [0-9.]*%\|[0-9.]*% in the worst second' "$TMP/log" | tr '\n' ' ')"
}
for r in $RATES; do report "$r/s, no cap" "--burst-rate $r --max-stopped 0.5"; done
report "default (auto)" "--seed 1"
caps=$("$PATHCTL" caps --json 2>/dev/null || true)
for mode in breakpoints int3 step; do
  field=$(case $mode in breakpoints) echo dr_breakpoints ;; int3) echo int3_breakpoints ;;
          step) echo single_step ;; esac)
  if grep -q "\"$field\":{\"available\":true" <<<"$caps"; then
    report "default, $mode" "--seed 1 --step-mode $mode"
  else
    printf "%-18s (does not work on this host)\n" "default, $mode"
  fi
done
printf "baseline: %s rounds, %s ms CPU (median of %s runs)\n" "$ROUNDS" \
  "$(printf '%s\n' "${BASE_CPU_ALL[@]}" | median)" "${#BASE_CPU_ALL[@]}"
