// Back-pressure, source choice and config checks, without collectors: items are offered to the
// Ingestor by hand and applied to a ProfileStore of this test process.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "pathprof/core/procfs.h"
#include "pathprof/decoders/address_space.h"
#include "pathprof/pipeline/ingestor.h"
#include "pathprof/pipeline/profile_store.h"
#include "pathprof/pipeline/session.h"
#include "pathprof/pipeline/symbol_service.h"

namespace {

namespace pl = pathprof::pipeline;

extern "C" __attribute__((noinline)) int pathprof_ingest_marker(int x) {
  return x * 3 + 1;
}

pl::SessionConfig SelfConfig() {
  pl::SessionConfig c;
  c.pids = {static_cast<uint32_t>(getpid())};
  return c;
}

pathprof::collectors::RawStackSample SampleAt(uint64_t leaf) {
  pathprof::collectors::RawStackSample s;
  s.pid = static_cast<uint32_t>(getpid());
  s.tid = s.pid;
  s.user = {leaf};
  return s;
}

TEST(IngestorTest, SlowConsumerDropsAreCountedByReason) {
  auto store = pl::ProfileStore::Create(static_cast<uint32_t>(getpid()), SelfConfig(),
                                        pl::BranchWindows::kTakenBranches,
                                        std::make_shared<pl::SymbolService>());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  std::shared_ptr<pl::ProfileStore> s = std::move(*store);
  pl::QueueSettings q;
  q.stack_queue = 4;
  q.window_queue = 2;
  pl::Ingestor ingestor(
      q, [s](uint32_t pid) { return pid == s->pid() ? s : std::shared_ptr<pl::ProfileStore>(); });
  ingestor.SetPausedForTesting(true);
  const uint64_t leaf = reinterpret_cast<uint64_t>(&pathprof_ingest_marker) + 4;
  int accepted = 0;
  for (int i = 0; i < 10; ++i) accepted += ingestor.OfferStack(SampleAt(leaf)) ? 1 : 0;
  pathprof::BranchBatch window;
  window.pid = s->pid();
  window.tid = s->pid();
  window.window = true;
  window.events = {{0x1000, 0x1010, 0, 0, pathprof::BranchKind::kConditional, true, false}};
  int windows_accepted = 0;
  for (int i = 0; i < 5; ++i) windows_accepted += ingestor.OfferBranches(window) ? 1 : 0;
  EXPECT_EQ(accepted, 4);
  EXPECT_EQ(windows_accepted, 2);
  // Not a target: counted apart, never silently lost.
  auto stranger = SampleAt(leaf);
  stranger.pid = 1;
  EXPECT_FALSE(ingestor.OfferStack(stranger));
  EXPECT_EQ(ingestor.not_a_target(), 1u);

  ingestor.SetPausedForTesting(false);
  ingestor.Flush();
  ingestor.Close();
  const pl::TargetStats st = s->Stats();
  EXPECT_EQ(st.stack_samples, 4u);
  EXPECT_EQ(st.windows, 2u);
  EXPECT_EQ(st.drops.at("stack_queue_full"), 6u);
  EXPECT_EQ(st.drops.at("window_queue_full"), 3u);
  // After Close nothing is taken, and that is counted too.
  EXPECT_FALSE(ingestor.OfferStack(SampleAt(leaf)));
  EXPECT_EQ(s->Stats().drops.at("session_closed"), 1u);

  // The samples were keyed by function and symbolize at query time.
  const pl::HotMethodsResult m = s->HotMethods(1);
  ASSERT_EQ(m.methods.size(), 1u);
  EXPECT_EQ(m.methods[0].function.function, "pathprof_ingest_marker");
  EXPECT_EQ(m.methods[0].function.offset, 0u);
  EXPECT_DOUBLE_EQ(m.methods[0].self.share, 1.0);
}

// The PCCT keys stacks by function; the store also keeps where in the function each leaf
// sample stood, so that an export can give every address (and line) its own count.
TEST(IngestorTest, LeafAddressesKeepEachSampledAddressAndItsCount) {
  auto store = pl::ProfileStore::Create(static_cast<uint32_t>(getpid()), SelfConfig(),
                                        pl::BranchWindows::kTakenBranches,
                                        std::make_shared<pl::SymbolService>());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  const uint64_t entry = reinterpret_cast<uint64_t>(&pathprof_ingest_marker);
  for (int i = 0; i < 3; ++i) (*store)->AddStackSample(SampleAt(entry + 1));
  for (int i = 0; i < 5; ++i) (*store)->AddStackSample(SampleAt(entry + 4));
  const auto at = (*store)->LeafAddresses(entry);
  ASSERT_EQ(at.size(), 2u);
  EXPECT_EQ(at[0].first.address, entry + 1);
  EXPECT_EQ(at[0].second, 3u);
  EXPECT_EQ(at[1].first.address, entry + 4);
  EXPECT_EQ(at[1].second, 5u);
  EXPECT_EQ(at[1].first.function, "pathprof_ingest_marker");
  EXPECT_EQ(at[1].first.offset, 4u);
  EXPECT_GT(at[1].first.map_limit, at[1].first.map_start) << "the mapping's range is known";
  EXPECT_TRUE((*store)->LeafAddresses(entry + 1).empty()) << "keyed by the function's entry";
}

TEST(IngestorTest, WindowsFeedPathsSubpathsAndCallPairs) {
  auto store = pl::ProfileStore::Create(static_cast<uint32_t>(getpid()), SelfConfig(),
                                        pl::BranchWindows::kTakenBranches,
                                        std::make_shared<pl::SymbolService>());
  ASSERT_TRUE(store.ok());
  using pathprof::BranchKind;
  // A loop at 0x2000..0x2010 entered by a call: each window sees the call, then 3 iterations
  // (backward branch 0x2010 -> 0x2000, taken).
  pathprof::BranchBatch w;
  w.pid = (*store)->pid();
  w.tid = w.pid;
  w.window = true;
  w.events.push_back({0x1000, 0x2000, 0, 0, BranchKind::kDirectCall, true, false});
  for (int i = 0; i < 3; ++i) {
    w.events.push_back({0x2004, 0x2008, 0, 0, BranchKind::kConditional, false, false});
    w.events.push_back({0x2010, 0x2000, 0, 0, BranchKind::kConditional, true, false});
  }
  for (int i = 0; i < 10; ++i) (*store)->AddBranches(w);
  pl::HotPathsQuery q;
  q.top_k = 5;
  const pl::HotPathsResult paths = (*store)->HotPaths(q);
  EXPECT_EQ(paths.estimator, pl::PathEstimator::kWindows);
  ASSERT_FALSE(paths.paths.empty());
  // The loop body path (start 0x2000, not-taken then taken) is the hottest: 2 whole traversals
  // per window (the first starts at the call, the last is cut by the window end).
  EXPECT_EQ(paths.paths[0].start.address, 0x2000u);
  EXPECT_EQ(paths.paths[0].length, 2u);
  EXPECT_EQ(paths.paths[0].outcomes, 0b10u);
  ASSERT_EQ(paths.paths[0].blocks.size(), 2u);
  EXPECT_EQ(paths.paths[0].blocks[1].address, 0x2008u);
  const pl::HotCallPairsResult pairs = (*store)->HotCallPairs(3);
  ASSERT_EQ(pairs.pairs.size(), 1u);
  EXPECT_EQ(pairs.pairs[0].call_site.address, 0x1000u);
  EXPECT_EQ(pairs.pairs[0].target.address, 0x2000u);
  EXPECT_DOUBLE_EQ(pairs.pairs[0].estimate.value, 10);
  EXPECT_EQ((*store)->Stats().windows, 10u);
  EXPECT_EQ((*store)->Stats().branches, 70u);
  EXPECT_FALSE((*store)->PathKeys().empty());
}

TEST(SourceChoiceTest, AutoTakesTheBestAndSaysWhy) {
  pathprof::collectors::HostCapabilities caps;
  caps.ptrace = {true, "ok"};
  caps.lbr = {false, "no hardware PMU"};
  caps.intel_pt = {false, "no intel_pt PMU"};
  std::string why;
  auto s = pl::ChooseBranchSource(pl::SourceChoice::kAuto, caps, &why);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, pathprof::collectors::BranchSource::kPtraceBursts);
  EXPECT_NE(why.find("no hardware PMU"), std::string::npos) << why;
  EXPECT_NE(why.find("no intel_pt PMU"), std::string::npos) << why;

