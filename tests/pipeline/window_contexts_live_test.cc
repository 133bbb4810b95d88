// Hot paths per calling context, end to end: example_two_callers_static runs one loop from two
// callers that send its branch opposite ways. A real Session (ptrace bursts, the host's step
// mode, emulated windows where the probe finds them exact) attributes each window to the stack
// the tracer read when it stopped the thread, and the two contexts (caller_a > loop,
// caller_b > loop) must each show the top path the exact trace (every branch) gives that
// context, and not the same one. The program is static and not PIE, so the addresses of the
// exact run and the profiled run agree.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <unordered_map>

#include "pathprof/collectors/capabilities.h"
#include "pathprof/decoders/elf_function_symbols.h"
#include "pathprof/hwmodel/path_stack.h"
#include "pathprof/pipeline/session.h"
#include "pathprof/stepping/exact_tracer.h"

extern char** environ;

namespace {

namespace pl = pathprof::pipeline;
namespace hw = pathprof::hwmodel;
using pathprof::BranchBatch;
using pathprof::BranchKind;

std::string Bin(const std::string& name) {
  return std::string(PATHPROF_BIN_DIR) + "/" + name;
}

struct Range {
  uint64_t begin = 0, end = 0;
  bool Holds(uint64_t a) const { return a >= begin && a < end; }
};

// [value, value + size) of each named function symbol (static, not PIE: runtime = link address).
std::map<std::string, Range> FunctionRanges(const std::string& path) {
  std::map<std::string, Range> out;
  for (const char* name : {"loop", "caller_a", "caller_b"}) {
    auto f = pathprof::decoders::ReadFunctionNamed(path, name);
    EXPECT_TRUE(f.ok()) << f.status().ToString();
    if (f.ok()) out[name] = {f->vaddr, f->vaddr + f->size};
  }
  return out;
}

using Counts = std::unordered_map<hw::PathDescriptor, uint64_t, hw::PathDescriptorHash>;

// Exact path counts of the loop's paths by the caller that called it: a shadow of the one
// call level that matters (caller -> loop), kept from the call and return events.
std::map<std::string, Counts> ExactByCaller(const std::string& exe,
                                            const std::map<std::string, Range>& fn) {
  auto stack = hw::PathStack::Create(hw::BallLarusPreset());
  EXPECT_TRUE(stack.ok());
  std::map<std::string, Counts> out;
  std::string caller;  // of the running activation of loop, "" outside it
  pathprof::stepping::ExactTraceSink sink;
  sink.on_batch = [&](const BranchBatch& b) {
    if (b.gap_before) stack->Reset();
    for (const pathprof::BranchEvent& e : b.events) {
      stack->Process(e, [&](const hw::CompletedPath& c) {
        if (!caller.empty() && fn.at("loop").Holds(c.path.start)) ++out[caller][c.path];
      });
      if (pathprof::IsCall(e.kind) && e.to == fn.at("loop").begin)
        caller = fn.at("caller_a").Holds(e.from)   ? "caller_a"
                 : fn.at("caller_b").Holds(e.from) ? "caller_b"
                                                   : "";
      if (e.kind == BranchKind::kReturn && fn.at("loop").Holds(e.from)) caller.clear();
    }
    return pathprof::Status::Ok();
  };
  pathprof::stepping::ExactTraceOptions options;
  // One round of 20 calls per caller, 1000 iterations each: the mix of every longer run.
  options.argv = {exe, "1", "1000", "20"};
  options.step_mode = pathprof::stepping::ExactStepMode::kBlocks;
  auto stats = pathprof::stepping::TraceExact(options, sink);
  EXPECT_TRUE(stats.ok()) << stats.status().ToString();
  return out;
}

hw::PathDescriptor Top(const Counts& c) {
  hw::PathDescriptor best;
  uint64_t most = 0;
  for (const auto& [p, n] : c)
    if (n > most) best = p, most = n;
  return best;
}

hw::PathDescriptor Of(const pl::HotPath& p) {
  return {p.start.address, static_cast<uint8_t>(p.length), p.outcomes};
}

pid_t Spawn(const std::vector<std::string>& argv) {
  std::vector<char*> v;
  for (const auto& a : argv) v.push_back(const_cast<char*>(a.c_str()));
  v.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, v[0], nullptr, nullptr, v.data(), environ) != 0) return -1;
  return pid;
}

