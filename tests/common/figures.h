// Full-size measurements or the suite's small checks of the same behaviour.
//
// A test that exists to produce a figure (an accuracy, an exactness share, an overhead, a flood
// held for a minute) is too slow for `make test`, which must fit its time budget
// (docs/performance.md, "Test-time budget"). Such a test runs at two sizes: in the suite, a small
// check that still fails when the behaviour breaks (40 windows instead of 400, seconds instead of
// a minute); under `make check-figures` (scripts/check-figures.sh, PATHPROF_FIGURES=1), the full
// run that prints the figure and compares it with its bar.
#pragma once

#include <cstdlib>
#include <cstring>

namespace pathprof::testing {

// True when the full-size measurements were asked for (PATHPROF_FIGURES set and not "0").
inline bool FullFigures() {
  const char* v = std::getenv("PATHPROF_FIGURES");
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

// `full` under `make check-figures`, `small` in the suite.
template <typename T>
T FiguresOr(T full, T small) {
  return FullFigures() ? full : small;
}

}  // namespace pathprof::testing

// A measurement with no small version worth running: skipped in the suite, with where it runs.
#define PATHPROF_FIGURES_ONLY()                                                        \
  if (!::pathprof::testing::FullFigures())                                             \
  GTEST_SKIP() << "a measurement: `make check-figures` runs it (PATHPROF_FIGURES=1); " \
                  "the suite runs its small check"
