// Queries answer from one consistent copy of the profile while collectors keep adding to it:
// a writer thread adds stack samples and branch windows as fast as it can while this thread asks
// for the calling context tree and the hot subpaths. Every tree must add up — the roots' totals
// equal the tree's total weight, and each node's total is its self weight plus its children's
// totals — which fails when the totals are read at one moment and the nodes at another. Under
// the sanitizer build, walking the OSP table while the writer rehashes it is a use after free.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <thread>

#include "pathprof/pipeline/profile_store.h"

namespace {

namespace pl = pathprof::pipeline;

pathprof::collectors::RawStackSample Stack(int i) {
  pathprof::collectors::RawStackSample s;
  s.pid = static_cast<uint32_t>(getpid());
  s.tid = s.pid;
  s.period = 1;
  // Leaf first: 3 callers x 5 leaves, a few hundred distinct contexts at most.
  s.user = {0x30000u + (i % 5) * 16u, 0x20000u + (i % 3) * 16u, 0x10000u + (i % 11) * 16u};
  return s;
}

pathprof::BranchBatch Window(int i) {
  using pathprof::BranchKind;
  pathprof::BranchBatch w;
  w.pid = static_cast<uint32_t>(getpid());
  w.tid = w.pid;
  w.window = true;
  // Windows over many distinct loop bodies, so that the OSP table keeps growing (and rehashing).
  const uint64_t base = 0x100000 + static_cast<uint64_t>(i % 4096) * 0x40;
  for (int k = 0; k < 4; ++k) {
    w.events.push_back(
        {base + 4, base + 8, 0, 0, BranchKind::kConditional, (i + k) % 2 == 0, false});
    w.events.push_back({base + 0x10, base, 0, 0, BranchKind::kConditional, true, false});
  }
  return w;
}

TEST(ProfileStoreSnapshot, TreesAddUpWhileSamplesArrive) {
  pl::SessionConfig config;
  config.pids = {static_cast<uint32_t>(getpid())};
  auto store = pl::ProfileStore::Create(config.pids[0], config, pl::BranchWindows::kTakenBranches,
                                        std::make_shared<pl::SymbolService>());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int i = 0; !stop.load(std::memory_order_relaxed); ++i) {
      (*store)->AddStackSample(Stack(i));
      (*store)->AddBranches(Window(i));
      // A pause now and then: a mutex is not fair, and a writer that never lets go would starve
      // the reader on a busy 2-core host.
      if (i % 16 == 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  });
  pl::CctQuery query;
  query.max_nodes = 100000;
  int checked = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (int round = 0; checked < 300 && std::chrono::steady_clock::now() < deadline; ++round) {
    const pl::CallingContextTree tree = (*store)->Cct(query);
    std::map<uint64_t, double> children_total;
    double roots = 0;
    for (const pl::CctNode& n : tree.nodes) {
      if (n.parent_id == 0) roots += n.total_weight;
      children_total[n.parent_id] += n.total_weight;
    }
    ASSERT_DOUBLE_EQ(roots, tree.total_weight) << "round " << round;
    for (const pl::CctNode& n : tree.nodes)
      ASSERT_DOUBLE_EQ(n.total_weight, n.self_weight + children_total[n.id])
          << "node " << n.id << " in round " << round;
    pl::HotSubpathsQuery sq;
    sq.top_k = 20;
    const pl::HotSubpathsResult subpaths = (*store)->HotSubpaths(sq);
    double share = 0;
    for (const auto& sp : subpaths.subpaths) share += sp.estimate.share;
    EXPECT_LE(share, 1.0 + 1e-9);
    if (!tree.nodes.empty()) ++checked;
  }
  stop = true;
  writer.join();
  EXPECT_EQ(checked, 300) << "trees checked while the writer ran";
}

}  // namespace
