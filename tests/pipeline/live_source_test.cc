// A session knows its sources only through LiveSource and the source table: a fake source put in
// the table with one row feeds a real session on this test process, whose answers (hot paths,
// call pairs, subpaths, the calling-context tree, stats) hold exactly what the fake handed on
// and lost; the table's fallback is taken under auto, an explicit source's failure fails the
// session, and a source that ends on its own fails it with its reason.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "pathprof/pipeline/live_source.h"
#include "pathprof/pipeline/session.h"
#include "pathprof/pipeline/source_table.h"

namespace {

namespace pl = pathprof::pipeline;
using pathprof::BranchKind;
using pathprof::ErrorCode;
using pathprof::Status;
using pathprof::collectors::BranchSource;

extern "C" __attribute__((noinline)) int pathprof_live_source_marker(int x) {
  return x * 5 + 2;
}

uint32_t Self() {
  return static_cast<uint32_t>(getpid());
}

// A loop at 0x2000..0x2010 entered by a call: the call, then 3 iterations (backward branch
// 0x2010 -> 0x2000, taken). Its hottest path starts at 0x2000, not taken then taken.
pathprof::BranchBatch LoopWindow(uint32_t pid) {
  pathprof::BranchBatch w;
  w.pid = pid;
  w.tid = pid;
  w.window = true;
  w.events.push_back({0x1000, 0x2000, 0, 0, BranchKind::kDirectCall, true, false});
  for (int i = 0; i < 3; ++i) {
    w.events.push_back({0x2004, 0x2008, 0, 0, BranchKind::kConditional, false, false});
    w.events.push_back({0x2010, 0x2000, 0, 0, BranchKind::kConditional, true, false});
  }
  return w;
}

// What a fake source is to do, and what the session asked of it.
struct Script {
  int windows = 10;        // loop windows (or, for the stack fake, samples) handed on
  std::string fail_start;  // non-empty: Start fails with this message
  int fail_after_ms = 0;   // how long a failing Start takes (the stacks already flowing)
  std::atomic<bool> fail_now{false};
  std::atomic<int> polls{0};
  std::atomic<int> stops{0};
};

// Hands on a window per poll and the rest at Stop; loses one "fake_lost" per window handed on
// (cumulative, as real sources count) and, for the session as a whole, 3 "fake_ring_full".
class FakeBranchSource : public pl::LiveSource {
 public:
  explicit FakeBranchSource(Script* script) : script_(script) {}
  Status Start(const pl::SourceTargets& targets, pl::SourceSink& sink) override {
    if (!script_->fail_start.empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(script_->fail_after_ms));
      return Status(ErrorCode::kUnavailable, script_->fail_start);
    }
    sink_ = &sink;
    pid_ = targets.config.pids.front();
    return Status::Ok();
  }
  std::string Detail() const override { return "fake windows"; }
  bool NeedsPolling() const override { return true; }
  void Poll() override {
    ++script_->polls;
    if (sent_ < script_->windows) Send();
  }
  pl::SourceCounters Counters() const override {
    pl::SourceCounters c;
    c[pid_].drops["fake_lost"] = static_cast<uint64_t>(sent_.load());
    c[pl::kSessionLosses].drops["fake_ring_full"] = 3;
    c[pid_].decode_errors["fake_undecodable"] = 2;
    return c;
  }
  std::string Failure() const override { return script_->fail_now ? "the fake died" : ""; }
  void Stop() override {
    while (sent_ < script_->windows) Send();
    ++script_->stops;
  }

 private:
  void Send() {
    sink_->OfferBranches(LoopWindow(pid_));
    ++sent_;
  }
  Script* script_;
  pl::SourceSink* sink_ = nullptr;
  uint32_t pid_ = 0;
  std::atomic<int> sent_{0};
};

// Hands on every stack sample at Start: this process, its leaf in the marker function.
class FakeStackSource : public pl::LiveSource {
 public:
  explicit FakeStackSource(Script* script) : script_(script) {}
  Status Start(const pl::SourceTargets& targets, pl::SourceSink& sink) override {
    pathprof::collectors::RawStackSample s;
    s.pid = targets.config.pids.front();
    s.tid = s.pid;
    s.user = {reinterpret_cast<uint64_t>(&pathprof_live_source_marker) + 1};
    for (int i = 0; i < script_->windows; ++i) sink.OfferStack(s);
    return Status::Ok();
  }
  std::string Detail() const override { return "fake stacks"; }
  pl::SourceCounters Counters() const override { return {}; }
  void Stop() override { ++script_->stops; }

 private:
  Script* script_;
};

pl::BranchSourceRow FakeRow(BranchSource kind, pl::BranchWindows windows, Script* script,
                            BranchSource fallback = BranchSource::kNone) {
  return {kind,
          "fake",
          nullptr,
          windows,
          [script] { return std::make_unique<FakeBranchSource>(script); },
          fallback};
}

pl::SessionConfig SelfConfig(pl::SourceChoice source) {
  pl::SessionConfig c;
  c.pids = {Self()};
  c.source = source;
  c.sampling.stack_hz = 0;
  return c;
}

