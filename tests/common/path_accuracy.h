// Hot paths of a live source against the exact trace of the same deterministic program.
//
// The reference is the steady-state mix of one round: the exact trace (stepping's TraceExact,
// Ball-Larus preset) of a run of two rounds less that of a run of one, so that start-up and exit
// cancel as they do in a long run. The metrics are profiles/accuracy.h's, computed here on path
// shares (tests of the collectors and stepping stages do not link profiles): the overlap (sum
// over paths of the smaller share) and the issue's "top-5 path weight overlap" (of the exact
// trace's five heaviest paths' weight, the share the estimate gives them too). For tests that
// link pathprof_stepping and pathprof_hwmodel.
#pragma once

#include <sys/personality.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "pathprof/core/status.h"
#include "pathprof/hwmodel/exact_path_profile.h"
#include "pathprof/hwmodel/path_stack.h"
#include "pathprof/hwmodel/window_estimator.h"
#include "pathprof/stepping/exact_tracer.h"

namespace pathprof::testing {

using PathShares = std::unordered_map<hwmodel::PathDescriptor, double, hwmodel::PathDescriptorHash>;

inline PathShares NormalizeShares(
    const std::vector<std::pair<hwmodel::PathDescriptor, double>>& weights) {
  double total = 0;
  for (const auto& [p, w] : weights) total += w;
  PathShares s;
  if (total <= 0) return s;
  for (const auto& [p, w] : weights) s[p] += w / total;
  return s;
}

// The estimator's paths as shares of its total.
inline PathShares SharesOf(const hwmodel::WindowEstimator& est) {
  std::vector<std::pair<hwmodel::PathDescriptor, double>> w;
  for (const auto& e : est.Estimates()) w.emplace_back(e.path, e.estimate);
  return NormalizeShares(w);
}

inline double Overlap(const PathShares& a, const PathShares& b) {
  double sum = 0;
  for (const auto& [p, share] : a) {
    auto it = b.find(p);
    if (it != b.end()) sum += std::min(share, it->second);
  }
  return sum;
}

inline std::vector<std::pair<hwmodel::PathDescriptor, double>> TopPaths(const PathShares& s,
                                                                        size_t k) {
  std::vector<std::pair<hwmodel::PathDescriptor, double>> v(s.begin(), s.end());
  std::sort(v.begin(), v.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
  if (v.size() > k) v.resize(k);
  return v;
}

// Of the exact trace's k heaviest paths' weight, the share `estimate` gives them too (each
// path counted up to its exact share).
inline double TopOverlap(const PathShares& exact, const PathShares& estimate, size_t k = 5) {
  double top = 0, common = 0;
  for (const auto& [p, share] : TopPaths(exact, k)) {
    top += share;
    auto it = estimate.find(p);
    if (it != estimate.end()) common += std::min(share, it->second);
  }
  return top > 0 ? common / top : 0;
}

// Runs `run` with address space randomization off for the processes it starts (the
// personality is inherited through fork and exec), then restores this process's personality.
template <typename Run>
auto WithoutRandomization(Run run) {
  const int previous = personality(0xffffffff);
  if (previous != -1) personality(static_cast<unsigned long>(previous) | ADDR_NO_RANDOMIZE);
  auto result = run();
  if (previous != -1) personality(static_cast<unsigned long>(previous));
  return result;
}

// Exact path counts (Ball-Larus preset) of a run of `argv`, start-up and exit included, with
// address space randomization off for every process of the run: the workloads start through
// wrappers (sh, env, setarch) whose own start-up must land at the same addresses in every run
// to cancel in ExactRoundShares (`setarch -R` fixes only what it execs). A run the trace broke
// (exit status not 0) is no ground truth: an error.
inline Result<hwmodel::ExactPathProfile> ExactProfile(const std::vector<std::string>& argv) {
  PATHPROF_ASSIGN_OR_RETURN(auto stack, hwmodel::PathStack::Create(hwmodel::BallLarusPreset()));
  hwmodel::ExactPathProfile profile;
  stepping::ExactTraceSink sink;
  sink.on_batch = [&](const BranchBatch& b) {
    stack.ProcessBatch(b, [&](const hwmodel::CompletedPath& p) { profile.Record(p); });
    return Status::Ok();
  };
  stepping::ExactTraceOptions options;
  options.argv = argv;
  options.step_mode = stepping::ExactStepMode::kBlocks;  // breakpoint legs where they work
  PATHPROF_ASSIGN_OR_RETURN(
      auto stats, WithoutRandomization([&] { return stepping::TraceExact(options, sink); }));
  if (stats.exit_code != 0)
    return Error(ErrorCode::kInternal, "exact trace of " + argv.back() + " exited with " +
                                           std::to_string(stats.exit_code));
  return profile;
}

// The steady-state mix of one round: run(two_rounds) - run(one_round). The programs are
// deterministic but for the loader's and libc's own bookkeeping (the environment, malloc's
// heap growth), which can differ by a traversal or two of a few paths between runs: zstd -3
// on its 32 KiB text, 24 paths in ld.so, libc and zstd's set-up, 60 traversals against a
// round of 43,532 (0.14%). More than 0.5% of a round fewer with two rounds (a path the
// one-round run took more often, or took and the two-round run never did) means the difference
// is not one round: an error. (A wrapper whose start-up ran at random addresses made 17% of
// zstd -19's "round" out of paths the one-round run took elsewhere, which this check, counting
// only the two-round run's paths then, did not see.)
inline Result<PathShares> ExactRoundShares(const std::vector<std::string>& two_rounds,
                                           const std::vector<std::string>& one_round) {
  PATHPROF_ASSIGN_OR_RETURN(auto two, ExactProfile(two_rounds));
  PATHPROF_ASSIGN_OR_RETURN(auto one, ExactProfile(one_round));
  std::vector<std::pair<hwmodel::PathDescriptor, double>> w;
  double round = 0, negative = 0;
  for (const auto& [p, m] : two.paths()) {
    const double d = static_cast<double>(m.count) - static_cast<double>(one.Get(p).count);
    if (d > 0) {
      w.emplace_back(p, d);
      round += d;
    } else {
      negative -= d;
    }
  }
  for (const auto& [p, m] : one.paths())
    if (two.Get(p).count == 0) negative += static_cast<double>(m.count);
  if (negative > 5e-3 * round)
    return Error(ErrorCode::kInternal,
                 "run(2) - run(1) is not one round: " + std::to_string(negative) +
                     " traversals fewer with two rounds, of " + std::to_string(round));
  return NormalizeShares(w);
}

// The exact trace's and the estimate's five hottest paths, for the log.
inline void PrintTop5(const PathShares& exact, const PathShares& estimate,
                      const char* label = "windows") {
  const auto exact_top = TopPaths(exact, 5);
  const auto top = TopPaths(estimate, 5);
  for (size_t i = 0; i < exact_top.size(); ++i)
    std::printf("exact   #%zu %5.1f%% %s\n", i + 1, 100 * exact_top[i].second,
                hwmodel::FormatPathDescriptor(exact_top[i].first).c_str());
  for (size_t i = 0; i < top.size(); ++i)
    std::printf("%-7s #%zu %5.1f%% %s\n", label, i + 1, 100 * top[i].second,
                hwmodel::FormatPathDescriptor(top[i].first).c_str());
}

// The zstd workload of the accuracy tests: a text of `text_bytes` (32 KiB unless a test names
// another; `dir`/x, the same bytes every time)
// compressed by Debian's zstd at `level` (-3 unless a test names another) with ASLR off (setarch
// -R), so that zstd and libzstd sit at the same addresses in every run. `files` names of the text
// make `files` rounds (the context reused, as a long run does it); a list of `list_files` names
// (`dir`/list, --filelist) makes a long run (a command line holds at most 128 KiB).
inline void WriteZstdText(const std::string& dir, int list_files, int text_bytes = 32 * 1024) {
  {
    std::ofstream text(dir + "/x");
    uint64_t r = 88172645463325252ull;
    for (int i = 0; text.tellp() < text_bytes; ++i) {
      r ^= r << 13, r ^= r >> 7, r ^= r << 17;
      text << "word" << r % 4099 << (i % 11 ? ' ' : '\n');
    }
  }
  std::ofstream list(dir + "/list");
  for (int i = 0; i < list_files; ++i) list << "x\n";
}

inline std::vector<std::string> ZstdRounds(const std::string& dir, int files, int level = 3) {
  std::string command = "cd " + dir + " && exec setarch -R /usr/bin/zstd -" +
                        std::to_string(level) + " --single-thread -q -c";
  for (int i = 0; i < files; ++i) command += " x";
  return {"/bin/sh", "-c", command + " > /dev/null"};
}

inline std::vector<std::string> ZstdLongRun(const std::string& dir, int level = 3) {
  return {"/bin/sh", "-c",
          "cd " + dir + " && exec setarch -R /usr/bin/zstd -" + std::to_string(level) +
              " --single-thread -q -c --filelist list > /dev/null"};
}

// The python3 workload of the accuracy tests: Debian's python3 (-S: no site module) running
// `rounds` rounds of a loop that fills a dict of strings and reads it back (0: rounds without
// end), ASLR off (setarch -R) and string hashing seeded (PYTHONHASHSEED=0), so that the
// interpreter sits at the same addresses and its dicts probe the same slots in every run.
inline std::vector<std::string> PythonRounds(int rounds) {
  static const char* const kScript =
      "import sys\n"
      "def one():\n"
      "    d = {}\n"
      "    for i in range(2000):\n"
      "        d['k%d' % i] = i\n"
      "    s = 0\n"
      "    for k in d:\n"
      "        s += d[k] + len(k)\n"
      "    return s\n"
      "n = int(sys.argv[1]) or -1\n"
      "while n:\n"
      "    one()\n"
      "    n -= 1\n";
  return {"/usr/bin/env", "PYTHONHASHSEED=0",    "setarch", "-R", "/usr/bin/python3", "-S", "-c",
          kScript,        std::to_string(rounds)};
}

}  // namespace pathprof::testing
