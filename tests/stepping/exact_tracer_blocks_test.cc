// Block stepping in the exact tracer (src/exact_block_stepper.h) against single steps: the same
// program traced both ways gives the same branch events, event for event (from, to, kind,
// taken, instructions since the last), thread by thread, while stopping far less often; and
// signals that cut legs short anywhere lose nothing, or mark a gap where two paths lead.
#include <gtest/gtest.h>
#include <sys/personality.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "common/pid_wrap.h"
#include "pathprof/core/procfs.h"
#include "pathprof/stepping/exact_tracer.h"
#include "pathprof/stepping/step_probe.h"

namespace pathprof::stepping {
namespace {

std::string Bin(const std::string& name) {
  char buf[PATH_MAX];
  std::string p = std::string(PATHPROF_BIN_DIR) + "/" + name;
  return realpath(p.c_str(), buf) ? std::string(buf) : p;
}

// One thread's stream: its events in order, and how many gaps it has.
struct ThreadStream {
  std::vector<BranchEvent> events;
  int gaps = 0;
};

struct Trace {
  std::vector<ThreadStream> threads;  // in the order the threads were created in
  ExactTraceStats stats;
  bool ok = false;
};

// The order a thread was created in, from its tid: the kernel hands out ids upwards from the
// process's own and wraps past pid_max, so a thread created after the wrap has a smaller tid
// than the threads before it (a full test run, forking thousands of processes, wraps the 32,768
// ids of a default pid_max often: the workers of two runs were then compared in different
// orders). Right while fewer than pid_max ids are handed out during one trace.
uint32_t CreationOrder(uint32_t pid, uint32_t tid) {
  static const uint32_t pid_max = static_cast<uint32_t>(
      procfs::Procfs::Host().ReadSysctlInt("sys/kernel/pid_max", 4 * 1024 * 1024));
  return tid >= pid ? tid - pid : tid + pid_max - pid;
}

Trace TraceIn(const std::vector<std::string>& argv, ExactStepMode mode) {
  Trace t;
  std::map<uint32_t, ThreadStream> by_creation;
  ExactTraceSink sink;
  sink.on_batch = [&](const BranchBatch& b) {
    ThreadStream& s = by_creation[CreationOrder(b.pid, b.tid)];
    s.gaps += b.gap_before ? 1 : 0;
    s.events.insert(s.events.end(), b.events.begin(), b.events.end());
    return Status::Ok();
  };
  ExactTraceOptions o;
  o.argv = argv;
  o.step_mode = mode;
  auto r = TraceExact(o, sink);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return t;
  t.stats = *r;
  t.ok = true;
  for (auto& [order, s] : by_creation) t.threads.push_back(std::move(s));
  return t;
}

std::string Describe(const BranchEvent& e) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "%llx->%llx kind %d %s after %u",
                static_cast<unsigned long long>(e.from), static_cast<unsigned long long>(e.to),
                static_cast<int>(e.kind), e.taken ? "taken" : "not taken", e.instructions);
  return buf;
}

bool Same(const BranchEvent& a, const BranchEvent& b) {
  return a.from == b.from && a.to == b.to && a.kind == b.kind && a.taken == b.taken &&
         a.instructions == b.instructions;
}

// The first difference between two streams, or "" when they are the same.
std::string FirstDifference(const ThreadStream& a, const ThreadStream& b) {
  const size_t n = std::min(a.events.size(), b.events.size());
  for (size_t i = 0; i < n; ++i)
    if (!Same(a.events[i], b.events[i]))
      return "event " + std::to_string(i) + ": single steps " + Describe(a.events[i]) +
             ", blocks " + Describe(b.events[i]);
  if (a.events.size() != b.events.size())
    return std::to_string(a.events.size()) + " events single-stepped, " +
           std::to_string(b.events.size()) + " block-stepped";
  if (a.gaps != b.gaps)
    return std::to_string(a.gaps) + " gaps single-stepped, " + std::to_string(b.gaps) + " blocks";
  return "";
}

// The block modes this host can run: auto always (single steps where nothing else works),
// and each breakpoint kind the step probe found working.
std::vector<ExactStepMode> BlockModes() {
  std::vector<ExactStepMode> modes = {ExactStepMode::kBlocks};
  const StepProbeResult probe = CachedStepProbe();
  if (probe.Works(StepMode::kBreakpoints)) modes.push_back(ExactStepMode::kBreakpoints);
  if (probe.Works(StepMode::kInt3)) modes.push_back(ExactStepMode::kInt3);
  return modes;
}