// The default table with a fake PT row that falls back to a fake LBR row, and a fake stack
// source when `stacks` is given. PT's stores would count a continuous stream in the Hot Path
// Table; LBR's estimate windows.
pl::SourceTable PtFallingBackToLbr(Script* pt, Script* lbr, Script* stacks = nullptr) {
  pl::SourceTable table = pl::DefaultSources();
  table.Set(FakeRow(BranchSource::kIntelPt, pl::BranchWindows::kNone, pt, BranchSource::kLbr));
  table.Set(FakeRow(BranchSource::kLbr, pl::BranchWindows::kTakenBranches, lbr));
  if (stacks != nullptr)
    table.stacks = [stacks] { return std::make_unique<FakeStackSource>(stacks); };
  return table;
}

TEST(LiveSource, AFakeSourceInOneRowFeedsTheSessionsAnswers) {
  Script branches, stacks;
  pl::SourceTable table = pl::DefaultSources();
  table.Set(FakeRow(BranchSource::kLbr, pl::BranchWindows::kTakenBranches, &branches));
  table.stacks = [&stacks] { return std::make_unique<FakeStackSource>(&stacks); };
  pl::SessionConfig config = SelfConfig(pl::SourceChoice::kLbr);
  config.sampling.stack_hz = 99;
  auto s = pl::Session::Start("fake", config, {}, nullptr, table);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  pl::Session& session = **s;
  const pl::SessionInfo info = session.Info();
  EXPECT_EQ(info.source, BranchSource::kLbr);
  EXPECT_EQ(info.source_reason, "asked for; fake windows");
  EXPECT_TRUE(info.stacks);
  EXPECT_EQ(info.stacks_reason, "fake stacks");
  session.Stop();
  EXPECT_EQ(branches.stops.load(), 1);
  EXPECT_EQ(stacks.stops.load(), 1);

  pl::HotPathsQuery q;
  q.top_k = 5;
  const pl::HotPathsResult paths = session.HotPaths(q);
  EXPECT_EQ(paths.estimator, pl::PathEstimator::kWindows) << "the row's windows: taken branches";
  ASSERT_FALSE(paths.paths.empty());
  EXPECT_EQ(paths.paths[0].pid, Self());
  EXPECT_EQ(paths.paths[0].start.address, 0x2000u);
  EXPECT_EQ(paths.paths[0].length, 2u);
  EXPECT_EQ(paths.paths[0].outcomes, 0b10u);
  const pl::HotCallPairsResult pairs = session.HotCallPairs(3);
  ASSERT_EQ(pairs.pairs.size(), 1u);
  EXPECT_EQ(pairs.pairs[0].call_site.address, 0x1000u);
  EXPECT_DOUBLE_EQ(pairs.pairs[0].estimate.value, 10);
  EXPECT_FALSE(session.HotSubpaths({}).subpaths.empty());
  const pl::HotMethodsResult methods = session.HotMethods(3);
  ASSERT_FALSE(methods.methods.empty());
  EXPECT_EQ(methods.methods[0].function.function, "pathprof_live_source_marker");
  EXPECT_DOUBLE_EQ(methods.methods[0].self.value, 10);

  const std::vector<pl::TargetStats> stats = session.Stats();
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0].windows, 10u);
  EXPECT_EQ(stats[0].branches, 70u);
  EXPECT_EQ(stats[0].stack_samples, 10u);
  // Cumulative counters become each loss once, by reason, on its process (the session's own on
  // its first store), however often the session looked at them.
  EXPECT_EQ(stats[0].drops.at("fake_lost"), 10u);
  EXPECT_EQ(stats[0].drops.at("fake_ring_full"), 3u);
  EXPECT_EQ(stats[0].decode_errors.at("fake_undecodable"), 2u);
}

TEST(LiveSource, AutoTakesTheTablesFallbackWithItsWindowsAndSaysWhy) {
  Script broken, working;
  broken.fail_start = "the fake PMU is busy";
  const pl::SourceTable table = PtFallingBackToLbr(&broken, &working);
  auto s = pl::Session::Start("fallback", SelfConfig(pl::SourceChoice::kAuto), {}, nullptr, table);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const pl::SessionInfo info = (*s)->Info();
  EXPECT_EQ(info.source, BranchSource::kLbr);
  EXPECT_EQ(info.source_reason, "auto (the fake PMU is busy); fake windows");
  (*s)->Stop();
  EXPECT_EQ(broken.stops.load(), 0) << "a source that did not start is not stopped";
  pl::HotPathsQuery q;
  q.top_k = 1;
  const pl::HotPathsResult paths = (*s)->HotPaths(q);
  EXPECT_EQ(paths.estimator, pl::PathEstimator::kWindows);
  ASSERT_EQ(paths.paths.size(), 1u);
  EXPECT_EQ(paths.paths[0].start.address, 0x2000u);
}

