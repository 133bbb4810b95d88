#!/usr/bin/env bash
# Whole-process comparison: LBR reconstruction of a perf.data file by `pathctl analyze` versus
# `perf script -F ip,brstackinsn` (which reconstructs the same fall-through instructions).
# Both read the same file with the same binaries; each runs RUNS times; CPU time (user+sys) and
# wall time are reported, and the ratio perf/pathctl. A third row runs `pathctl analyze
# --decode-only` (reconstruction without the path engine, OSP and stats), the part that does the
# same work as perf script.
#
#   scripts/bench-lbr-vs-perf.sh [BUILD_DIR] [RUNS]
set -euo pipefail
BUILD=${1:-build}
RUNS=${2:-10}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CORPUS=$ROOT/../shared/corpus/lbr/autofdo
PATHCTL=$ROOT/$BUILD/bin/pathctl
[ -x "$PATHCTL" ] || { echo "build pathctl first: cmake --build $BUILD --target pathctl" >&2; exit 1; }
command -v perf >/dev/null || { echo "perf not installed (Debian: linux-perf)" >&2; exit 1; }

SYMFS=$(mktemp -d)
trap 'rm -rf "$SYMFS"' EXIT
PROP=/build/work/11ef31a2a8be9640fa8d4c917e76f0db3923/google3/blaze-out/k8-opt/genfiles/devtools/crosstool/autofdo/testdata/propeller_sample_1.bin.gen
mkdir -p "$SYMFS$(dirname $PROP)" "$SYMFS/export/hda3/tmp"
cp "$CORPUS/propeller_sample_1.bin" "$SYMFS$PROP"
cp "$CORPUS/test.binary" "$SYMFS/export/hda3/tmp/test.binary"

# Prints "user+sys wall" seconds summed over RUNS runs of the command.
measure() {
  local start end
  start=$(date +%s.%N)
  local t
  t=$( { TIMEFORMAT='%U %S'; time (for _ in $(seq "$RUNS"); do "$@" >/dev/null 2>&1; done); } 2>&1 )
  end=$(date +%s.%N)
  awk -v t="$t" -v s="$start" -v e="$end" 'BEGIN{split(t,a," "); printf "%.3f %.3f\n", a[1]+a[2], e-s}'
}

for f in propeller_sample_1.perfdata1 test.lbr; do
  records=$("$PATHCTL" analyze "$CORPUS/$f" --binary-dir "$SYMFS" | awk '$1=="lbr_entries"{print $2}')
  read -r p_cpu p_wall < <(measure perf script -i "$CORPUS/$f" -F ip,brstackinsn --symfs "$SYMFS")
  read -r o_cpu o_wall < <(measure "$PATHCTL" analyze "$CORPUS/$f" --binary-dir "$SYMFS")
  read -r d_cpu d_wall < <(measure "$PATHCTL" analyze "$CORPUS/$f" --binary-dir "$SYMFS" --decode-only)
  awk -v f="$f" -v n="$RUNS" -v r="$records" -v pc="$p_cpu" -v pw="$p_wall" -v oc="$o_cpu" -v ow="$o_wall" \
      -v dc="$d_cpu" -v dw="$d_wall" 'BEGIN{
    printf "%s: %d branch records, %d runs each\n", f, r, n;
    printf "  perf script -F ip,brstackinsn: cpu %.1f ms/run  wall %.1f ms/run  %.2f M records/s (cpu)\n", pc*1000/n, pw*1000/n, r*n/pc/1e6;
    printf "  pathctl analyze:               cpu %.1f ms/run  wall %.1f ms/run  %.2f M records/s (cpu)\n", oc*1000/n, ow*1000/n, r*n/oc/1e6;
    printf "  pathctl analyze --decode-only: cpu %.1f ms/run  wall %.1f ms/run  %.2f M records/s (cpu)\n", dc*1000/n, dw*1000/n, r*n/dc/1e6;
    printf "  ratio perf/pathctl: cpu %.1fx  wall %.1fx; decode-only: cpu %.1fx  wall %.1fx\n", pc/oc, pw/ow, pc/dc, pw/dw }'
done
