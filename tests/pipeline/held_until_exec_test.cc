// A command forked and held before its exec (pathctl run) runs the launcher's code until the
// exec: pathctl's own and its libc, whose image the exec replaces, so its call pairs read as
// bare addresses on both sides. As perf record's enable_on_exec, a held store records nothing
// until the exec, nor what was stamped before it and arrives later; each is counted.
#include <gtest/gtest.h>

#include "pathprof/pipeline/profile_store.h"

namespace {

namespace pl = pathprof::pipeline;
using pathprof::BranchBatch;
using pathprof::BranchKind;

// A window with one call (0x1000 -> 0x2000) and the loop around it.
BranchBatch CallWindow(uint64_t time_ns) {
  BranchBatch b;
  b.pid = 4242;
  b.tid = 4242;
  b.time_ns = time_ns;
  b.window = true;
  for (int i = 0; i < 4; ++i) {
    b.events.push_back({0x1000, 0x2000, 0, 5, BranchKind::kDirectCall, true});
    b.events.push_back({0x2010, 0x1005, 0, 1, BranchKind::kReturn, true});
    b.events.push_back({0x1010, 0x1000, 0, 2, BranchKind::kDirectJump, true});
  }
  return b;
}

uint64_t Dropped(const pl::TargetStats& st, const std::string& reason) {
  auto it = st.drops.find(reason);
  return it == st.drops.end() ? 0 : it->second;
}

TEST(HeldUntilExec, NothingBeforeTheExecIsRecordedAndEachIsCounted) {
  auto store =
      pl::ProfileStore::CreateOffline(4242, pl::SessionConfig{}, pl::BranchWindows::kTakenBranches,
                                      std::make_shared<pl::SymbolService>());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  pl::ProfileStore& s = **store;
  s.HoldUntilExec();
  s.AddBranches(CallWindow(1000));  // the launcher, before the exec
  EXPECT_TRUE(s.HotCallPairs(10).pairs.empty());
  s.NoteExec(5000);
  s.AddBranches(CallWindow(4000));  // taken before the exec, arriving after it was noted
  s.AddBranches(CallWindow(6000));  // the command's
  s.AddBranches(CallWindow(7000));

  const pl::TargetStats st = s.Stats();
  EXPECT_EQ(Dropped(st, "before_exec"), 2u);
  EXPECT_EQ(st.windows, 2u);
  const pl::HotCallPairsResult pairs = s.HotCallPairs(10);
  ASSERT_EQ(pairs.pairs.size(), 1u);
  EXPECT_DOUBLE_EQ(pairs.pairs[0].estimate.value, 8);  // two windows of four calls
}

TEST(HeldUntilExec, AStoreNotHeldRecordsAcrossAnExec) {
  auto store =
      pl::ProfileStore::CreateOffline(4242, pl::SessionConfig{}, pl::BranchWindows::kTakenBranches,
                                      std::make_shared<pl::SymbolService>());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  pl::ProfileStore& s = **store;
  s.AddBranches(CallWindow(1000));
  s.NoteExec(5000);  // a process that exec'd while profiled: its old image's work was real
  s.AddBranches(CallWindow(4000));
  s.AddBranches(CallWindow(6000));
  const pl::TargetStats st = s.Stats();
  EXPECT_EQ(Dropped(st, "before_exec"), 0u);
  EXPECT_EQ(st.windows, 3u);
}

}  // namespace
