#include "pathprof/profiles/pcct.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <thread>

namespace pathprof::profiles {
namespace {

// Functions and call sites of the running example ([Whaley 2000] figs. 5 and 6, see
// docs/references.md: M calls A and D, A calls B and C, D calls A and C).
constexpr uint64_t M = 0x1000, A = 0x2000, C = 0x4000, D = 0x5000, F = 0x6000;
constexpr uint64_t kMtoA = 0x1010, kMtoD = 0x1020, kAtoC = 0x2010, kDtoA = 0x5010, kDtoC = 0x5020,
                   kMtoF = 0x1030, kFtoF = 0x6010;

// A root-side-first path, turned into the leaf-first frames of a sample.
StackSample Sample(std::vector<StackFrame> root_first, uint32_t tid = 1, uint64_t weight = 1) {
  StackSample s;
  s.pid = 42;
  s.tid = tid;
  s.weight = weight;
  s.frames.assign(root_first.rbegin(), root_first.rend());
  return s;
}

const StackFrame kM{M, 0};
const StackFrame kA_M{A, kMtoA}, kD_M{D, kMtoD}, kC_A{C, kAtoC}, kA_D{A, kDtoA}, kC_D{C, kDtoC};

void ExpectNode(const Pcct& t, std::vector<StackFrame> path, uint64_t self, uint64_t edge,
                uint64_t total) {
  auto n = t.Find(path);
  ASSERT_TRUE(n.has_value()) << "path of length " << path.size() << " missing";
  EXPECT_EQ(n->self, self) << "depth " << path.size();
  EXPECT_EQ(n->edge, edge) << "depth " << path.size();
  EXPECT_EQ(n->total, total) << "depth " << path.size();
  EXPECT_EQ(n->depth, path.size());
}

// [Whaley 2000] fig. 6. The figure's sample stacks and weights are drawn, not in the text, so the
// six samples below are a transcription consistent with what the text says about them (two
// distinct A nodes, one from M and one from D; no node for B, which never appears in a sample;
// several calls from M to A sharing one edge), and the weights are derived by hand from the
// algorithm of section 5.2 (fig. 7), one thread, weight 1 each:
//   s1 M>A     first sample, all new:   edge M +1, edge M>A +1,      self M>A +1
//   s2 M>A>C   old M,A; new C:          edge M>A>C +1,               self M>A>C +1
//   s3 M>D>A   old M; new D,A:          edge M>D +1, edge M>D>A +1,  self M>D>A +1
//   s4 M>D>A   all old (same stack):    no edge,                     self M>D>A +1 (=2)
//   s5 M>A>C   old M; new A,C:          edge M>A +1 (=2), M>A>C +1 (=2), self M>A>C +1 (=2)
//   s6 M>D>C   old M; new D,C:          edge M>D +1 (=2), M>D>C +1,  self M>D>C +1
// Totals (inclusive): M 6, M>A 3, M>A>C 2, M>D 3, M>D>A 2, M>D>C 1.
TEST(Pcct, Figure6SixSamples) {
  Pcct t(42);
  for (const auto& s :
       {Sample({kM, kA_M}), Sample({kM, kA_M, kC_A}), Sample({kM, kD_M, kA_D}),
        Sample({kM, kD_M, kA_D}), Sample({kM, kA_M, kC_A}), Sample({kM, kD_M, kC_D})}) {
    ASSERT_TRUE(t.Add(s).ok());
  }
  EXPECT_EQ(t.node_count(), 6u);  // M, M>A, M>A>C, M>D, M>D>A, M>D>C; no B
  ExpectNode(t, {kM}, /*self=*/0, /*edge=*/1, /*total=*/6);
  ExpectNode(t, {kM, kA_M}, 1, 2, 3);
  ExpectNode(t, {kM, kA_M, kC_A}, 2, 2, 2);
  ExpectNode(t, {kM, kD_M}, 0, 2, 3);
  ExpectNode(t, {kM, kD_M, kA_D}, 2, 1, 2);
  ExpectNode(t, {kM, kD_M, kC_D}, 1, 1, 1);
  const PcctStats st = t.stats();
  EXPECT_EQ(st.samples, 6u);
  EXPECT_EQ(st.new_frames, 9u);  // 2 + 1 + 2 + 0 + 2 + 2
  EXPECT_EQ(st.old_frames, 8u);  // 0 + 2 + 1 + 3 + 1 + 1
  EXPECT_EQ(st.nodes_created, 6u);
  // The two A nodes are distinct contexts of one method.
  EXPECT_NE(t.Find({kM, kA_M})->id, t.Find({kM, kD_M, kA_D})->id);
}

TEST(Pcct, SameStackTwiceCountsEdgesOnceSelfTwice) {
  Pcct t(42);
  ASSERT_TRUE(t.Add(Sample({kM, kA_M, kC_A})).ok());
  ASSERT_TRUE(t.Add(Sample({kM, kA_M, kC_A})).ok());
  ExpectNode(t, {kM}, 0, 1, 2);
  ExpectNode(t, {kM, kA_M}, 0, 1, 2);
  ExpectNode(t, {kM, kA_M, kC_A}, 2, 1, 2);
  // Another thread has its own previous stack: its first sample's frames are all new.
  ASSERT_TRUE(t.Add(Sample({kM, kA_M, kC_A}, /*tid=*/2)).ok());
  ASSERT_TRUE(t.Add(Sample({kM, kA_M, kC_A}, /*tid=*/1)).ok());
  ExpectNode(t, {kM, kA_M, kC_A}, 4, 2, 4);
  // Sample weight (e.g. CPU time) goes to edges and self alike.
  ASSERT_TRUE(t.Add(Sample({kM, kD_M}, 1, /*weight=*/10)).ok());
  ExpectNode(t, {kM, kD_M}, 10, 10, 10);
  ExpectNode(t, {kM}, 0, 2, 14);
}

TEST(Pcct, CallSitesSeparateContexts) {
  Pcct t(42);
  ASSERT_TRUE(t.Add(Sample({kM, {A, 0x1010}})).ok());
  ASSERT_TRUE(t.Add(Sample({kM, {A, 0x1018}})).ok());
  EXPECT_EQ(t.node_count(), 3u);
  ExpectNode(t, {kM, {A, 0x1010}}, 1, 1, 1);
  ExpectNode(t, {kM, {A, 0x1018}}, 1, 1, 1);
}

// [Whaley 2000] fig. 9: M calls F, which recurses. The PCCT keeps one node per recursive
// activation (9c) where the CCT would fold them into one node with a back edge (9b).
//   s1 M>F>F>F    all new                 edges M,F1,F2,F3 = 1; self F3 1
//   s2 M>F>F      F3 returned, all old    self F2 1
//   s3 M>F>F>F    a new F3 activation     edge F3 2; self F3 2
//   s4 M>F>F>F>F  F3 still running, new F4 edge F4 1; self F4 1
TEST(Pcct, Figure9RecursionKeepsFullContext) {
  Pcct t(42);
  const StackFrame f1{F, kMtoF}, fr{F, kFtoF};
  ASSERT_TRUE(t.Add(Sample({kM, f1, fr, fr})).ok());
  ASSERT_TRUE(t.Add(Sample({kM, f1, fr})).ok());
  ASSERT_TRUE(t.Add(Sample({kM, f1, fr, fr})).ok());
  ASSERT_TRUE(t.Add(Sample({kM, f1, fr, fr, fr})).ok());
  EXPECT_EQ(t.node_count(), 5u);
  ExpectNode(t, {kM}, 0, 1, 4);
  ExpectNode(t, {kM, f1}, 0, 1, 4);
  ExpectNode(t, {kM, f1, fr}, 1, 1, 4);
  ExpectNode(t, {kM, f1, fr, fr}, 2, 2, 3);
  ExpectNode(t, {kM, f1, fr, fr, fr}, 1, 1, 1);
}

// [Whaley 2000] fig. 10 with a walk bound of 4 frames. s1 is on the left branch (M>A>C); s2 is at
// the end of a deep new chain M>D>L1..L5 (6 new frames > 4): its leafmost 4 frames L2..L5 hang
// under the "[truncated]" root, D and L1 are not placed (counted). s3 repeats s2 (still running):
// no edge counts again, self L5 +1. s4 is back in L1: 3 frames to place, within the bound, so they
// attach under the real root, as old frames (no edge weight, the activations were seen in s2).
TEST(Pcct, Figure10DeepChainGoesUnderTruncatedRoot) {
  PcctOptions o;
  o.max_walk = 4;
  Pcct t(42, o);
  std::vector<StackFrame> deep = {kM, kD_M};
  for (uint64_t i = 1; i <= 5; ++i) deep.push_back({0x7000 + i * 0x100, 0x7000 + i * 0x100 - 4});
  ASSERT_TRUE(t.Add(Sample({kM, kA_M, kC_A})).ok());
  ASSERT_TRUE(t.Add(Sample(deep)).ok());
  std::vector<StackFrame> tail(deep.begin() + 3, deep.end());  // L2..L5
  auto leaf = t.Find(tail, Pcct::kTruncatedRoot);
  ASSERT_TRUE(leaf.has_value());
  EXPECT_TRUE(leaf->under_truncated_root);
  EXPECT_EQ(leaf->self, 1u);
  EXPECT_EQ(leaf->edge, 1u);
  EXPECT_FALSE(t.Find({kM, kD_M}).has_value());  // D is not attached
  EXPECT_EQ(t.Node(Pcct::kRoot)->total, 1u);
  EXPECT_EQ(t.Node(Pcct::kTruncatedRoot)->total, 1u);
  ASSERT_TRUE(t.Add(Sample(deep)).ok());
  leaf = t.Find(tail, Pcct::kTruncatedRoot);
  EXPECT_EQ(leaf->self, 2u);
  EXPECT_EQ(leaf->edge, 1u);
  ASSERT_TRUE(t.Add(Sample({deep.begin(), deep.begin() + 3})).ok());
  ExpectNode(t, {kM, kD_M, deep[2]}, 1, 0, 1);
  ExpectNode(t, {kM}, 0, 1, 2);
  const PcctStats st = t.stats();
  EXPECT_EQ(st.truncated_samples, 2u);
  EXPECT_EQ(st.unplaced_frames, 2u);  // D and L1 of s2
  // Context keys name the partial root.
  bool saw_truncated = false;
  for (const auto& [key, w] : t.ContextWeights()) {
    saw_truncated |= key.rfind("node [truncated]/", 0) == 0;
  }
  EXPECT_TRUE(saw_truncated);
}

TEST(Pcct, RootTruncatedStackIsNeverAttached) {
  Pcct t(42);
  StackSample s = Sample({kA_M, kC_A});
  s.root_truncated = true;
  ASSERT_TRUE(t.Add(s).ok());
  ASSERT_TRUE(t.Add(s).ok());
  auto n = t.Find({kA_M, kC_A}, Pcct::kTruncatedRoot);
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(n->self, 2u);
  EXPECT_EQ(n->edge, 2u);  // no trusted prefix, so every frame counts as new
  EXPECT_EQ(t.Node(Pcct::kRoot)->total, 0u);
}

TEST(Pcct, TopKOrders) {
  Pcct t(42);
  // self: M>A 5, M>A>C 3, M>D 1; edge: M>D 4 (four separate calls), M>A 1, M>A>C 2.
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(t.Add(Sample({kM, kA_M})).ok());
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(t.Add(Sample({kM, kA_M, kC_A})).ok());
    ASSERT_TRUE(t.Add(Sample({kM, kA_M})).ok());
  }
  ASSERT_TRUE(t.Add(Sample({kM, kA_M, kC_A})).ok());  // still the second C activation
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(t.Add(Sample({kM, kD_M}, /*tid=*/10 + i)).ok());
  }
  // self M>A = 5 + 2 = 7, M>A>C = 3, M>D = 4
  auto self = t.TopBySelf(10);
  ASSERT_EQ(self.size(), 3u);
  EXPECT_EQ(self[0].frame, kA_M);
  EXPECT_EQ(self[0].self, 7u);
  EXPECT_EQ(self[1].frame, kD_M);
  EXPECT_EQ(self[1].self, 4u);
  EXPECT_EQ(self[2].frame, kC_A);
  EXPECT_EQ(self[2].self, 3u);
  auto edge = t.TopByEdge(2);
  ASSERT_EQ(edge.size(), 2u);
  EXPECT_EQ(edge[0].frame, kM);  // thread 1 once, threads 10..13 once each
  EXPECT_EQ(edge[0].edge, 5u);
  EXPECT_EQ(edge[1].frame, kD_M);
  EXPECT_EQ(edge[1].edge, 4u);
  auto total = t.TopByTotal(3);
  ASSERT_EQ(total.size(), 3u);
  EXPECT_EQ(total[0].frame, kM);
  EXPECT_EQ(total[0].total, 14u);
  EXPECT_EQ(total[1].frame, kA_M);
  EXPECT_EQ(total[1].total, 10u);
  EXPECT_EQ(total[2].frame, kD_M);
  EXPECT_EQ(total[2].total, 4u);
  EXPECT_EQ(t.TopByTotal(100).size(), 4u);
  EXPECT_TRUE(t.TopBySelf(0).empty());
}