// Stacks start before the branch source; a fallback to a source whose windows are weighted
// otherwise re-weights the stores in place, and the stack samples taken meanwhile stay.
TEST(LiveSource, StackSamplesTakenBeforeABranchFallbackStay) {
  Script broken, working, stacks;
  broken.fail_start = "the fake PMU is busy";
  broken.fail_after_ms = 300;  // the ingestor has applied the samples by then
  const pl::SourceTable table = PtFallingBackToLbr(&broken, &working, &stacks);
  pl::SessionConfig config = SelfConfig(pl::SourceChoice::kAuto);
  config.sampling.stack_hz = 99;
  auto s = pl::Session::Start("fallback-stacks", config, {}, nullptr, table);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  (*s)->Stop();
  EXPECT_EQ((*s)->Info().source, BranchSource::kLbr);
  const std::vector<pl::TargetStats> stats = (*s)->Stats();
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0].stack_samples, 10u);
  EXPECT_EQ(stats[0].windows, 10u);
  pl::HotPathsQuery q;
  q.top_k = 1;
  EXPECT_EQ((*s)->HotPaths(q).estimator, pl::PathEstimator::kWindows);
}

TEST(LiveSource, AutoEndsAtStacksOnlyWhenTheFallbacksFailToo) {
  Script pt, lbr, stacks;
  pt.fail_start = "no PT here";
  lbr.fail_start = "no LBR either";
  const pl::SourceTable table = PtFallingBackToLbr(&pt, &lbr, &stacks);
  pl::SessionConfig config = SelfConfig(pl::SourceChoice::kAuto);
  config.sampling.stack_hz = 99;
  auto s = pl::Session::Start("stacks-only", config, {}, nullptr, table);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ((*s)->Info().source, BranchSource::kNone);
  EXPECT_EQ((*s)->Info().source_reason, "auto (no PT here; no LBR either)");
  (*s)->Stop();
  EXPECT_EQ((*s)->Stats().at(0).windows, 0u);
  EXPECT_EQ((*s)->Stats().at(0).stack_samples, 10u);
  // Without any source the session refuses, with both reasons.
  config.sampling.stack_hz = 0;
  auto none = pl::Session::Start("nothing", config, {}, nullptr, table);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), ErrorCode::kUnavailable);
  EXPECT_EQ(none.status().message(),
            "nothing to collect: stack sampling off (stack_hz = 0); branches: auto (no PT here; "
            "no LBR either)");
}

TEST(LiveSource, AnExplicitSourceThatCannotStartFailsTheSession) {
  Script broken;
  broken.fail_start = "the fake cannot trace it";
  pl::SourceTable table = pl::DefaultSources();
  table.Set(FakeRow(BranchSource::kLbr, pl::BranchWindows::kTakenBranches, &broken));
  auto s = pl::Session::Start("explicit", SelfConfig(pl::SourceChoice::kLbr), {}, nullptr, table);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), ErrorCode::kUnavailable);
  EXPECT_EQ(s.status().message(), "the fake cannot trace it");
}

TEST(LiveSource, ASourceThatEndsOnItsOwnFailsTheSessionWithItsReason) {
  Script script;
  script.windows = 1;
  pl::SourceTable table = pl::DefaultSources();
  table.Set(FakeRow(BranchSource::kLbr, pl::BranchWindows::kTakenBranches, &script));
  auto s = pl::Session::Start("dies", SelfConfig(pl::SourceChoice::kLbr), {}, nullptr, table);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  script.fail_now = true;
  ASSERT_TRUE((*s)->WaitEnded(10000));
  const pl::SessionInfo info = (*s)->Info();
  EXPECT_EQ(info.state, pl::SessionState::kFailed);
  EXPECT_EQ(info.error, "the fake died");
  EXPECT_EQ(script.stops.load(), 1);
  EXPECT_EQ((*s)->Stats().at(0).windows, 1u) << "what it handed on is kept";
}

TEST(LiveSource, TheDefaultTableChoosesAsTheHostAllows) {
  pathprof::collectors::HostCapabilities caps;
  caps.lbr = {true, "LBR ok"};
  caps.intel_pt = {false, "no intel_pt PMU"};
  caps.ptrace = {true, "ptrace ok"};
  std::string reason;
  auto chosen = pl::DefaultSources().Choose(pl::SourceChoice::kAuto, caps, &reason);
  ASSERT_TRUE(chosen.ok());
  EXPECT_EQ(*chosen, BranchSource::kLbr);
  EXPECT_EQ(reason, "auto (best available); PT unavailable: no intel_pt PMU");
  auto pt = pl::DefaultSources().Choose(pl::SourceChoice::kIntelPt, caps, &reason);
  ASSERT_FALSE(pt.ok());
  EXPECT_EQ(pt.status().message(),
            "pt was asked for but is not available here: no intel_pt PMU (use --source auto to "
            "take the best available)");
  EXPECT_EQ(pl::DefaultSources().Find(BranchSource::kLbr)->fallback, BranchSource::kPtraceBursts);
  EXPECT_EQ(pl::DefaultSources().Find(BranchSource::kPtraceBursts)->windows,
            pl::BranchWindows::kTime);
}

}  // namespace