  auto lbr = pl::ChooseBranchSource(pl::SourceChoice::kLbr, caps, &why);
  EXPECT_EQ(lbr.status().code(), pathprof::ErrorCode::kUnavailable);
  EXPECT_NE(lbr.status().message().find("no hardware PMU"), std::string::npos);

  caps.ptrace = {false, "ptrace_scope 3"};
  auto none = pl::ChooseBranchSource(pl::SourceChoice::kAuto, caps, &why);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, pathprof::collectors::BranchSource::kNone);
  EXPECT_NE(why.find("ptrace_scope 3"), std::string::npos) << why;
}

// The reason says why, never which: every reader prints the source's word beside it (pathctl
// run's "source: ptrace: ...", pathtop's details, pathctl session), which read "ptrace: ptrace:
// auto (best available)" when the reason began with the word too.
TEST(SourceChoiceTest, TheReasonDoesNotRepeatTheSourcesWord) {
  pathprof::collectors::HostCapabilities caps;
  caps.ptrace = {true, "ok"};
  caps.lbr = {false, "no hardware PMU"};
  caps.intel_pt = {false, "no intel_pt PMU"};
  std::string why;
  ASSERT_TRUE(pl::ChooseBranchSource(pl::SourceChoice::kAuto, caps, &why).ok());
  EXPECT_EQ(why.rfind("auto (best available)", 0), 0u) << why;
  ASSERT_TRUE(pl::ChooseBranchSource(pl::SourceChoice::kPtrace, caps, &why).ok());
  EXPECT_EQ(why, "asked for");
  ASSERT_TRUE(pl::ChooseBranchSource(pl::SourceChoice::kNone, caps, &why).ok());
  EXPECT_EQ(why, "asked for (stacks only)");
  caps.ptrace = {false, "ptrace_scope 3"};
  ASSERT_TRUE(pl::ChooseBranchSource(pl::SourceChoice::kAuto, caps, &why).ok());
  EXPECT_EQ(why.rfind("auto (best available)", 0), 0u) << why;
}