TEST(Pcct, PurgeClearsButKeepsThreadsOldFrames) {
  Pcct t(42);
  ASSERT_TRUE(t.Add(Sample({kM, kA_M, kC_A})).ok());
  t.Purge();
  EXPECT_EQ(t.node_count(), 0u);
  EXPECT_TRUE(t.TopBySelf(5).empty());
  EXPECT_TRUE(t.TopByTotal(5).empty());
  EXPECT_TRUE(t.ContextWeights().empty());
  // The C activation seen before the purge is still running: not a new call.
  ASSERT_TRUE(t.Add(Sample({kM, kA_M, kC_A})).ok());
  ExpectNode(t, {kM, kA_M, kC_A}, 1, 0, 1);
  ASSERT_TRUE(t.Add(Sample({kM, kD_M})).ok());
  ExpectNode(t, {kM, kD_M}, 1, 1, 1);
  EXPECT_EQ(t.stats().purges, 1u);
}

TEST(Pcct, PurgesOnAnInterval) {
  PcctOptions o;
  o.purge_every_samples = 3;
  Pcct t(42, o);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(t.Add(Sample({kM, kA_M})).ok());
  ExpectNode(t, {kM, kA_M}, 3, 1, 3);
  EXPECT_EQ(t.stats().purges, 0u);
  ASSERT_TRUE(t.Add(Sample({kM, kA_M})).ok());  // the 4th sample starts a new interval
  EXPECT_EQ(t.stats().purges, 1u);
  ExpectNode(t, {kM, kA_M}, 1, 0, 1);
  EXPECT_EQ(t.node_count(), 2u);
}

