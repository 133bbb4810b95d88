// LBR synthesis and reconstruction against exact truth: a real program (built -O2 -g) is traced
// exactly (ptrace single-step), its taken branches are sampled into a perf.data the way LBR
// hardware would (the last W taken branches every P-th taken branch), and the LBR reconstructor
// must give back, inside every window, exactly the exact stream: the same taken branches and,
// between them, the same not-taken conditionals, with the same kinds and instruction counts.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <map>

#include "pathprof/decoders/lbr_replay.h"
#include "pathprof/decoders/x86_branch.h"
#include "pathprof/stepping/exact_tracer.h"
#include "perf_data_writer.h"

namespace pathprof {
namespace {

std::string Bin(const std::string& name) {
  char buf[PATH_MAX];
  std::string p = std::string(PATHPROF_BIN_DIR) + "/" + name;
  return realpath(p.c_str(), buf) ? std::string(buf) : p;
}

bool PtraceWorks() {
  static const bool works = [] {
    stepping::ExactTraceOptions o;
    o.argv = {Bin("example_loop_static")};
    o.max_steps = 1;
    auto r = stepping::TraceExact(o, stepping::ExactTraceSink{});
    return r.ok() || r.status().code() != ErrorCode::kPermission;
  }();
  return works;
}

PbsContents Trace(std::vector<std::string> argv) {
  PbsContents pbs;
  stepping::ExactTraceOptions options;
  options.argv = std::move(argv);
  stepping::ExactTraceSink sink;
  sink.on_batch = [&](const BranchBatch& b) {
    pbs.batches.push_back(b);
    return Status::Ok();
  };
  sink.on_image = [&](const ImageRecord& r) {
    pbs.images.push_back(r);
    return Status::Ok();
  };
  auto stats = stepping::TraceExact(options, sink);
  EXPECT_TRUE(stats.ok()) << stats.status().ToString();
  if (stats.ok()) {
    EXPECT_EQ(stats->unexpected_transfers, 0u);
  }
  return pbs;
}

// Where each sample's window lies in its thread's exact stream, computed from the definition
// (not from the synthesizer): sample n of a thread fires at its (n * period)-th taken branch and
// holds the taken branches since max(that - W + 1, the first after the latest gap); the window
// runs from the oldest of them through the newest, not-taken branches included.
struct Window {
  uint32_t tid;
  size_t begin, end;  // [begin, end) in the thread's stream
  // Signal deliveries in the window: the exact tracer records them as far transfers from the
  // interrupted (non-branch) instruction, which user-only LBR never records; the reconstructor
  // drops such an entry (not_a_branch) and splits the window there.
  size_t async = 0;
};

// A far transfer whose source instruction is not a branch (syscall, int) is a signal delivery:
// the source is read from the file the program mapped there.
bool IsSignalDelivery(const std::vector<ImageRecord>& images, const BranchEvent& e) {
  if (e.kind != BranchKind::kFarTransfer) return false;
  for (const auto& img : images) {
    if (e.from < img.start || e.from >= img.end || img.path.empty() || img.path[0] != '/') continue;
    const int fd = open(img.path.c_str(), O_RDONLY);
    uint8_t buf[16];
    const ssize_t n =
        pread(fd, buf, sizeof buf, static_cast<off_t>(img.file_offset + (e.from - img.start)));
    close(fd);
    decoders::X86Instruction insn;
    return !(n > 0 && decoders::DecodeX86Fast(buf, static_cast<size_t>(n), e.from, &insn) &&
             insn.is_branch);
  }
  return false;
}

struct Expected {
  std::map<uint32_t, std::vector<BranchEvent>> stream;  // per tid
  std::vector<Window> windows;                          // in sampling order per thread
};

Expected ExpectedWindows(const PbsContents& pbs, size_t w, uint64_t period) {
  Expected x;
  struct State {
    uint64_t taken = 0;
    std::vector<size_t> taken_at;  // stream index of each taken branch since the latest gap
  };
  std::map<uint32_t, State> state;
  for (const BranchBatch& b : pbs.batches) {
    auto& stream = x.stream[b.tid];
    State& s = state[b.tid];
    if (b.gap_before) s.taken_at.clear();
    for (const BranchEvent& e : b.events) {
      stream.push_back(e);
      if (!e.taken) continue;
      s.taken_at.push_back(stream.size() - 1);
      if (++s.taken % period != 0) continue;
      const size_t n = std::min(w, s.taken_at.size());
      Window win{b.tid, s.taken_at[s.taken_at.size() - n], stream.size(), 0};
      for (size_t i = win.begin; i < win.end; ++i)
        win.async += IsSignalDelivery(pbs.images, stream[i]);
      x.windows.push_back(win);
    }
  }
  return x;
}

// What the reconstructor can give back of a window: its events, the oldest with an unknown
// block length (0, its block started before the window). A signal delivery is dropped
// (not_a_branch) together with the not-taken branches between the previous taken branch and the
// interrupted instruction (that range has no recorded end); the range after it starts at the
// handler's entry, a recorded target, so its events keep their exact block lengths.
std::vector<BranchEvent> Reconstructible(const std::vector<ImageRecord>& images,
                                         const std::vector<BranchEvent>& stream,
                                         const Window& win) {
  std::vector<BranchEvent> out;
  for (size_t k = win.begin; k < win.end; ++k) {
    BranchEvent e = stream[k];
    if (k == win.begin) e.instructions = 0;
    if (win.async > 0 && IsSignalDelivery(images, e)) {
      while (!out.empty() && !out.back().taken) out.pop_back();
      continue;
    }
    out.push_back(e);
  }
  return out;
}

std::string Describe(const BranchEvent& e) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%#lx->%#lx %s taken=%d insns=%u", (unsigned long)e.from,
                (unsigned long)e.to, std::string(BranchKindName(e.kind)).c_str(), e.taken,
                e.instructions);
  return buf;
}