TEST(SessionConfigTest, ValidateNamesTheBadField) {
  pl::SessionConfig c;
  EXPECT_NE(c.Validate().message().find("pid"), std::string::npos);
  c.pids = {1};
  EXPECT_TRUE(c.Validate().ok());
  c.engine.max_path_length = 65;
  EXPECT_NE(c.Validate().message().find("max_path_length"), std::string::npos);
  c.engine.max_path_length = 32;
  c.engine.hpt_entries = 96;
  EXPECT_NE(c.Validate().message().find("hpt_entries"), std::string::npos);
  c.engine.hpt_entries = 512;
  c.osp.max_length = 1000;
  EXPECT_NE(c.Validate().message().find("osp.max_length"), std::string::npos);
  pl::SourceChoice sc;
  EXPECT_TRUE(pl::ParseSourceChoice("pt", &sc));
  EXPECT_EQ(sc, pl::SourceChoice::kIntelPt);
  EXPECT_FALSE(pl::ParseSourceChoice("perf", &sc));
  c.osp.max_length = 1024;
  c.sampling.stack_copy_bytes = 70000;
  EXPECT_NE(c.Validate().message().find("sampling.stack_copy_bytes must be 4096..65536"),
            std::string::npos)
      << c.Validate().message();
}

// perf's spelling of the stack copy: "dwarf,SIZE" sets both; a size out of range, on "fp", or
// with a unit is not one.
// Every process: no pids, stacks (and snapshot windows, which stop nothing) only, an admin's;
// its memory bound counts max_descendants processes, as many as it may make stores for.
TEST(SessionConfigTest, EveryProcessIsAnAdminsStacksOnlySessionWithoutPids) {
  pl::SessionConfig c;
  c.every_process = true;
  c.source = pl::SourceChoice::kNone;
  EXPECT_TRUE(c.Validate().ok()) << c.Validate().ToString();
  pl::SessionConfig one = c;
  one.every_process = false;
  one.pids = {1};
  EXPECT_GT(c.MemoryBoundBytes(), 2 * one.MemoryBoundBytes());
  c.pids = {1};
  EXPECT_NE(c.Validate().message().find("not both"), std::string::npos);
  c.pids.clear();
  c.source = pl::SourceChoice::kSnapshot;
  EXPECT_TRUE(c.Validate().ok()) << c.Validate().ToString();
  for (pl::SourceChoice stops : {pl::SourceChoice::kAuto, pl::SourceChoice::kPtrace}) {
    c.source = stops;
    EXPECT_NE(c.Validate().message().find("only from snapshots"), std::string::npos);
  }
  c.source = pl::SourceChoice::kNone;
  c.confine_to_uid = 1000;
  EXPECT_NE(c.Validate().message().find("only an admin"), std::string::npos);
}