TEST(Pcct, DecayScalesAndPrunes) {
  Pcct t(42);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(t.Add(Sample({kM, kA_M})).ok());
  ASSERT_TRUE(t.Add(Sample({kM, kD_M})).ok());
  ASSERT_TRUE(t.Decay(1, 2).ok());
  ExpectNode(t, {kM}, 0, 0, 2);                  // edge 1 -> 0, total 5 -> 2
  ExpectNode(t, {kM, kA_M}, 2, 0, 2);            // self 4 -> 2, edge 1 -> 0
  EXPECT_FALSE(t.Find({kM, kD_M}).has_value());  // 1 -> 0 everywhere: pruned
  EXPECT_EQ(t.stats().nodes_pruned, 1u);
  auto top = t.TopBySelf(5);
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].self, 2u);
  EXPECT_FALSE(t.Decay(3, 2).ok());
  EXPECT_FALSE(t.Decay(1, 0).ok());
}

TEST(Pcct, MemoryBoundEvictsColdestLeavesAndCountsThem) {
  PcctOptions o;
  o.max_walk = 2;
  o.max_nodes = 10;  // the floor for max_walk 2 (4 * 2 + 2)
  Pcct t(42, o);
  const StackFrame hot{0x9000, 0x1090};
  uint64_t weight = 0;
  for (uint64_t i = 0; i < 40; ++i) {
    ASSERT_TRUE(t.Add(Sample({kM, hot})).ok());
    ASSERT_TRUE(t.Add(Sample({kM, {0xa000 + i, 0x10a0}})).ok());
    weight += 2;
    ASSERT_LE(t.node_count(), 10u);
  }
  const PcctStats st = t.stats();
  EXPECT_GT(st.nodes_evicted, 0u);
  EXPECT_EQ(st.nodes_created - st.nodes_evicted, t.node_count());
  EXPECT_EQ(st.evicted_self_weight, st.nodes_evicted);  // each cold leaf had self weight 1
  ExpectNode(t, {kM, hot}, 40, 40, 40);                 // the hot leaf survives
  EXPECT_EQ(t.Find({kM})->total, weight);  // evicted weight stays in the ancestors' totals
  // Stale thread caches are detected: the last cold leaf again is counted as old, on a live node.
  ASSERT_TRUE(t.Add(Sample({kM, {0xa000 + 39, 0x10a0}})).ok());
  EXPECT_EQ(t.Find({kM, {0xa000 + 39, 0x10a0}})->self, 2u);
}

