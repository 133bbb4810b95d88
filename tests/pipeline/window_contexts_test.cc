// Windows whose calling context cannot be named are counted, never dropped silently: a stack the
// tracer could not read, a malformed one, one that does not unwind, and a window without any
// stack and no stack sample near it. And a window that names its context through the thread's
// nearest stack sample (LBR has no stack of its own) lands in that sample's context. An image
// whose .eh_frame the unwinder refuses is counted by reason, once.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <vector>

#include "loop_window.h"
#include "pathprof/decoders/cfi_unwinder.h"
#include "pathprof/decoders/elf_image.h"
#include "pathprof/pipeline/profile_store.h"

namespace {

namespace pl = pathprof::pipeline;
using pathprof::BranchBatch;
using pathprof::BranchEvent;
using pathprof::BranchKind;

using pathprof::testing::LoopWindow;

std::unique_ptr<pl::ProfileStore> Store() {
  auto store =
      pl::ProfileStore::CreateOffline(4242, pl::SessionConfig{}, pl::BranchWindows::kTakenBranches,
                                      std::make_shared<pl::SymbolService>());
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return std::move(*store);
}

uint64_t Count(const std::map<std::string, uint64_t>& m, const std::string& prefix) {
  uint64_t n = 0;
  for (const auto& [k, v] : m)
    if (k.starts_with(prefix)) n += v;
  return n;
}

TEST(WindowContexts, WindowsWithoutANameableContextAreCountedByReason) {
  auto store = Store();
  BranchBatch unreadable = LoopWindow(1);
  unreadable.stack.error = EFAULT;
  store->AddBranches(unreadable);
  BranchBatch malformed = LoopWindow(2);
  malformed.stack.error = EBADMSG;
  store->AddBranches(malformed);
  BranchBatch few_regs = LoopWindow(3);
  few_regs.stack.regs = {1, 2, 3};  // not the 17 DWARF registers
  store->AddBranches(few_regs);
  store->AddBranches(LoopWindow(4));  // no stack at all, no stack sample
  // Registers that point nowhere: the instruction pointer in no mapping, no stack bytes.
  BranchBatch nowhere = LoopWindow(5);
  nowhere.stack.regs.assign(pathprof::decoders::kDwarfRegisterCount, 0);
  nowhere.stack.regs[pathprof::decoders::kDwarfRip] = 0x10;
  store->AddBranches(nowhere);

  const pl::TargetStats st = store->Stats();
  EXPECT_EQ(st.windows, 5u);
  EXPECT_EQ(Count(st.decode_errors, "window_stack_unreadable"), 1u);
  EXPECT_EQ(Count(st.decode_errors, "window_stack_malformed"), 2u);
  // The unwinder keeps the instruction pointer it cannot follow: a partial context, counted.
  EXPECT_EQ(Count(st.decode_errors, "window_stack_unwind"), 1u);
  EXPECT_EQ(Count(st.drops, "window_context_none"), 4u);
  EXPECT_EQ(st.windows_with_context, 1u);
  // What every window gave still counts process-wide.
  pl::HotPathsQuery q;
  q.with_blocks = false;
  EXPECT_FALSE(store->HotPaths(q).paths.empty());
}

TEST(WindowContexts, AnImageWhoseCfiIsRefusedIsCountedByReasonOnce) {
  // A copy of /bin/ls whose first CIE names return address register 200, beyond x86-64's: the
  // unwinder refuses the image's CFI before libdw reads it, and the store counts it.
  std::ifstream in("/bin/ls", std::ios::binary);
  std::vector<uint8_t> file(std::istreambuf_iterator<char>(in), {});
  // Version 1, "zR", code alignment 1, data alignment -8, return address 16: GCC's CIE.
  const std::vector<uint8_t> cie = {1, 'z', 'R', 0, 1, 0x78, 16};
  auto at = std::search(file.begin(), file.end(), cie.begin(), cie.end());
  ASSERT_NE(at, file.end());
  at[6] = 200;
  char path[] = "/tmp/pathprof_hostile_cfi_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, file.data(), file.size()), static_cast<ssize_t>(file.size()));
  close(fd);
  auto image = pathprof::decoders::ElfImage::Open(path);
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  uint64_t text_offset = 0;
  for (const auto& seg : (*image)->segments())
    if (seg.executable) text_offset = seg.file_offset;

  auto store = Store();
  pathprof::decoders::Mapping m;
  m.start = 0x7f0000000000;
  m.len = (file.size() + 4095) & ~uint64_t{4095};
  m.path = path;
  store->AddMapping(m);
  for (int i = 0; i < 2; ++i) {
    BranchBatch window = LoopWindow(1);
    window.stack.regs.assign(pathprof::decoders::kDwarfRegisterCount, 0);
    window.stack.regs[pathprof::decoders::kDwarfRip] = m.start + text_offset + 16;
    store->AddBranches(window);
  }
  const pl::TargetStats st = store->Stats();
  unlink(path);
  EXPECT_EQ(Count(st.decode_errors, "cfi_refused:register_out_of_range"), 1u);
  EXPECT_EQ(Count(st.decode_errors, "cfi_refused"), 1u);
}

TEST(WindowContexts, AWindowWithoutAStackTakesTheNearestStackSampleOfItsThread) {
  auto store = Store();
  pathprof::collectors::RawStackSample s;
  s.pid = 4242;
  s.tid = 7;
  s.time_ns = 1'000'000'000;
  s.user = {0x1004, 0x2010, 0x3020};  // loop, called from 0x2010, called from 0x3020
  store->AddStackSample(s);
  store->AddBranches(LoopWindow(1'010'000'000));  // 10 ms later: named by the sample
  store->AddBranches(LoopWindow(5'000'000'000));  // 4 s later: too far, no context
  const pl::TargetStats st = store->Stats();
  EXPECT_EQ(st.windows_with_context, 1u);
  EXPECT_EQ(Count(st.drops, "window_context_none"), 1u);

  // The sample's tree node carries the window; its id selects the window's paths.
  const pl::CallingContextTree tree = store->Cct(pl::CctQuery{});
  uint64_t leaf = 0;
  for (const pl::CctNode& n : tree.nodes)
    if (n.windows == 1 && n.function.address == 0x1004) leaf = n.context_id;
  ASSERT_NE(leaf, 0u);
  pl::HotPathsQuery q;
  q.with_blocks = false;
  q.context = pl::ContextSelector{0, leaf, {}};
  const pl::HotPathsResult r = store->HotPaths(q);
  EXPECT_EQ(r.contexts_matched, 1u);
  EXPECT_EQ(r.context_windows, 1u);
  ASSERT_FALSE(r.paths.empty());
  EXPECT_EQ(r.paths[0].start.address & ~uint64_t{0xfff}, 0x1000u);
  // Another pid's selector matches nothing here.
  q.context->pid = 1;
  EXPECT_EQ(store->HotPaths(q).contexts_matched, 0u);
}

TEST(WindowContexts, AMinimumWeightLeavesOutALightNodeThatWindowsName) {
  auto store = Store();
  pathprof::collectors::RawStackSample s;
  s.pid = 4242;
  s.tid = 9;  // a heavy leaf at 0x6004: nine samples of ten
  s.user = {0x6004, 0x2010, 0x3020};
  for (int i = 0; i < 9; ++i) {
    s.time_ns = 100'000'000ull * (i + 1);
    store->AddStackSample(s);
  }
  s.tid = 7;  // the window's thread: one sample of ten, at the loop
  s.time_ns = 1'000'000'000;
  s.user = {0x1004, 0x2010, 0x3020};
  store->AddStackSample(s);
  store->AddBranches(LoopWindow(1'010'000'000));
  ASSERT_EQ(store->Stats().windows_with_context, 1u);

  auto loop_node = [](const pl::CallingContextTree& t) -> const pl::CctNode* {
    for (const pl::CctNode& n : t.nodes)
      if (n.function.address == 0x1004) return &n;
    return nullptr;
  };
  const pl::CallingContextTree all = store->Cct(pl::CctQuery{});
  const pl::CctNode* shown = loop_node(all);
  ASSERT_NE(shown, nullptr);
  EXPECT_EQ(shown->windows, 1u);
  pl::CctQuery bounded;
  bounded.min_weight = 0.3;  // the loop's leaf has 10% of the weight
  const pl::CallingContextTree cut = store->Cct(bounded);
  EXPECT_EQ(loop_node(cut), nullptr);
  EXPECT_LT(cut.nodes.size(), all.nodes.size());
}

}  // namespace