TEST(SessionConfigTest, CallGraphSpecTakesPerfsDwarfSize) {
  pl::CallGraph g = pl::CallGraph::kFramePointers;
  uint32_t bytes = 0;
  EXPECT_TRUE(pl::ParseCallGraphSpec("dwarf,65536", &g, &bytes));
  EXPECT_EQ(g, pl::CallGraph::kDwarf);
  EXPECT_EQ(bytes, 65536u);
  bytes = 7;
  EXPECT_TRUE(pl::ParseCallGraphSpec("fp", &g, &bytes));
  EXPECT_EQ(g, pl::CallGraph::kFramePointers);
  EXPECT_EQ(bytes, 7u);  // no size given: left as it was
  for (const char* bad :
       {"dwarf,", "dwarf,4095", "dwarf,65537", "fp,8192", "dwarf,8k", "dwarf,-1", "lbr"})
    EXPECT_FALSE(pl::ParseCallGraphSpec(bad, &g, &bytes)) << bad;
}

// An exec nobody reported (no tracer: a stacks-only session) is seen in the maps: the vdso moved.
// The old image's mappings are then replaced, not kept beside the new ones (an exec loop would
// pile them up), and the process's executable is read again.
TEST(ProfileStoreTest, AnExecNobodyReportedIsSeenInTheMaps) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    usleep(300'000);
    execl("/bin/sleep", "sleep", "5", static_cast<char*>(nullptr));
    _exit(127);
  }
  pl::SessionConfig c;
  c.pids = {static_cast<uint32_t>(child)};
  auto store = pl::ProfileStore::Create(static_cast<uint32_t>(child), c, pl::BranchWindows::kNone,
                                        std::make_shared<pl::SymbolService>());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ASSERT_TRUE((*store)->RefreshMappings().ok());
  EXPECT_EQ((*store)->Info().execs, 0u);
  usleep(800'000);
  ASSERT_TRUE((*store)->RefreshMappings().ok());
  const pl::TargetInfo info = (*store)->Info();
  EXPECT_EQ(info.execs, 1u);
  EXPECT_EQ(info.executable, "/usr/bin/sleep");
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
}

}  // namespace

