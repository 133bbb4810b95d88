#!/usr/bin/env bash
# `make check-figures`: the measurements behind docs/performance.md's figures, full size, each
# compared with its bar by the test that makes it. They are gtest tests run with
# PATHPROF_FIGURES=1 (tests/common/figures.h): in `make test` the same tests run small (40
# windows instead of 400, seconds instead of a minute) or skip, so that the suite fits its time
# budget; here they run as long as the figure needs (minutes each, an hour in all on a 2-core
# host whose debug registers do not fire). Run it before a performance claim; CI does not.
#
#   check-figures.sh BUILD [NAME...]    (NAME: run only the measurements whose name contains it)
#
# Each run's whole output is kept in BUILD/figures/NAME.log; a summary (pass or fail against the
# bar, wall time, the lines that carry the figures) is printed at the end. Exit 1 if any failed.
set -uo pipefail
build="$(cd "${1:?usage: check-figures.sh BUILD [NAME...]}" && pwd)"
shift
only=("$@")

# name | test executable | gtest filter | what it measures
measurements=(
  "emulated_windows|stepping_emulated_windows_test|*|400 emulated windows per program identical to single steps (examples 99.9%, Debian 99%), 95% complete"
  "burst_accuracy|stepping_ptrace_bursts_accuracy_test|*|hot paths of bursts against exact traces: hot loop 85% overlap, zstd 98% of the top 5"
  "osp_examples|collectors_osp_accuracy_test|Examples/OspExampleAccuracy.*|OSP on exact traces of FFT (16 rounds) and heap sort: top 5, median error <= 2%"
  "exec_loop|daemon_hostile_user_test|HostileExec.*|a target exec'ing in a loop for a minute: daemon RSS flat"
  "snapshot_accuracy|collectors_snapshot_windows_accuracy_test|SnapshotWindowsAccuracy.Zstd*|snapshot windows' hot paths of zstd against its exact trace (98% is the bar hybrid windows meet; the test guards 15%)"
  "hybrid_accuracy|pipeline_hybrid_source_test|HybridSource.*MatchTheExactTrace:Levels/HybridZstdAccuracy.*|hybrid windows' hot paths of zstd (-3, -19) and python3 against exact traces: 98% of the top 5"
  "glibc_variants|emulator_glibc_string_test|GlibcStrings/OtherVariantsMatchTheCpu.*|glibc's avx2, sse4 and sse2 string functions emulated on every fifth input"
)

export PATHPROF_FIGURES=1
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:handle_sigill=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
mkdir -p "$build/figures"
summary=()
failed=0
for m in "${measurements[@]}"; do
  IFS='|' read -r name exe filter what <<<"$m"
  if [ "${#only[@]}" -gt 0 ]; then
    wanted=0
    for o in "${only[@]}"; do [[ "$name" == *"$o"* ]] && wanted=1; done
    [ "$wanted" = 1 ] || continue
  fi
  bin="$build/bin/$exe"
  if [ ! -x "$bin" ]; then
    summary+=("$(printf '%-18s %-6s %6s  %s' "$name" "MISSING" "-" "$exe not built in $build")")
    failed=1
    continue
  fi
  log="$build/figures/$name.log"
  echo "=== $name: $what"
  start=$(date +%s)
  "$bin" --gtest_filter="$filter" --gtest_color=no 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  took=$(($(date +%s) - start))
  result=PASS
  if [ "$rc" -ne 0 ]; then
    result=FAIL
    failed=1
  fi
  summary+=("$(printf '%-18s %-6s %5ss  %s' "$name" "$result" "$took" "$what")")
done

echo
echo "check-figures: each measurement against its bar (logs in $build/figures/)"
printf '%s\n' "${summary[@]}"
exit "$failed"
