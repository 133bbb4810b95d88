// The raw windows kept for branch-profile exports (SessionConfig::export_branch_events) are a
// bounded buffer: letting its oldest windows go is retention, counted as such in TargetStats
// (export_windows_kept, export_windows_let_go), never among the drops, which are losses from
// the profile. Each window let go had reached the profile: its paths still count.
#include <gtest/gtest.h>

#include "loop_window.h"
#include "pathprof/pipeline/profile_store.h"

namespace {

namespace pl = pathprof::pipeline;
using pathprof::BranchBatch;
using pathprof::BranchKind;

using pathprof::testing::LoopWindow;

TEST(ExportBuffer, OldWindowsLetGoAreRetentionNotDrops) {
  pl::SessionConfig config;
  config.export_branch_events = 64;  // four windows of 16 branches
  auto store = pl::ProfileStore::CreateOffline(4242, config, pl::BranchWindows::kTakenBranches,
                                               std::make_shared<pl::SymbolService>());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  for (uint64_t i = 1; i <= 10; ++i) (*store)->AddBranches(LoopWindow(i));

  const pl::TargetStats st = (*store)->Stats();
  EXPECT_EQ(st.windows, 10u);
  EXPECT_EQ(st.export_windows_kept, 4u);
  EXPECT_EQ(st.export_windows_let_go, 6u);
  for (const auto& [reason, count] : st.drops)
    EXPECT_EQ(reason.find("export"), std::string::npos) << reason << " " << count;
  // The export holds the newest four; the profile all ten.
  EXPECT_EQ((*store)->RecentBranches().batches.size(), 4u);
  pl::HotPathsQuery q;
  q.with_blocks = false;
  EXPECT_FALSE((*store)->HotPaths(q).paths.empty());
}

// A window's stack (the calling context a snapshot or a stopped thread carries) is applied and
// let go: the buffer bounds branches, and a stack of kilobytes a window kept beside them would
// escape that bound.
TEST(ExportBuffer, WindowsAreKeptWithoutTheirStacks) {
  pl::SessionConfig config;
  auto store = pl::ProfileStore::CreateOffline(4242, config, pl::BranchWindows::kTakenBranches,
                                               std::make_shared<pl::SymbolService>());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  BranchBatch window = LoopWindow(7);
  window.stack.regs.assign(17, 0x1000);
  window.stack.stack_start = 0x7ffd0000;
  window.stack.stack.assign(16384, 0xab);
  (*store)->AddBranches(window);

  const std::vector<BranchBatch> kept = (*store)->RecentBranches().batches;
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_TRUE(kept[0].stack.empty());
  EXPECT_TRUE(kept[0].stack.stack.empty());
  // Everything else is the window as it came.
  BranchBatch without_stack = window;
  without_stack.stack = {};
  EXPECT_EQ(kept[0], without_stack);
}

// Stores given one shared buffer (a whole-host session's) keep its bound together: the one
// adding windows lets its own oldest go, so a busy process gives way to a quiet one's few, and
// a store gone (evicted) leaves its branches' room to the others.
TEST(ExportBuffer, StoresSharingABufferKeepItsBoundTogether) {
  pl::SessionConfig config;  // 65,536 each: the shared bound is the one reached
  auto shared = std::make_shared<pl::SharedExportBuffer>(64);  // four windows of 16 branches
  auto make = [&] {
    auto store = pl::ProfileStore::CreateOffline(4242, config, pl::BranchWindows::kTakenBranches,
                                                 std::make_shared<pl::SymbolService>());
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    (*store)->ShareExportBuffer(shared);
    return std::move(*store);
  };
  auto busy = make();
  auto quiet = make();
  for (uint64_t i = 1; i <= 2; ++i) quiet->AddBranches(LoopWindow(i));
  for (uint64_t i = 1; i <= 10; ++i) busy->AddBranches(LoopWindow(100 + i));
  EXPECT_EQ(quiet->RecentBranchEvents(), 32u);
  EXPECT_EQ(busy->RecentBranchEvents(), 32u);
  EXPECT_EQ(shared->held.load(), 64u);
  EXPECT_EQ(busy->Stats().export_windows_let_go, 8u);

  quiet.reset();
  EXPECT_EQ(shared->held.load(), 32u);
  for (uint64_t i = 1; i <= 3; ++i) busy->AddBranches(LoopWindow(200 + i));
  EXPECT_EQ(busy->RecentBranchEvents(), 64u);
  EXPECT_EQ(shared->held.load(), 64u);
}

TEST(ExportBuffer, NothingIsKeptOrLetGoWithTheBufferOff) {
  pl::SessionConfig config;
  config.export_branch_events = 0;
  auto store = pl::ProfileStore::CreateOffline(4242, config, pl::BranchWindows::kTakenBranches,
                                               std::make_shared<pl::SymbolService>());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  for (uint64_t i = 1; i <= 3; ++i) (*store)->AddBranches(LoopWindow(i));
  const pl::TargetStats st = (*store)->Stats();
  EXPECT_EQ(st.export_windows_kept, 0u);
  EXPECT_EQ(st.export_windows_let_go, 0u);
}

}  // namespace
