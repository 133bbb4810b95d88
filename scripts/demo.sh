#!/usr/bin/env bash
# `make demo`: profiles a real program with the embedded pipeline, then shows the path engine on
# bundled synthetic programs.
#  1. `pathctl run` on examples/hotloop (hot(): a 2000-iteration loop whose body takes two paths
#     3:1, hotloop.c lines 12-22; warm(): a 500-iteration loop, lines 25-31): eBPF stack samples
#     give the calling context tree and hot methods, and the best branch source this host has
#     (PT > LBR > ptrace bursts; ptrace bursts on a VM) gives the hot paths, subpaths and call
#     pairs. The printed hot paths name hot()/warm() and their hotloop.c lines. Needs root.
#  2. `pathctl sim`: how close a 512-entry, 4-way Hot Path Table gets to the exact profile.
# usage: scripts/demo.sh BUILD_DIR
set -euo pipefail
build="${1:?usage: scripts/demo.sh BUILD_DIR}"
pathctl="$build/bin/pathctl"
example="$build/bin/example_hotloop"
[[ -x "$pathctl" ]] || { echo "demo: $pathctl not built (run make)" >&2; exit 1; }

if [[ -x "$example" && "$(id -u)" -eq 0 ]]; then
  echo "=== pathctl run --duration 5 --top 5 -- $example"
  "$pathctl" run --duration 5 --top 5 -- "$example"
  echo
  echo "Hot paths: share of the estimated traversals (± the 95% interval), length in branches,"
  echo "one outcome bit per branch (1 = taken), then the path's blocks as function+offset"
  echo "(file:line). The hottest paths are the loop bodies of hot() and warm() in hotloop.c."
  echo
else
  echo "=== (skipping pathctl run: needs root and $example)"
  echo
fi

for workload in branchy large; do
  echo "=== pathctl sim --workload $workload --branches 20000000 --top 10"
  "$pathctl" sim --workload "$workload" --seed 1 --branches 20000000 --top 10
  echo
done
echo "Columns: start address of the path, its length in branches, one outcome bit per branch"
echo "(1 = taken or unconditional, first branch first), the HPT's count and share, the exact"
echo "count and rank, and the relative error. 'large' has far more warm paths than the table"
echo "holds, so its overlap is low: see docs/hwmodel.md."
