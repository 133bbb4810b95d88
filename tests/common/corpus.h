// Where tests find the corpus of real traces recorded by others (perf.data files, their
// binaries, crash inputs; see tests/README.md), and how they skip when it is not there.
//
// The corpus is an optional extra that sits beside the repository (../shared/corpus), not in
// it: it is not ours to redistribute, and a fresh clone must build and pass `make test` on its
// own. So a test that reads it checks first and reports itself skipped, naming the missing path,
// instead of throwing or failing on a file that was never promised to be there.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#ifndef PATHPROF_SHARED_DIR
#error "PATHPROF_SHARED_DIR is defined for every test by pathprof_add_test (tests/CMakeLists.txt)"
#endif

namespace pathprof::testing {

// The corpus directory: $PATHPROF_CORPUS_DIR when set and not empty (a corpus kept elsewhere,
// or a path that does not exist, to check that the tests skip cleanly without one), else
// ../shared/corpus beside the source tree. Read on each call: tests do not cache the
// environment of the build.
inline std::string CorpusDir() {
  const char* env = std::getenv("PATHPROF_CORPUS_DIR");
  if (env != nullptr && *env != '\0') return env;
  return PATHPROF_SHARED_DIR "/corpus";
}

// `relative` (a file or a folder, e.g. "lbr/autofdo/test.binary") under the corpus directory.
inline std::string CorpusPath(const std::string& relative) {
  return CorpusDir() + "/" + relative;
}

// Whether `relative` exists under the corpus directory. An error reading it (a permission
// refused) counts as absent: the test then skips and names the path, rather than throwing.
inline bool CorpusHas(const std::string& relative) {
  std::error_code ec;
  return std::filesystem::exists(CorpusPath(relative), ec);
}

}  // namespace pathprof::testing

// Skips the current test, naming the full path, when `relative` (a file or folder under the
// corpus directory) is missing. Use it in the TEST body or a fixture's SetUp, before anything
// touches the corpus: GTEST_SKIP returns from the function it is written in, so inside a helper
// it would skip nothing.
#define PATHPROF_SKIP_WITHOUT_CORPUS(relative)                                   \
  do {                                                                           \
    const std::string pathprof_corpus_relative_ = (relative);                    \
    if (!::pathprof::testing::CorpusHas(pathprof_corpus_relative_))              \
      GTEST_SKIP() << "corpus absent: "                                          \
                   << ::pathprof::testing::CorpusPath(pathprof_corpus_relative_) \
                   << "; see tests/README.md";                                   \
  } while (0)