TEST(WindowContextsLive, EachCallerOfTheLoopHasTheTopPathTheExactTraceGivesIt) {
  const std::string exe = Bin("example_two_callers_static");
  const auto fn = FunctionRanges(exe);
  ASSERT_EQ(fn.size(), 3u) << exe << ": loop, caller_a or caller_b missing from its symbols";
  auto exact = ExactByCaller(exe, fn);
  ASSERT_GT(exact["caller_a"].size(), 0u);
  ASSERT_GT(exact["caller_b"].size(), 0u);
  const hw::PathDescriptor exact_a = Top(exact["caller_a"]), exact_b = Top(exact["caller_b"]);
  ASSERT_FALSE(exact_a == exact_b) << "the program no longer sends the callers' branches apart";

  const pid_t child = Spawn({exe, "0"});  // forever: phases of ~20 ms per caller
  ASSERT_GT(child, 0);
  const auto caps = pathprof::collectors::ProbeHostCapabilities();
  pl::SessionConfig config;
  config.pids = {static_cast<uint32_t>(child)};
  config.source = pl::SourceChoice::kPtrace;
  config.sampling.stack_hz = 0;  // the windows' own stacks name their contexts
  auto session = pl::Session::Start("contexts", config, caps, nullptr);
  if (!session.ok()) {
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    GTEST_SKIP() << "no ptrace session here: " << session.status().ToString();
  }
  pl::HotPathsQuery a, b;
  a.top_k = b.top_k = 3;
  a.with_blocks = b.with_blocks = false;
  a.context = pl::ContextSelector{0, 0, {"caller_a", "loop"}};
  b.context = pl::ContextSelector{0, 0, {"caller_b", "loop"}};
  pl::HotPathsResult in_a, in_b;
  // Until each context has seen enough windows: 3 s at least, at most 40 s (a loaded host
  // where the probe picks a stepped mode gives a few windows a second).
  for (int i = 0; i < 200; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    in_a = (*session)->HotPaths(a);
    in_b = (*session)->HotPaths(b);
    if (in_a.context_windows >= 50 && in_b.context_windows >= 50 && i >= 15) break;
  }
  (*session)->Stop();
  const auto stats = (*session)->Stats();
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  ASSERT_EQ(stats.size(), 1u);
  std::string drops;
  for (const auto& [k, v] : stats[0].drops) drops += " " + k + "=" + std::to_string(v);
  for (const auto& [k, v] : stats[0].decode_errors) drops += " " + k + "=" + std::to_string(v);
  std::printf("windows %llu, with a context %llu;%s\n", (unsigned long long)stats[0].windows,
              (unsigned long long)stats[0].windows_with_context, drops.c_str());
  std::printf("caller_a > loop: %llu windows; caller_b > loop: %llu windows\n",
              (unsigned long long)in_a.context_windows, (unsigned long long)in_b.context_windows);
  ASSERT_EQ(in_a.contexts_matched, 1u);
  ASSERT_EQ(in_b.contexts_matched, 1u);
  ASSERT_FALSE(in_a.paths.empty());
  ASSERT_FALSE(in_b.paths.empty());
  std::printf("exact    a %s\n         b %s\n", hw::FormatPathDescriptor(exact_a).c_str(),
              hw::FormatPathDescriptor(exact_b).c_str());
  std::printf(
      "sessions a %s (%.0f%%)\n         b %s (%.0f%%)\n",
      hw::FormatPathDescriptor(Of(in_a.paths[0])).c_str(), 100 * in_a.paths[0].estimate.share,
      hw::FormatPathDescriptor(Of(in_b.paths[0])).c_str(), 100 * in_b.paths[0].estimate.share);
  EXPECT_EQ(Of(in_a.paths[0]), exact_a);
  EXPECT_EQ(Of(in_b.paths[0]), exact_b);
  // Most windows name their context: the tracer read every stopped thread's stack.
  EXPECT_GT(stats[0].windows_with_context, stats[0].windows * 9 / 10);

  // The other way round: caller_a's top path was seen mostly under caller_a.
  pl::HotPathsQuery all;
  all.top_k = 10;
  all.with_blocks = false;
  all.contexts_per_path = 4;
  const pl::HotPathsResult everything = (*session)->HotPaths(all);
  bool found = false;
  for (const pl::HotPath& p : everything.paths) {
    if (!(Of(p) == exact_a)) continue;
    found = true;
    ASSERT_FALSE(p.contexts.empty());
    const pl::PathContext& heaviest = p.contexts[0];
    ASSERT_GE(heaviest.functions.size(), 2u);
    EXPECT_EQ(heaviest.functions.back().function, "loop");
    EXPECT_EQ(heaviest.functions[heaviest.functions.size() - 2].function, "caller_a");
    EXPECT_GT(heaviest.estimate.share, 0.8);
    EXPECT_NE(heaviest.node, 0u);
    // And the node id selects the same context.
    pl::HotPathsQuery by_node = a;
    by_node.context = pl::ContextSelector{0, heaviest.node, {}};
    const pl::HotPathsResult again = (*session)->HotPaths(by_node);
    ASSERT_FALSE(again.paths.empty());
    EXPECT_EQ(Of(again.paths[0]), exact_a);
  }
  EXPECT_TRUE(found) << "caller_a's exact top path is not among the session's top 10";
}

}  // namespace
