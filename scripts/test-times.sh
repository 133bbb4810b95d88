#!/usr/bin/env bash
# The slowest tests of the last ctest run in BUILD (Testing/Temporary/LastTest.log), and the
# tests' time summed, against the suite's budget (docs/performance.md, "Test-time budget"), so
# that growth is seen in every run. `make test` and CI print it after ctest, pass or fail.
#
#   test-times.sh BUILD [N]     (N slowest, 10 by default)
set -euo pipefail
build="${1:?usage: test-times.sh BUILD [N]}"
count="${2:-10}"
log="$build/Testing/Temporary/LastTest.log"
if [ ! -f "$log" ]; then
  echo "test-times: no $log (ctest has not run in $build)"
  exit 0
fi
# One record per test: "seconds name".
times="$(awk '/^[0-9]+\/[0-9]+ Test: / { sub(/^[0-9]+\/[0-9]+ Test: /, ""); name = $0 }
              /^Test time = / { print $4, name }' "$log" | sort -rn)"
echo "The $count slowest tests of the last run ($log):"
printf '%s\n' "$times" | head -n "$count" | awk '{ printf "  %8.1f s  %s\n", $1, $2 }'
printf '%s\n' "$times" | awk '{ sum += $1; n++ }
  END { printf "%d tests, %.0f s of test time in all (%.1f min; two at a time on two cores)\n",
               n, sum, sum / 60 }'