namespace {

// A text symbol of the core kernel at least two bytes long (start + 1 is still inside it), from
// /proc/kallsyms as read here; address 0 where it shows none (kptr_restrict, not root).
struct KernelFunction {
  uint64_t address = 0;
  std::string name;
};

KernelFunction TwoByteKernelFunction() {
  auto text = pathprof::procfs::Procfs::Host().ReadGlobal("kallsyms", 64u << 20);
  if (!text.ok()) return {};
  // Two consecutive text symbols of the core kernel, so that start + 1 is still inside the first.
  unsigned long long prev_addr = 0, before_prev = 0;  // an alias shares its address: skip those
  std::string prev_name;
  unsigned long long addr = 0;
  std::string name;
  size_t pos = 0;
  while (pos < text->size()) {
    size_t nl = text->find('\n', pos);
    if (nl == std::string::npos) nl = text->size();
    const std::string line = text->substr(pos, nl - pos);
    pos = nl + 1;
    char type = 0, sym[256] = {};
    unsigned long long a = 0;
    if (std::sscanf(line.c_str(), "%llx %c %255s", &a, &type, sym) != 3 ||
        (type != 'T' && type != 't'))
      continue;
    if (line.find('[') != std::string::npos) break;  // modules follow the core kernel
    if (prev_addr != 0 && a > prev_addr + 1 && before_prev != prev_addr) {
      addr = prev_addr;
      name = prev_name;
    }
    before_prev = prev_addr;
    prev_addr = a;
    prev_name = sym;
  }
  return {addr, name};
}

}  // namespace

// Kernel frames are named from /proc/kallsyms (the table keeps views into the text it read):
// every text symbol's own address and an address inside it give its name and start.
TEST(SymbolServiceTest, KernelAddressesAreNamedFromKallsyms) {
  const KernelFunction k = TwoByteKernelFunction();
  if (k.address == 0) GTEST_SKIP() << "kallsyms shows no addresses (kptr_restrict, not root)";
  const uint64_t addr = k.address;
  const std::string& name = k.name;
  pl::SymbolService symbols;
  pathprof::decoders::AddressSpace none;
  const pl::Location at = symbols.Symbolize(0, none, addr + 1);
  EXPECT_EQ(at.function, name);
  EXPECT_EQ(at.offset, 1u);
  EXPECT_EQ(at.image, "[kernel.kallsyms]");
  EXPECT_EQ(symbols.KernelFunctionStart(addr + 1), addr);
}

TEST(SymbolServiceTest, SourceLinesAreReadOnlyWhereAsked) {
  auto space = pathprof::decoders::ReadProcMaps(getpid());
  ASSERT_TRUE(space.ok()) << space.status().ToString();
  const auto address = reinterpret_cast<uint64_t>(&pathprof_ingest_marker);
  pl::SymbolService symbols;
  // Off: the function and its offset from the symbol table, no file, line or inline frames.
  symbols.SetSourceLines(false);
  const pl::Location name_only = symbols.Symbolize(0, *space, address + 1);
  EXPECT_EQ(name_only.function, "pathprof_ingest_marker");
  EXPECT_EQ(name_only.offset, 1u);
  EXPECT_EQ(name_only.file, "");
  EXPECT_EQ(name_only.line, 0u);
  EXPECT_TRUE(name_only.inlined_by.empty());
  // On again (the default): the same address gets this file's line.
  symbols.SetSourceLines(true);
  const pl::Location with_lines = symbols.Symbolize(0, *space, address + 1);
  EXPECT_EQ(with_lines.function, "pathprof_ingest_marker");
  EXPECT_NE(with_lines.file.find("ingest_test.cc"), std::string::npos) << with_lines.file;
  EXPECT_GT(with_lines.line, 0u);
}

namespace {

// A store of this process (whose user frames name pathprof_ingest_marker) over `symbols`.
pathprof::Result<std::unique_ptr<pl::ProfileStore>> StoreOfThisProcess(
    std::shared_ptr<pl::SymbolService> symbols) {
  return pl::ProfileStore::Create(static_cast<uint32_t>(getpid()), SelfConfig(),
                                  pl::BranchWindows::kTakenBranches, std::move(symbols));
}
uint64_t MarkerAddress() {
  return reinterpret_cast<uint64_t>(&pathprof_ingest_marker) + 1;
}

pathprof::collectors::RawStackSample KernelSampleAt(uint64_t kernel_leaf, uint64_t user_leaf) {
  pathprof::collectors::RawStackSample s = SampleAt(user_leaf);
  s.kernel = {kernel_leaf};
  return s;
}

}  // namespace

