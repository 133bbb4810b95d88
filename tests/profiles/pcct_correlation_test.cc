#include "pcct_correlation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "pathprof/profiles/hps_profiles.h"

namespace pathprof::profiles {
namespace {

StackSample Sample(std::vector<StackFrame> root_first, uint32_t tid = 1) {
  StackSample s;
  s.pid = 1;
  s.tid = tid;
  s.frames.assign(root_first.rbegin(), root_first.rend());
  return s;
}

TEST(Correlation, HandComputedPair) {
  // Union x,y,z,w: a = (1,2,3,0), b = (1,3,0,2); means 1.5 and 1.5;
  // cov = .25 + .75 - 2.25 - .75 = -2; var a = var b = 5; r = -2/5.
  EXPECT_NEAR(Correlation({{"x", 1}, {"y", 2}, {"z", 3}}, {{"x", 1}, {"y", 3}, {"w", 2}}), -0.4,
              1e-12);
  EXPECT_DOUBLE_EQ(Correlation({{"x", 1}, {"y", 2}}, {{"x", 2}, {"y", 4}}), 1.0);
  EXPECT_DOUBLE_EQ(Correlation({}, {}), 1.0);
  EXPECT_DOUBLE_EQ(Correlation({{"x", 1}, {"y", 1}}, {{"x", 1}, {"y", 2}}), 0.0);
}

TEST(Correlation, IdenticalPcctsCorrelateOne) {
  Pcct a(1), b(1);
  for (Pcct* t : {&a, &b}) {
    ASSERT_TRUE(t->Add(Sample({{1, 0}, {2, 0x10}})).ok());
    ASSERT_TRUE(t->Add(Sample({{1, 0}, {2, 0x10}, {3, 0x20}})).ok());
    ASSERT_TRUE(t->Add(Sample({{1, 0}, {4, 0x14}})).ok());
  }
  EXPECT_DOUBLE_EQ(PcctCorrelation(a, b), 1.0);
}

// a: [M,A] twice -> node A 2, edge M 1, edge A 1.
// b: [M,A], [M,B], [M,B] -> node A 1, node B 2, edges M 1, A 1, B 1.
// Keys (node A, node B, edge M, edge A, edge B): a = (2,0,1,1,0), b = (1,2,1,1,1);
// means .8 and 1.2; cov = -.24 - .64 - .04 - .04 + .16 = -.8; var a = 2.8, var b = .8;
// r = -.8 / sqrt(2.24) = -0.5345225.
TEST(Correlation, HandComputedPcctPair) {
  const StackFrame m{1, 0}, fa{2, 0x10}, fb{3, 0x18};
  Pcct a(1), b(1);
  ASSERT_TRUE(a.Add(Sample({m, fa})).ok());
  ASSERT_TRUE(a.Add(Sample({m, fa})).ok());
  ASSERT_TRUE(b.Add(Sample({m, fa})).ok());
  ASSERT_TRUE(b.Add(Sample({m, fb})).ok());
  ASSERT_TRUE(b.Add(Sample({m, fb})).ok());
  EXPECT_NEAR(PcctCorrelation(a, b), -0.8 / std::sqrt(2.24), 1e-9);
}

// A deterministic synthetic program: a call tree whose activations run for fixed times. Its
// execution is a timeline of segments, each a stack that holds for a duration; a sampler fires
// once per period at a random offset (seeded), so two runs with different seeds see the same
// program through different samples, as two runs of one benchmark do in section 6.
struct Spec {
  uint64_t function;
  uint64_t call_site;
  uint64_t self_before;
  std::vector<std::pair<Spec, int>> calls;  // callee, times called
  uint64_t self_after;
};

struct Segment {
  uint64_t duration;
  std::vector<StackFrame> stack;  // root-side first
};

void Expand(const Spec& s, std::vector<StackFrame>& stack, std::vector<Segment>& out) {
  stack.push_back({s.function, s.call_site});
  if (s.self_before) out.push_back({s.self_before, stack});
  for (const auto& [callee, times] : s.calls) {
    for (int i = 0; i < times; ++i) Expand(callee, stack, out);
  }
  if (s.self_after) out.push_back({s.self_after, stack});
  stack.pop_back();
}

Spec Recursive(uint64_t function, uint64_t call_site, int depth) {
  Spec s{function, call_site, 1, {}, 1};
  if (depth > 0) s.calls.push_back({Recursive(function, function + 0x10, depth - 1), 1});
  return s;
}

std::vector<Segment> SyntheticProgram() {
  Spec kernel_a{0x500, 0x410, 20, {}, 0};
  Spec kernel_h{0x500, 0x610, 8, {}, 0};
  Spec helper{0x600, 0x420, 5, {{kernel_h, 1}}, 0};
  Spec compute{0x400, 0x120, 1, {{kernel_a, 2}, {helper, 1}}, 1};
  Spec lex{0x300, 0x210, 2, {}, 0};
  Spec parse{0x200, 0x110, 3, {{lex, 4}}, 0};
  Spec io{0x800, 0x130, 6, {}, 0};
  Spec iteration{
      0x900, 0x140, 0, {{parse, 1}, {compute, 1}, {Recursive(0x700, 0x150, 4), 1}, {io, 1}}, 0};
  Spec main_fn{0x100, 0, 0, {{iteration, 60}}, 0};
  std::vector<StackFrame> stack;
  std::vector<Segment> out;
  Expand(main_fn, stack, out);
  return out;
}

void SampleRun(const std::vector<Segment>& program, uint64_t period, uint32_t seed, Pcct& t) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<uint64_t> offset(0, period - 1);
  uint64_t next = offset(rng), start = 0, window = 0;
  for (const Segment& seg : program) {
    const uint64_t end = start + seg.duration;
    while (next < end) {
      StackSample s;
      s.pid = 1;
      s.tid = 1;
      s.frames.assign(seg.stack.rbegin(), seg.stack.rend());
      EXPECT_TRUE(t.Add(s).ok());
      window += period;
      next = window + offset(rng);
    }
    start = end;
  }
}

TEST(Correlation, TwoSeededRunsOfOneProgramAgree) {
  const std::vector<Segment> program = SyntheticProgram();
  Pcct ra(1), rb(1), rc(1);
  SampleRun(program, 3, 1, ra);
  SampleRun(program, 3, 2, rb);
  const double r = PcctCorrelation(ra, rb);
  // The bar for precision between runs.
  EXPECT_GE(r, 0.95) << "correlation " << r;
  std::printf("correlation of two seeded runs: %.4f over %zu nodes\n", r, ra.node_count());
  EXPECT_GT(ra.stats().samples, 1000u);
  EXPECT_GT(ra.node_count(), 10u);
  // Same seed, same samples: exactly 1.
  SampleRun(program, 3, 1, rc);
  EXPECT_DOUBLE_EQ(PcctCorrelation(ra, rc), 1.0);
}

TEST(Correlation, HotMethodCountersOfTwoRunsAgree) {
  // The context-insensitive profile of section 6.5 on the same program.
  const std::vector<Segment> program = SyntheticProgram();
  auto run = [&](uint32_t seed) {
    HotMethods hm;
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<uint64_t> offset(0, 2);
    uint64_t next = offset(rng), start = 0, window = 0;
    for (const Segment& seg : program) {
      for (; next < start + seg.duration; window += 3, next = window + offset(rng)) {
        StackSample s;
        s.frames.assign(seg.stack.rbegin(), seg.stack.rend());
        EXPECT_TRUE(hm.AddStackSample(s).ok());
      }
      start += seg.duration;
    }
    std::vector<std::pair<std::string, double>> out;
    for (const auto& [f, w] : hm.Top(100)) out.emplace_back(std::to_string(f), w);
    return out;
  };
  EXPECT_GE(Correlation(run(1), run(2)), 0.95);
}

}  // namespace
}  // namespace pathprof::profiles