void CheckRoundTrip(const std::vector<std::string>& argv, size_t w, uint64_t period) {
  const PbsContents pbs = Trace(argv);
  ASSERT_FALSE(pbs.batches.empty());
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("pathprof-lbr-roundtrip-" + std::to_string(::getpid()) + ".data"))
                               .string();
  decoders::LbrSynthOptions lbr;
  lbr.entries = static_cast<uint32_t>(w);
  lbr.period = period;
  ASSERT_TRUE(decoders::WriteLbrPerfData(path, pbs, lbr).ok());

  // Each sample's batches, per thread in order (the sink sees one sample at a time).
  std::map<uint32_t, std::vector<std::vector<BranchEvent>>> got;
  decoders::LbrReplayOptions options;
  options.images.use_debuginfod = false;
  auto replay = decoders::ReplayLbr(path, options, [&](std::vector<BranchBatch>& batches) {
    std::vector<BranchEvent> sample;
    for (const BranchBatch& b : batches) {
      EXPECT_TRUE(b.window);
      EXPECT_TRUE(b.gap_before) << "each piece of a window starts after unseen code";
      sample.insert(sample.end(), b.events.begin(), b.events.end());
    }
    got[batches.front().tid].push_back(std::move(sample));
  });
  std::filesystem::remove(path);
  ASSERT_TRUE(replay.ok()) << replay.status().ToString();
  const decoders::LbrStats& s = replay->lbr;
  const Expected x = ExpectedWindows(pbs, w, period);
  size_t async = 0;
  for (const Window& win : x.windows) async += win.async;
  // Only signal deliveries are lost, each dropped entry counted; every other range walks.
  EXPECT_EQ(s.entries_dropped_total(), async) << s.ToString();
  EXPECT_EQ(s.entries_dropped[static_cast<size_t>(decoders::LbrEntryDrop::kNotABranch)], async);
  EXPECT_EQ(s.ranges_broken_total(),
            s.ranges_broken[static_cast<size_t>(decoders::LbrRangeBreak::kEndpointDropped)])
      << s.ToString();
  EXPECT_LE(s.ranges_broken_total(), 2 * async);

  ASSERT_EQ(s.samples, x.windows.size());
  ASSERT_GT(x.windows.size(), 100u);
  std::map<uint32_t, size_t> next;
  size_t events_compared = 0, split_windows_compared = 0;
  for (const Window& win : x.windows) {
    const size_t i = next[win.tid]++;
    ASSERT_LT(i, got[win.tid].size()) << "tid " << win.tid;
    const std::vector<BranchEvent>& sample = got[win.tid][i];
    const std::vector<BranchEvent>& stream = x.stream.at(win.tid);
    const std::vector<BranchEvent> want = Reconstructible(pbs.images, stream, win);
    ASSERT_EQ(sample.size(), want.size()) << "tid " << win.tid << " window " << i;
    for (size_t k = 0; k < sample.size(); ++k) {
      ASSERT_EQ(sample[k], want[k])
          << "tid " << win.tid << " window " << i << " event " << k << ": got "
          << Describe(sample[k]) << ", want " << Describe(want[k]);
    }
    events_compared += sample.size();
    split_windows_compared += win.async > 0;
  }
  EXPECT_GT(events_compared, x.windows.size() * w);  // not-taken branches were compared too
  EXPECT_EQ(split_windows_compared,
            size_t(std::count_if(x.windows.begin(), x.windows.end(),
                                 [](const Window& win) { return win.async > 0; })));
}

TEST(LbrRoundTrip, DynamicLoopEqualsTheExactStreamInEveryWindow) {
  if (!PtraceWorks()) GTEST_SKIP() << "ptrace is not allowed on this host";
  CheckRoundTrip({Bin("example_loop"), "100"}, 32, 13);
}

TEST(LbrRoundTrip, ThreadsEqualTheExactStreamInEveryWindow) {
  if (!PtraceWorks()) GTEST_SKIP() << "ptrace is not allowed on this host";
  CheckRoundTrip({Bin("example_threads_static")}, 16, 7);
}

// Windows holding one of the 3 signal deliveries split there (counted) and are exact on either
// side of it; all others are exact.
TEST(LbrRoundTrip, SignalsEqualTheExactStreamOutsideSignalDeliveries) {
  if (!PtraceWorks()) GTEST_SKIP() << "ptrace is not allowed on this host";
  CheckRoundTrip({Bin("example_signals_static")}, 32, 5);
}

}  // namespace
}  // namespace pathprof