TEST(Pcct, RejectsBadSamplesAndCountsThem) {
  Pcct t(42);
  StackSample other = Sample({kM});
  other.pid = 7;
  Status s = t.Add(other);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("pid 7"), std::string::npos);
  EXPECT_FALSE(t.Add(Sample({})).ok());
  EXPECT_FALSE(t.Add(Sample({kM}, 1, 0)).ok());
  EXPECT_EQ(t.stats().rejected_samples, 3u);
  EXPECT_EQ(t.stats().samples, 0u);
  EXPECT_EQ(t.node_count(), 0u);
}

TEST(Pcct, ThreadStatesAreBoundedAndCounted) {
  PcctOptions o;
  o.max_threads = 2;
  Pcct t(42, o);
  for (uint32_t tid = 1; tid <= 3; ++tid) ASSERT_TRUE(t.Add(Sample({kM}, tid)).ok());
  EXPECT_EQ(t.stats().thread_states_dropped, 1u);
  ASSERT_TRUE(t.Add(Sample({kM}, 1)).ok());  // tid 1 was forgotten: M is new again
  EXPECT_EQ(t.Find({kM})->edge, 4u);
  t.ForgetThread(3);
  ASSERT_TRUE(t.Add(Sample({kM}, 3)).ok());
  EXPECT_EQ(t.Find({kM})->edge, 5u);
}

