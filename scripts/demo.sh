#!/usr/bin/env bash
# `make demo`: profiles a real program with the embedded pipeline, then shows the path engine on
# bundled synthetic programs. Bounded: after the build it ends within a minute, whatever the host.
#  1. `pathctl run --duration 5` on examples/hotloop (hot(): a 2000-iteration loop whose body
#     takes two paths 3:1, hotloop.c lines 12-22; warm(): a 500-iteration loop, lines 25-31):
#     eBPF stack samples give the calling context tree and hot methods; the best branch source
#     this host has (PT > LBR > ptrace bursts; ptrace bursts on a VM) gives the hot paths.
#  2. `pathctl sim`: how close a 512-entry, 4-way Hot Path Table gets to the exact profile.
# Exits non-zero, saying what was missing, when step 1 collected no branch windows or no stack
# samples, or its hot paths do not name hot() and warm(); it explains only what it printed.
# usage: scripts/demo.sh BUILD_DIR
set -uo pipefail
build="${1:?usage: scripts/demo.sh BUILD_DIR}"
pathctl="$build/bin/pathctl"
example="$build/bin/example_hotloop"
[[ -x "$pathctl" && -x "$example" ]] || { echo "demo: $pathctl or $example not built" >&2; exit 1; }
if [[ "$(id -u)" -ne 0 ]]; then
  echo "demo: needs root (eBPF stack sampling and ptrace of the example); run: sudo make demo" >&2
  exit 1
fi

report="$(mktemp)"
trap 'rm -f "$report"' EXIT
echo "=== pathctl run --duration 5 --top 5 -- $example"
# run returns within duration + 2 s; the timeout is a last resort against a wedged host.
timeout -k 5 20 "$pathctl" run --duration 5 --top 5 -- "$example" | tee "$report"
rc=${PIPESTATUS[0]}
echo
if [[ $rc -ne 0 ]]; then
  echo "demo: FAILED: pathctl run exited with status $rc (see its message above)" >&2
  exit 1
fi
# The accounting table's first row: SESSION PID STACKS WINDOWS ...
read -r stacks windows < <(awk '/^SESSION +PID +STACKS +WINDOWS/ { getline; print $3, $4; exit }' "$report")
missing=()
[[ "${windows:-0}" -gt 0 ]] || missing+=("no branch windows were collected (see the 'source:' line above; 'pathctl caps' says why)")
[[ "${stacks:-0}" -gt 0 ]] || missing+=("no eBPF stack samples were collected (see the 'source:' line above)")
paths="$(sed -n '/^hot paths/,/^$/p' "$report")"
grep -q 'hot+.*(hotloop.c:' <<<"$paths" || missing+=("the hot paths do not name hot() in hotloop.c")
grep -q 'warm+.*(hotloop.c:' <<<"$paths" || missing+=("the hot paths do not name warm() in hotloop.c")
if [[ ${#missing[@]} -gt 0 ]]; then
  printf 'demo: FAILED: %s\n' "${missing[@]}" >&2
  exit 1
fi
echo "Hot paths: share of the estimated traversals, the estimate (± the 95% interval), length in"
echo "branches, where the path starts as function+offset (file:line), one outcome per branch (T taken,"
echo "N not taken); 'pathctl paths' of a daemon session lists each path's blocks."
echo "The hottest are the loop bodies of hot() and warm() in hotloop.c, from $windows branch"
echo "windows; the calling context tree and hot methods come from $stacks stack samples."
echo

for workload in branchy large; do
  echo "=== pathctl sim --workload $workload --branches 20000000 --top 10"
  timeout -k 5 20 "$pathctl" sim --workload "$workload" --seed 1 --branches 20000000 --top 10 ||
    { echo "demo: FAILED: pathctl sim --workload $workload" >&2; exit 1; }
  echo
done
echo "Columns: start address of the path, its length in branches, one outcome bit per branch"
echo "(1 = taken or unconditional, first branch first), the HPT's count and share, the exact"
echo "count and rank, and the relative error. 'large' has far more warm paths than the table"
echo "holds, so its overlap is low: see docs/hwmodel.md."
