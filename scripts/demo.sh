#!/usr/bin/env bash
# `make demo`: shows the path engine finding the hot paths of bundled synthetic programs and how
# close a 512-entry, 4-way Hot Path Table gets to the exact profile.
# usage: scripts/demo.sh BUILD_DIR
set -euo pipefail
build="${1:?usage: scripts/demo.sh BUILD_DIR}"
pathctl="$build/bin/pathctl"
[[ -x "$pathctl" ]] || { echo "demo: $pathctl not built (run make)" >&2; exit 1; }

for workload in branchy large; do
  echo "=== pathctl sim --workload $workload --branches 20000000 --top 10"
  "$pathctl" sim --workload "$workload" --seed 1 --branches 20000000 --top 10
  echo
done
echo "Columns: start address of the path, its length in branches, one outcome bit per branch"
echo "(1 = taken or unconditional, first branch first), the HPT's count and share, the exact"
echo "count and rank, and the relative error. 'large' has far more warm paths than the table"
echo "holds, so its overlap is low: see docs/hwmodel.md."