TEST(Pcct, ReadableWhileWritten) {
  Pcct t(42);
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 0; i < 2000; ++i) {
      (void)t.Add(Sample({kM, kA_M, {0xb000 + static_cast<uint64_t>(i % 50), 0x2020}},
                         static_cast<uint32_t>(i % 4)));
    }
    done = true;
  });
  size_t reads = 0;
  while (!done) {
    auto top = t.TopByTotal(5);
    if (!top.empty()) {
      EXPECT_EQ(top[0].frame, kM);
    }
    (void)t.ContextWeights();
    ++reads;
  }
  writer.join();
  EXPECT_EQ(t.stats().samples, 2000u);
  EXPECT_EQ(t.Find({kM})->total, 2000u);
  EXPECT_GT(reads, 0u);
}

// The edge index is updated lazily; querying after every sample (eager) and only at the end must
// give the same ranking, ties included (most recently incremented first), also across evictions.
TEST(Pcct, EdgeRankingDoesNotDependOnWhenItIsQueried) {
  PcctOptions o;
  o.max_walk = 8;
  o.max_nodes = 64;
  Pcct eager(42, o), lazy(42, o);
  std::mt19937 rng(11);
  std::vector<std::vector<StackFrame>> stacks(3, std::vector<StackFrame>{kM});
  for (int i = 0; i < 3000; ++i) {
    auto& st = stacks[rng() % 3];
    const size_t keep = 1 + rng() % st.size();
    st.resize(keep);
    while (st.size() < 1 + rng() % 6) st.push_back({0x100 + rng() % 3, 0x10 + rng() % 2});
    const uint32_t tid = static_cast<uint32_t>(&st - stacks.data()) + 1;
    ASSERT_TRUE(eager.Add(Sample(st, tid)).ok());
    ASSERT_TRUE(lazy.Add(Sample(st, tid)).ok());
    (void)eager.TopByEdge(1);
  }
  EXPECT_GT(lazy.stats().nodes_evicted, 0u);
  auto a = eager.TopByEdge(1000);
  auto b = lazy.TopByEdge(1000);
  ASSERT_EQ(a.size(), b.size());
  ASSERT_GT(a.size(), 10u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].id, b[i].id) << "rank " << i;
    EXPECT_EQ(a[i].edge, b[i].edge) << "rank " << i;
  }
}

}  // namespace
}  // namespace pathprof::profiles