class ExactTracerBlocks : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "tracing needs ptrace (root here)";
    // Two runs of a program are the same run only at the same addresses: stack and heap
    // alignment steer glibc's string functions. The personality is inherited by the tracer's
    // child across its exec.
    previous_ = personality(0xffffffff);
    personality(static_cast<unsigned long>(previous_) | ADDR_NO_RANDOMIZE);
  }
  void TearDown() override {
    if (previous_ != -1) personality(static_cast<unsigned long>(previous_));
  }

  // Traces `argv` single-stepped and in every block mode; each thread's stream must match.
  // `main_waits`: the first thread's stream depends on when the others end (pthread_join
  // waits for them in a futex, or finds them gone), in any mode: only the others are compared.
  // `wrap_pids`: each trace starts 2 ids below pid_max, so its threads' ids wrap midway.
  void ExpectSameEvents(const std::vector<std::string>& argv, bool main_waits = false,
                        bool wrap_pids = false) {
    if (wrap_pids && !pathprof::testing::WrapPidsSoon(2))
      GTEST_SKIP() << "ns_last_pid cannot be written here";
    const Trace stepped = TraceIn(argv, ExactStepMode::kSingleStep);
    ASSERT_TRUE(stepped.ok);
    ASSERT_FALSE(stepped.threads.empty());
    ASSERT_GT(stepped.stats.branches, 0u);
    EXPECT_EQ(stepped.stats.mode, StepMode::kSingleStep);
    for (ExactStepMode mode : BlockModes()) {
      SCOPED_TRACE(std::string(ExactStepModeName(mode)) + " " + argv[0]);
      if (wrap_pids) pathprof::testing::WrapPidsSoon(2);
      const Trace blocks = TraceIn(argv, mode);
      ASSERT_TRUE(blocks.ok);
      EXPECT_EQ(blocks.stats.exit_code, stepped.stats.exit_code);
      EXPECT_EQ(blocks.stats.unknown_paths, 0u);
      EXPECT_EQ(blocks.stats.step_timeouts, 0u);
      ASSERT_EQ(blocks.threads.size(), stepped.threads.size());
      for (size_t i = main_waits ? 1 : 0; i < stepped.threads.size(); ++i)
        EXPECT_EQ(FirstDifference(stepped.threads[i], blocks.threads[i]), "") << "thread " << i;
      if (!main_waits) {
        EXPECT_EQ(blocks.stats.branches, stepped.stats.branches);
        EXPECT_EQ(blocks.stats.instructions, stepped.stats.instructions);
      }
      if (blocks.stats.mode == StepMode::kSingleStep) continue;  // nothing else works here
      // Block-stepped where a breakpoint could go: far fewer stops than instructions (the
      // loops of these examples retire 4-10 instructions per taken branch).
      const uint64_t stops = blocks.stats.steps + blocks.stats.breakpoint_legs;
      EXPECT_LT(stops * 2, blocks.stats.instructions)
          << stops << " stops for " << blocks.stats.instructions << " instructions";
      std::printf("%s %s: %llu instructions, %llu stops single-stepped, %llu block-stepped\n",
                  argv[0].c_str(), std::string(ExactStepModeName(mode)).c_str(),
                  static_cast<unsigned long long>(stepped.stats.instructions),
                  static_cast<unsigned long long>(stepped.stats.steps),
                  static_cast<unsigned long long>(stops));
    }
  }

  int previous_ = -1;
};

TEST_F(ExactTracerBlocks, CountedLoopStaticIsTheSame) {
  ExpectSameEvents({Bin("example_loop_static"), "2000"});
}

TEST_F(ExactTracerBlocks, HotLoopStaticIsTheSame) {
  ExpectSameEvents({Bin("example_hotloop_static"), "2"});
}

TEST_F(ExactTracerBlocks, DynamicProgramIsTheSame) {
  // The loader and libc: relocations, IRELATIVE resolvers, indirect calls through the GOT.
  ExpectSameEvents({Bin("example_loop"), "300"});
}

TEST_F(ExactTracerBlocks, SignalHandlerEntriesAreTheSame) {
  // raise() delivers at the end of its system call, which is single-stepped in every mode.
  ExpectSameEvents({Bin("example_signals_static")});
}

TEST_F(ExactTracerBlocks, EveryWorkerThreadIsTheSame) {
  ExpectSameEvents({Bin("example_threads_static")}, /*main_waits=*/true);
}

// The same with the process ids wrapping past pid_max among the workers: a worker created after
// the wrap has a smaller id than those before it, and is still compared with its own twin
// (ordered by id alone, the workers of the two traces were compared crosswise in a full run).
TEST_F(ExactTracerBlocks, EveryWorkerThreadIsTheSameWhenIdsWrap) {
  ExpectSameEvents({Bin("example_threads_static")}, /*main_waits=*/true, /*wrap_pids=*/true);
}

// A jump into the middle of the instruction it skips (glibc's `je 1f; lock; 1: cmpxchg`): the
// int3 a leg plants on the jump's target would sit inside the locked instruction that runs, a
// `lock int3` (SIGILL); legs end before such an instruction, and an int3 left inside one from
// an earlier leg is cleared before it runs (stepping/src/window_stepper.cc).
TEST_F(ExactTracerBlocks, AJumpIntoTheMiddleOfAnInstructionIsTheSame) {
  ExpectSameEvents({Bin("example_split_target_static"), "1000"});
}

