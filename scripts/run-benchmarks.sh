#!/usr/bin/env bash
# Runs every Google Benchmark executable of a build (default build/), one after another so they
# do not compete for the 2 cores, and keeps their JSON beside the console output.
set -euo pipefail
build=${1:-build}
out=${BENCH_OUT:-$build/bench-results}
mkdir -p "$out"
for b in "$build"/bin/*_bench; do
  [ -x "$b" ] || continue
  name=$(basename "$b")
  echo "== $name"
  "$b" --benchmark_out="$out/$name.json" --benchmark_out_format=json ${BENCH_ARGS:-}
done
