#!/usr/bin/env bash
# What emulated windows cost the programs they watch, and what they yield (docs/performance.md,
# "Emulated windows"): each program runs a fixed amount of work untraced and traced, in
# interleaved pairs (baseline, traced) so that drift of the host cancels out; the traced run
# has `pathctl COMMAND -p PID` (bursts: branch windows only; run: windows, eBPF stacks and the
# whole pipeline, as a user runs it) attached for its whole life at pathctl's defaults (auto:
# emulated windows where the probe finds them exact). Per pair: the target's CPU time (perf stat
# task-clock) and wall time as traced/baseline ratios, the collector's CPU (pathctl and its
# tracer, from time(1)) as a share of the target's, and windows per second. Each line is the
# median of REPEATS pairs. The target and the collector are not pinned: both CPUs of a 2-CPU VM
# are theirs, as on a user's host; run it on a quiet host.
#   usage: scripts/bench-emulated-windows.sh [BUILD_DIR] [REPEATS] [COMMAND] [PROGRAMS...]
#   COMMAND: bursts (default) or run; PROGRAMS: hotloop zstd python3 (default: all three), and
#   lua: Debian's lua5.4 as scripts/bench-bolt-loop.sh builds it (LUA=path, default that
#   script's $WORK/lua.plain) on bench/workloads/lua_mixed.lua, the optimizer loop's workload
set -euo pipefail
BUILD=${1:-build}
REPEATS=${2:-5}
COMMAND=${3:-bursts}
shift $(( $# < 3 ? $# : 3 ))
PROGRAMS=${*:-"hotloop zstd python3"}
PATHCTL=$BUILD/bin/pathctl
REPO=$(cd "$(dirname "$0")/.." && pwd)
LUA=${LUA:-${WORK:-/tmp/pathprof-bolt-loop}/lua.plain}
[[ -x $PATHCTL ]] || { echo "missing $PATHCTL: cmake --build $BUILD --target pathctl" >&2; exit 2; }
command -v perf >/dev/null || { echo "perf not installed (Debian: linux-perf)" >&2; exit 2; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# A text-like input for zstd, the same every run.
python3 -c '
import random
random.seed(7)
words = ["w%d" % random.randrange(3000) for _ in range(1 << 21)]
open("'"$TMP"'/input.txt", "w").write(" ".join(words))'
cat >"$TMP/work.py" <<'EOF'
d = {}
for i in range(3_000_000):
    d[i % 1000] = d.get(i % 7, 0) + len(str(i))
EOF

# The command line of each program (about 3-6 s of work here) and the name pgrep finds it by.
argv_of() {
  case $1 in
    hotloop) echo "$BUILD/bin/example_hotloop_static 1500000" ;;
    zstd) echo "/usr/bin/zstd -q -19 --single-thread -c -f $TMP/input.txt -o /dev/null" ;;
    python3) echo "/usr/bin/python3 $TMP/work.py" ;;
    lua) echo "$LUA $REPO/bench/workloads/lua_mixed.lua 800" ;;
  esac
}
comm_of() {
  case $1 in
    hotloop) echo example_hotloop ;;
    lua) basename "$LUA" | cut -c1-15 ;;
    *) echo "$1" ;;
  esac
}

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# One run; with traced=1, `pathctl COMMAND -p PID` attached for its whole life.
# Prints "target_cpu_ms wall_s collector_cpu_s windows elapsed_s".
run_once() {
  local program=$1 traced=$2 t0 t1 ccpu=0 windows=0 elapsed=0
  # shellcheck disable=SC2046
  t0=$(now)
  perf stat -x, -e task-clock -o "$TMP/stat" $(argv_of "$program") >/dev/null &
  local wrapper=$!
  if [[ $traced == 1 ]]; then
    local pid=""
    for _ in $(seq 1 400); do
      pid=$(pgrep -P "$wrapper" -x "$(comm_of "$program")" 2>/dev/null || true)
      [[ -n $pid ]] && break
      sleep 0.005
    done
    if [[ $COMMAND == bursts ]]; then
      /usr/bin/time -f "%U %S" -o "$TMP/collector" "$PATHCTL" bursts --pid "$pid" --top 0 \
        2>"$TMP/log" >/dev/null || true
      windows=$(sed -n 's/.*[0-9] bursts, \([0-9]*\) windows.*/\1/p' "$TMP/log" | head -1)
      elapsed=$(sed -n 's/^pathctl bursts: \([0-9.]*\) s,.*/\1/p' "$TMP/log" | head -1)
    else
      /usr/bin/time -f "%U %S %e" -o "$TMP/collector" "$PATHCTL" run --pid "$pid" \
        >"$TMP/log" 2>&1 || true
      windows=$(sed -n 's/.* stack samples, \([0-9]*\) windows.*/\1/p' "$TMP/log" | head -1)
      elapsed=$(awk 'END {print $3}' "$TMP/collector")
    fi
    ccpu=$(awk 'END {print $1 + $2}' "$TMP/collector")
  fi
  wait "$wrapper"
  t1=$(now)
  echo "$(awk -F, '/task-clock/ {print $1}' "$TMP/stat") $(echo "$t1 - $t0" | bc) $ccpu" \
    "${windows:-0} ${elapsed:-0}"
}

printf "%-8s %-6s %9s %10s %10s %16s %12s\n" program with "cpu ratio" "wall ratio" \
  "windows/s" "collector/target" "early ends"
for program in $PROGRAMS; do
  argv=$(argv_of "$program")
  [[ -x ${argv%% *} ]] || { echo "$program: ${argv%% *} not installed, skipped"; continue; }
  : >"$TMP/pairs"
  for _ in $(seq 1 "$REPEATS"); do
    read -r bcpu bwall _ <<<"$(run_once "$program" 0)"
    read -r tcpu twall ccpu windows elapsed <<<"$(run_once "$program" 1)"
    echo "$(echo "$tcpu / $bcpu" | bc -l) $(echo "$twall / $bwall" | bc -l)" \
      "$(echo "$windows / ($elapsed + 0.000001)" | bc -l)" \
      "$(echo "1000 * $ccpu / $tcpu" | bc -l)" >>"$TMP/pairs"
  done
  cpu=$(awk '{print $1}' "$TMP/pairs" | median)
  wall=$(awk '{print $2}' "$TMP/pairs" | median)
  rate=$(awk '{print $3}' "$TMP/pairs" | median)
  share=$(awk '{print $4}' "$TMP/pairs" | median)
  ends=$(grep -o "ended:.*" "$TMP/log" | head -1 | cut -c1-60 || true)
  printf "%-8s %-6s %9.3f %10.3f %10.0f %15.1f%% %s\n" "$program" "$COMMAND" "$cpu" "$wall" \
    "$rate" "$(echo "100 * $share" | bc -l)" "${ends:--}"
done