TEST_F(ExactTracerBlocks, StepLimitHoldsInEveryMode) {
  for (ExactStepMode mode : BlockModes()) {
    ExactTraceOptions o;
    o.argv = {Bin("example_loop_static"), "100000"};
    o.step_mode = mode;
    o.max_steps = 20000;
    auto r = TraceExact(o, ExactTraceSink{});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(r->step_limit_hit);
    EXPECT_LE(r->instructions, 20000u) << ExactStepModeName(mode);
    EXPECT_GE(r->instructions, 20000u - 512u) << ExactStepModeName(mode);
  }
}

// The children of this process (the tracer's program), from /proc.
std::vector<pid_t> OurChildren() {
  std::vector<pid_t> out;
  auto children = procfs::Procfs::Host().ReadTask(getpid(), getpid(), "children");
  std::istringstream in(children.ok() ? *children : "");
  for (pid_t c; in >> c;) out.push_back(c);
  return out;
}

// `stream` cut at its gaps, each piece found in `whole`, in order: what a trace with gaps kept
// is exact. A piece's first event may count fewer instructions (counting restarts at a gap).
std::string PiecesInOrder(const std::vector<std::vector<BranchEvent>>& pieces,
                          const std::vector<BranchEvent>& whole) {
  size_t at = 0;
  for (size_t p = 0; p < pieces.size(); ++p) {
    const std::vector<BranchEvent>& piece = pieces[p];
    if (piece.empty()) continue;
    bool found = false;
    for (; !found && at + piece.size() <= whole.size(); ++at) {
      found = true;
      for (size_t i = 0; found && i < piece.size(); ++i) {
        BranchEvent a = piece[i], b = whole[at + i];
        if (i == 0) a.instructions = b.instructions;
        found = Same(a, b);
      }
    }
    if (!found)
      return "piece " + std::to_string(p) + " of " + std::to_string(pieces.size()) + " (" +
             std::to_string(piece.size()) + " events, first " + Describe(piece[0]) +
             ") is not in the single-stepped trace";
    at += piece.size() - 1;
  }
  return "";
}

TEST_F(ExactTracerBlocks, SignalsInTheMiddleOfLegsLoseNothingOrMarkAGap) {
  // SIGCONT, sent from outside every 2 ms, stops the thread wherever it is (it has no handler:
  // delivered, it does nothing), so block legs are cut short at every place in the loops, and
  // most often at their start (a signal that came while the thread was stopped). The events
  // must be those of a run without signals; where the stop could not be placed, a gap must
  // say so and what was kept must still be the run's.
  // Four rounds: over a thousand signals land in each mode's legs (twelve rounds took 31-48 s in
  // the sanitizer build, near the suite's per-test limit, for ~4,000 signals a mode).
  const std::vector<std::string> argv = {Bin("example_hotloop_static"), "4"};
  const Trace clean = TraceIn(argv, ExactStepMode::kSingleStep);
  ASSERT_TRUE(clean.ok);
  ASSERT_EQ(clean.threads.size(), 1u);
  for (ExactStepMode mode : BlockModes()) {
    SCOPED_TRACE(ExactStepModeName(mode));
    std::vector<std::vector<BranchEvent>> pieces;
    ExactTraceSink sink;
    sink.on_batch = [&](const BranchBatch& b) {
      if (b.gap_before || pieces.empty()) pieces.emplace_back();
      pieces.back().insert(pieces.back().end(), b.events.begin(), b.events.end());
      return Status::Ok();
    };
    std::atomic<bool> done{false};
    std::thread nagger([&] {
      while (!done) {
        for (pid_t child : OurChildren()) kill(child, SIGCONT);
        usleep(2000);
      }
    });
    ExactTraceOptions o;
    o.argv = argv;
    o.step_mode = mode;
    auto r = TraceExact(o, sink);
    done = true;
    nagger.join();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->exit_code, 0);
    EXPECT_GT(r->signals_forwarded, 10u);
    EXPECT_EQ(PiecesInOrder(pieces, clean.threads[0].events), "");
    // Two ways to a stop are told apart, so no gap either: a leg under int3 never returns to
    // its start (no resume flag), and under debug registers the resume flag says whether it
    // did. The whole stream is then the clean run's.
    EXPECT_EQ(r->unknown_paths, 0u);
    if (r->unknown_paths == 0 && pieces.size() == 1) {
      ThreadStream whole{pieces[0], 1};
      EXPECT_EQ(FirstDifference(clean.threads[0], whole), "");
    }
    std::printf("%s: %llu signals, %llu gaps for two ways to a stop\n",
                std::string(ExactStepModeName(mode)).c_str(),
                static_cast<unsigned long long>(r->signals_forwarded),
                static_cast<unsigned long long>(r->unknown_paths));
  }
}

}  // namespace
}  // namespace pathprof::stepping