// Kernel frames are named when a query shows them, not at ingest: two addresses of one kernel
// function are one hot method and one node of the tree, named from kallsyms then.
TEST(SymbolServiceTest, KernelFramesAreNamedWhenAQueryShowsThem) {
  const KernelFunction k = TwoByteKernelFunction();
  if (k.address == 0) GTEST_SKIP() << "kallsyms shows no addresses (kptr_restrict, not root)";
  auto symbols = std::make_shared<pl::SymbolService>();
  auto store = StoreOfThisProcess(symbols);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  const uint64_t user = MarkerAddress();
  (*store)->AddStackSample(KernelSampleAt(k.address, user));
  (*store)->AddStackSample(KernelSampleAt(k.address + 1, user));
  EXPECT_FALSE(symbols->KernelSymbolsRead()) << "the kernel's table was read at ingest";

  const pl::HotMethodsResult methods = (*store)->HotMethods(10);
  int named = 0;
  for (const pl::HotMethod& m : methods.methods) {
    if (m.function.function != k.name) continue;
    ++named;
    EXPECT_EQ(m.function.address, k.address);
    EXPECT_EQ(m.self.value, 2.0) << "both addresses are one function's";
  }
  EXPECT_EQ(named, 1);
  const pl::CallingContextTree tree = (*store)->Cct(pl::CctQuery{});
  std::vector<const pl::CctNode*> kernel_nodes;
  uint64_t user_node = 0;
  for (const pl::CctNode& n : tree.nodes) {
    if (n.function.function == k.name) kernel_nodes.push_back(&n);
    if (n.function.function == "pathprof_ingest_marker") user_node = n.id;
  }
  ASSERT_EQ(kernel_nodes.size(), 1u);
  EXPECT_EQ(kernel_nodes[0]->total_weight, 2.0);
  EXPECT_EQ(kernel_nodes[0]->parent_id, user_node);
  EXPECT_EQ(kernel_nodes[0]->call_site.address, user);
  EXPECT_TRUE(symbols->KernelSymbolsRead());
}

// A query none of whose answer can be a kernel frame leaves the kernel's table unread: one kernel
// sample beside twenty of a user function is not in the top one, nor in a tree cut at a half.
TEST(SymbolServiceTest, KernelFramesNoQueryShowsLeaveTheTableUnread) {
  const KernelFunction k = TwoByteKernelFunction();
  if (k.address == 0) GTEST_SKIP() << "kallsyms shows no addresses (kptr_restrict, not root)";
  auto symbols = std::make_shared<pl::SymbolService>();
  auto store = StoreOfThisProcess(symbols);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  const uint64_t user = MarkerAddress();
  for (int i = 0; i < 20; ++i) (*store)->AddStackSample(SampleAt(user));
  (*store)->AddStackSample(KernelSampleAt(k.address, user));

  const pl::HotMethodsResult top = (*store)->HotMethods(1);
  ASSERT_EQ(top.methods.size(), 1u);
  EXPECT_EQ(top.methods[0].function.function, "pathprof_ingest_marker");
  EXPECT_EQ(top.methods[0].self.value, 20.0);
  pl::CctQuery half;
  half.min_weight = 0.5;
  const pl::CallingContextTree tree = (*store)->Cct(half);
  ASSERT_EQ(tree.nodes.size(), 1u);
  EXPECT_EQ(tree.nodes[0].function.function, "pathprof_ingest_marker");
  EXPECT_FALSE(symbols->KernelSymbolsRead());
  // Asked for more, the kernel function is there, by its name.
  const pl::HotMethodsResult all = (*store)->HotMethods(10);
  ASSERT_EQ(all.methods.size(), 2u);
  EXPECT_EQ(all.methods[1].function.function, k.name);
  EXPECT_EQ(all.methods[1].self.value, 1.0);
  EXPECT_TRUE(symbols->KernelSymbolsRead());
}
