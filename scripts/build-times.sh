#!/usr/bin/env bash
# Where a build's time went, from ninja's own log (BUILD/.ninja_log): each step's duration
# summed by kind (test objects, each stage's objects, links, fuzzers, ...) and the slowest steps.
# Durations are wall time per step; with -jN, N run at once, so the sum is about the build's
# CPU time and the wall time is the first start to the last end. A rebuild lists a step again:
# the newest entry of each output is kept.
#
#   build-times.sh BUILD [N]     (N slowest steps, 15 by default)
set -euo pipefail
build="${1:?usage: build-times.sh BUILD [N]}"
count="${2:-15}"
log="$build/.ninja_log"
[ -f "$log" ] || { echo "build-times: no $log"; exit 1; }
# One line per step: seconds, kind, output, start ms, end ms (tab-separated). A custom command's
# outputs are logged under their absolute paths as well as relative ones (the fuzzers' objects
# and links): the build folder's own prefix is taken off, so such a step counts once.
abs="$(cd "$build" && pwd -P)"
steps="$(awk -F'\t' -v abs="$abs/" '
  /^#/ { next }
  { out = $4; if (index(out, abs) == 1) out = substr(out, length(abs) + 1)
    start[out] = $1; end[out] = $2 }
  END {
    for (out in end) {
      kind = "other"
      if (out ~ /^bin\/[^\/]*_test$/ || out ~ /^bin\/pathprof_test_pch$/) kind = "link: test executables"
      else if (out ~ /^bin\/[^\/]*_bench$/ || out ~ /^bin\/pathprofd_load$/) kind = "link: benchmarks"
      else if (out ~ /^bin\/[^\/]*_fuzz$/) kind = "fuzzers: links (clang)"
      else if (out ~ /^tests\/fuzz\/objects\//) kind = "fuzzers: objects (clang)"
      else if (out ~ /^bin\/example_/ || out ~ /^examples\//) kind = "examples (compile+link)"
      else if (out ~ /^bin\//) kind = "link: programs (pathctl, pathprofd, ...)"
      else if (out ~ /\.(a|so)$/) kind = "archive: stage libraries"
      else if (out ~ /cmake_pch/) kind = "precompiled headers"
      else if (out ~ /^tests\//) kind = "compile: tests"
      else if (out ~ /^bench\//) kind = "compile: benchmarks"
      else if (out ~ /\.pb\.(cc|h)$/) kind = "protoc"
      else if (out ~ /\.o$/) { split(out, p, "/"); kind = "compile: " p[1] }
      printf "%.3f\t%s\t%s\t%d\t%d\n", (end[out] - start[out]) / 1000, kind, out, start[out], end[out]
    }
  }' "$log")"
printf '%-44s %6s %9s %6s\n' kind steps seconds share
printf '%s\n' "$steps" | awk -F'\t' '
  { sum[$2] += $1; n[$2]++; total += $1 }
  END { for (k in sum) printf "%.1f\t%s\t%d\t%.1f\n", sum[k], k, n[k], 100 * sum[k] / total }' |
  sort -t$'\t' -k1,1 -rn | awk -F'\t' '{ printf "%-44s %6d %9.1f %5.1f%%\n", $2, $3, $1, $4 }'
printf '%s\n' "$steps" | awk -F'\t' '
  { total += $1; if ($5 > last) last = $5; if (NR == 1 || $4 < first) first = $4 }
  END { printf "%-44s %6d %9.1f\n%-44s %16.1f\n", "all steps (about the CPU time)", NR, total,
               "wall (first start to last end)", (last - first) / 1000 }'
echo "The $count slowest steps:"
printf '%s\n' "$steps" | sort -t$'\t' -k1,1 -rn | head -n "$count" |
  awk -F'\t' '{ printf "  %7.1f s  %s\n", $1, $3 }'
