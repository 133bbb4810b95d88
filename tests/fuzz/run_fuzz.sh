#!/bin/sh
# Runs one libFuzzer target as a CTest test (pathprof_add_fuzzer in CMakeLists.txt).
# Seeds in the repository (tests/fuzz/seeds/...) always go in. Folders of the shared corpus,
# written corpus:REL, go in only when they exist when the test runs: the corpus is an optional
# extra beside the repository ($PATHPROF_CORPUS_DIR when set, else ../shared/corpus), and a clone
# without it must still pass. libFuzzer exits with an error on a seed folder that is missing,
# which is why a missing one is dropped here, not handed on.
# usage: run_fuzz.sh FUZZER WORK_DIR DEFAULT_CORPUS_DIR [libFuzzer flag | seed dir | corpus:REL]...
# New inputs go to WORK_DIR (created if needed); the seed folders are only read.
# PATHPROF_FUZZ_SECONDS, when set, replaces the -max_total_time the test was configured with:
# .ci/run's second pass (corpus hidden) asks only that each target starts from its seeds and
# passes, which one second shows.
set -eu
fuzzer=$1
work=$2
corpus=${PATHPROF_CORPUS_DIR:-$3}
shift 3
mkdir -p "$work"
# Rebuild the argument list: each argument is shifted off and appended again, or dropped.
for arg; do
  shift
  case $arg in
    corpus:*)
      dir=$corpus/${arg#corpus:}
      if [ -d "$dir" ]; then
        set -- "$@" "$dir"
      else
        echo "corpus absent: $dir; fuzzing from the in-repo seeds only (see tests/README.md)"
      fi
      ;;
    -max_total_time=*) set -- "$@" "-max_total_time=${PATHPROF_FUZZ_SECONDS:-${arg#*=}}" ;;
    *) set -- "$@" "$arg" ;;
  esac
done
exec "$fuzzer" "$work" "$@"
