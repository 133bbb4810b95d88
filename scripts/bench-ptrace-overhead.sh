#!/usr/bin/env bash
# Overhead of ptrace bursts on a CPU-bound program: the whole-process CPU time (user + sys) and
# wall time of example_hotloop_static doing a fixed amount of work, without and with
# `pathctl bursts` attached, as ratios. One line per burst rate, plus the default settings.
#   usage: scripts/bench-ptrace-overhead.sh [BUILD_DIR] [ROUNDS] [REPEATS] [RATES...]
# Rates in the sweep run with --max-stopped 1 (no cap), so they show the raw cost of a rate;
# the "default" lines use pathctl's defaults (rate 20/s, stopped-time cap 4%), once per step
# mode that works on this host (pathctl caps), and once with auto.
set -euo pipefail
BUILD=${1:-build}
ROUNDS=${2:-400000}
REPEATS=${3:-3}
shift $(( $# < 3 ? $# : 3 ))
RATES=${*:-"10 25 50 100 200"}
EXE=$BUILD/bin/example_hotloop_static
PATHCTL=$BUILD/bin/pathctl
for f in "$EXE" "$PATHCTL"; do
  [[ -x $f ]] || { echo "missing $f: cmake --build $BUILD --target pathctl example_hotloop_static" >&2; exit 2; }
done
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# Runs the program once; with $1 non-empty, attaches `pathctl bursts $1` to it.
# Prints "wall cpu collector_cpu" in seconds.
run_once() {
  local flags=$1
  /usr/bin/time -f "%e %U %S" -o "$TMP/target" "$EXE" "$ROUNDS" &
  local tp=$!
  local pid=""
  for _ in $(seq 1 200); do
    pid=$(cat "/proc/$tp/task/$tp/children" 2>/dev/null | awk '{print $1}')
    [[ -n $pid ]] && break
    sleep 0.005
  done
  local ccpu=0
  if [[ -n $flags && -n $pid ]]; then
    # shellcheck disable=SC2086
    /usr/bin/time -f "%U %S" -o "$TMP/collector" "$PATHCTL" bursts --pid "$pid" --top 0 $flags \
      2>"$TMP/log" >/dev/null || true
    ccpu=$(awk 'END {print $1 + $2}' "$TMP/collector")
  fi
  wait "$tp"
  awk -v c="$ccpu" 'END {printf "%s %.3f %s\n", $1, $2 + $3, c}' "$TMP/target"
}

# Median of REPEATS runs (by CPU time), as "wall cpu collector_cpu".
measure() {
  for _ in $(seq 1 "$REPEATS"); do run_once "$1"; done | sort -k2 -n | awk -v n="$REPEATS" 'NR == int((n + 1) / 2)'
}

read -r BASE_WALL BASE_CPU _ < <(measure "")
printf "baseline: %s rounds, wall %.2f s, cpu %.2f s (median of %s)\n" "$ROUNDS" "$BASE_WALL" "$BASE_CPU" "$REPEATS"
printf "%-14s %12s %12s %16s %s\n" "bursts/s" "cpu ratio" "wall ratio" "collector cpu" "collector log (last run)"
report() {
  local label=$1 flags=$2
  read -r wall cpu ccpu < <(measure "$flags")
  printf "%-14s %12.3f %12.3f %15.1f%% %s\n" "$label" "$(echo "$cpu / $BASE_CPU" | bc -l)" \
    "$(echo "$wall / $BASE_WALL" | bc -l)" "$(echo "100 * $ccpu / $BASE_CPU" | bc -l)" \
    "$(grep -o '[0-9]* windows\|stopped [0-9.]*%' "$TMP/log" | tr '\n' ' ')"
}
for r in $RATES; do report "$r" "--rate $r --max-stopped 1"; done
report "default(20)" "--seed 1"
caps=$("$PATHCTL" caps --json 2>/dev/null || true)
for mode in breakpoints int3 step; do
  if grep -q "\"$mode\":{\"works\":true" <<<"$caps"; then
    report "default $mode" "--seed 1 --step-mode $mode"
  else
    printf "%-14s (does not work here)\n" "default $mode"
  fi
done
