// End-to-end accuracy of the OSP reservoir on the block stream of a small looping program, against
// an exact count of every subpath of length 2..32 (Oren, table 4.8 is the paper's version of this
// comparison for FFT).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <unordered_map>

#include "pathprof/profiles/osp_report.h"
#include "pathprof/profiles/osp_sampler.h"

namespace pathprof::profiles {
namespace {

// A seeded model of a program: an outer loop around an inner loop with an if/else (taken 80% /
// 20%, 10 iterations on average), then a call to one of six cold functions whose own loop runs
// 1-3 times. Block ids are start addresses.
std::vector<BlockId> LoopingProgramBlocks(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  constexpr BlockId kOuter = 0x401000, kHead = 0x401100, kB1 = 0x401110, kThen = 0x401120,
                    kElse = 0x401130, kLatch = 0x401140, kExit = 0x401200, kRet = 0x401300;
  std::vector<BlockId> out;
  out.reserve(n + 64);
  while (out.size() < n) {
    out.push_back(kOuter);
    do {
      out.push_back(kHead);
      out.push_back(kB1);
      out.push_back(u(rng) < 0.8 ? kThen : kElse);
      out.push_back(kLatch);
    } while (u(rng) < 0.9);
    out.push_back(kExit);
    const BlockId fn = 0x402000 + 0x100 * (rng() % 6);
    out.push_back(fn);
    for (uint64_t i = 0, iters = 1 + rng() % 3; i < iters; ++i) {
      out.push_back(fn + 0x10);
      out.push_back(fn + 0x20);
    }
    out.push_back(kRet);
  }
  out.resize(n);
  return out;
}

// The smallest rotation by comparing every rotation with the best so far (quadratic, and
// independent of the linear algorithm under test).
std::vector<BlockId> BruteCanonical(const std::vector<BlockId>& v) {
  const size_t n = v.size();
  size_t best = 0;
  for (size_t r = 1; r < n; ++r) {
    for (size_t k = 0; k < n; ++k) {
      const BlockId a = v[(r + k) % n], b = v[(best + k) % n];
      if (a != b) {
        if (a < b) best = r;
        break;
      }
    }
  }
  std::vector<BlockId> out(v.begin() + static_cast<ptrdiff_t>(best), v.end());
  out.insert(out.end(), v.begin(), v.begin() + static_cast<ptrdiff_t>(best));
  return out;
}

// Exact occurrences of every subpath of length 2, 4, ..., max_length, keyed by its canonical
// rotation. Windows are first counted by content (a rolling hash, every hit verified with
// memcmp, so the count is exact), then the few distinct windows are merged by rotation class.
std::map<std::vector<BlockId>, uint64_t> ExactCounts(const std::vector<BlockId>& s,
                                                     uint32_t max_length) {
  std::map<std::vector<BlockId>, uint64_t> exact;
  for (uint32_t len = 2; len <= max_length; len *= 2) {
    if (s.size() < len) break;
    struct Window {
      size_t first;
      uint64_t count;
    };
    std::unordered_map<uint64_t, Window> windows;
    constexpr uint64_t kBase = 0x100000001b3ULL;
    uint64_t top = 1;  // kBase^(len-1)
    for (uint32_t i = 1; i < len; ++i) top *= kBase;
    uint64_t h = 0;
    for (uint32_t i = 0; i < len; ++i) h = h * kBase + s[i];
    for (size_t pos = 0;; ++pos) {
      auto [it, inserted] = windows.try_emplace(h, Window{pos, 0});
      if (!inserted && std::memcmp(&s[it->second.first], &s[pos], len * sizeof(BlockId)) != 0) {
        ADD_FAILURE() << "rolling hash collision at " << pos;  // never seen; would void the test
      }
      ++it->second.count;
      if (pos + len >= s.size()) break;
      h = (h - s[pos] * top) * kBase + s[pos + len];
    }
    for (const auto& [hash, w] : windows) {
      std::vector<BlockId> seq(s.begin() + static_cast<ptrdiff_t>(w.first),
                               s.begin() + static_cast<ptrdiff_t>(w.first + len));
      exact[BruteCanonical(seq)] += w.count;
    }
  }
  return exact;
}

TEST(OspAccuracyTest, FindsHotSubpathsOfALoopingProgramWithCalibratedErrors) {
  constexpr size_t kBlocks = 1'000'000;
  constexpr uint32_t kMaxLength = 32;
  const std::vector<BlockId> stream = LoopingProgramBlocks(kBlocks, 2002);
  const auto exact = ExactCounts(stream, kMaxLength);

  std::vector<std::pair<uint64_t, std::vector<BlockId>>> ranked;
  for (const auto& [k, c] : exact) ranked.emplace_back(c, k);
  std::sort(ranked.begin(), ranked.end(), std::greater<>());
  ASSERT_GT(ranked.size(), 10u);
  // The top 5 must be well defined: the 5th is clearly hotter than the 6th.
  ASSERT_GT(ranked[4].first, ranked[5].first * 1.05);

  OspConfig c;
  c.max_entries = 3000;
  c.expected_blocks = kBlocks;
  c.expected_gain = 100;
  c.min_f = 2;
  c.lengths = *OspLengthDistribution::Geometric(kMaxLength);
  c.seed = 7;
  auto reservoir = std::move(OspReservoir::Create(c)).value();
  {
    OspThreadSampler sampler(reservoir.get(), 1);
    // Through the real input: batches of branches whose targets start the blocks.
    for (size_t at = 0; at < stream.size(); at += 4096) {
      BranchBatch batch;
      batch.gap_before = at == 0;
      for (size_t i = at; i < std::min(stream.size(), at + 4096); ++i) {
        BranchEvent e;
        e.to = stream[i];
        batch.events.push_back(e);
      }
      sampler.Feed(batch);
    }
  }
  OspReportOptions options;
  options.top_k = 100;
  auto report = BuildOspReport(*reservoir, options);
  ASSERT_TRUE(report.ok());
  const OspStats& st = report->stats;
  EXPECT_EQ(st.blocks_seen, kBlocks);
  EXPECT_LE(st.entries, c.max_entries);
  ASSERT_GE(report->entries.size(), 100u);

  // The 5 hottest exact subpaths are the report's top 5.
  std::set<std::vector<BlockId>> exact_top5, report_top5;
  for (int i = 0; i < 5; ++i) {
    exact_top5.insert(ranked[i].second);
    report_top5.insert(report->entries[i].blocks);
  }
  EXPECT_EQ(report_top5, exact_top5);

  // Median relative error of the top 10 within 2%.
  std::vector<double> errors;
  for (int i = 0; i < 10; ++i) {
    const auto& e = report->entries[i];
    const double truth = static_cast<double>(exact.at(e.blocks));
    errors.push_back(std::abs(e.estimated_count - truth) / truth);
  }
  std::vector<double> sorted_errors = errors;
  std::sort(sorted_errors.begin(), sorted_errors.end());
  const double median = (sorted_errors[4] + sorted_errors[5]) / 2;
  EXPECT_LE(median, 0.02);

  // At least 95% of the reported 95%-confidence intervals hold the exact count.
  int covered = 0;
  for (const auto& e : report->entries) {
    const double truth = static_cast<double>(exact.at(e.blocks));
    covered += e.count_low <= truth && truth <= e.count_high;
  }
  EXPECT_GE(covered, 95);

  std::cout << "osp accuracy: blocks=" << kBlocks << " exact distinct=" << exact.size()
            << " f=" << st.f << " entries=" << st.entries << " samples=" << st.sample_total
            << " gain=" << static_cast<double>(st.sample_total) / st.entries
            << " resamples=" << st.resamples << " memory_bytes=" << st.memory_bytes
            << " median_top10_err=" << median << " covered=" << covered << "/100\n";
  for (int i = 0; i < 10; ++i) {
    const auto& e = report->entries[i];
    size_t exact_rank = 0;
    while (ranked[exact_rank].second != e.blocks) ++exact_rank;
    std::cout << "  rank " << i + 1 << " exact_rank " << exact_rank + 1 << " len " << e.length
              << " sample " << e.sample_count << " est " << e.estimated_count << " exact "
              << exact.at(e.blocks) << " err " << errors[static_cast<size_t>(i)] * 100 << "% bound "
              << e.relative_error * 100 << "%\n";
  }
}

}  // namespace
}  // namespace pathprof::profiles
