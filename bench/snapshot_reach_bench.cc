// How far an emulated branch window gets on a snapshot (stepping/src/snapshot_pages.h): each
// window is taken as the burst tracer takes one today (PTRACE_INTERRUPT the running thread,
// copy its registers, run its next 32 taken branches in the emulator over its memory), and run
// again, the thread still stopped, under each snapshot policy: over a guest that serves only
// what the eBPF sampler's snapshot would hold (the stack copy, stable image pages, hint pages
// learned per code page of the window's start). Per policy, two lengths in taken branches:
//   ends at the first read the snapshot cannot serve (the conservative figure), and
//   "refined": the pages it cannot serve read as poison (all 0x00, then all 0xff), the window
//   runs on, and its length is how many taken branches both runs share with the live window
//   (an upper bound on what a snapshot emulator that marks unknown bytes and ends where a
//   branch, jump target or address depends on one would reach: poison that happens to steer
//   a branch the live way is not caught), and
//   "tracked": that emulator itself (SnapshotGuest::Mode::kTrack; emulator/src/unknown_bytes.h),
//   run under both poisons: the two must agree and follow the live window (counted if not).
// Also the pages the live windows read, by class. Counts of pages and branches, not times: the
// figures do not depend on the host's load. After the benchmarks the tables are printed in
// Markdown (docs/performance.md, "Snapshot windows"). Windows per program:
// PATHPROF_SNAPSHOT_WINDOWS (default 500). The programs: live_workload.h.
#include <benchmark/benchmark.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "live_guest.h"
#include "live_workload.h"
#include "pathprof/core/clock.h"
#include "pathprof/decoders/address_space.h"
#include "pathprof/emulator/window_emulator.h"
#include "snapshot_pages.h"

namespace {

using pathprof::MonotonicNs;
using pathprof::emulator::CpuState;
using pathprof::emulator::EmulatedWindow;
using pathprof::emulator::EmulatorLimits;
using pathprof::emulator::Guest;
using pathprof::emulator::kRsp;
using pathprof::emulator::WindowEmulator;
using pathprof::stepping::ByteRange;
using pathprof::stepping::HintPages;
using pathprof::stepping::ProcessPages;
using pathprof::stepping::RegisterRanges;
using pathprof::stepping::SnapshotGuest;
using pathprof::stepping::SnapshotPageClass;
using pathprof::stepping::SnapshotPolicy;
using pathprof::stepping::SnapshotStack;
using pathprof::stepping::TakenInCommon;
using pathprof::stepping::ThreadGuest;
using pathprof::stepping::TotalBytes;

constexpr uint32_t kWindowTaken = 32;
constexpr uint32_t kPage = Guest::kPageSize;
constexpr uint64_t kMapsMaxAgeNs = 100'000'000;
constexpr std::array<uint8_t, 2> kPoisons = {0x00, 0xff};

// Where a policy's hint pages come from: the pages earlier stop-and-emulate windows from the
// same code page read (all they read that stack and image do not hold), or only the page at
// which earlier snapshot windows from it ended (what snapshot windows alone can learn).
enum class Learning : uint8_t { kNone, kStopWindows, kMisses };

struct Policy {
  SnapshotPolicy snapshot;
  Learning learning = Learning::kNone;
  bool per_process = false;  // one set of hint pages for the process, not one per code page
};

std::vector<Policy> Policies() {
  std::vector<Policy> out;
  out.push_back({{"stack16", 16 * 1024, false, 0}, Learning::kNone});
  out.push_back({{"stack64", 64 * 1024, false, 0}, Learning::kNone});
  out.push_back({{"stack64+image", 64 * 1024, true, 0}, Learning::kNone});
  for (Learning l : {Learning::kStopWindows, Learning::kMisses})
    for (uint32_t n : {4u, 8u, 16u, 32u, 64u}) {
      if (l == Learning::kMisses && n > 16) continue;
      const std::string name = std::string("stack64+image+") +
                               (l == Learning::kMisses ? "miss-hints" : "hints") +
                               std::to_string(n);
      out.push_back({{name, 64 * 1024, true, n}, l});
    }
  // The pages any window of the process read lately, whatever code page it starts in.
  for (uint32_t n : {16u, 64u})
    out.push_back({{"stack64+image+process-hints" + std::to_string(n), 64 * 1024, true, n},
                   Learning::kStopWindows,
                   true});
  // What the registers point at, copied at the sample (no learning): bytes around each
  // address, or its whole page (and the next), alone and with the process's hint pages; then
  // the best rows without the vector registers, which the sampler's user registers do not hold.
  auto regs = [](std::string name, uint32_t below, uint32_t above, bool pages, uint32_t hints,
                 bool vector = true) {
    SnapshotPolicy p{std::move(name), 16 * 1024, true, hints};
    p.register_below = below, p.register_above = above, p.register_whole_pages = pages;
    p.vector_state = vector;
    return Policy{p, hints ? Learning::kStopWindows : Learning::kNone, hints > 0};
  };
  out.push_back(regs("stack16+image+regs(-64,+192)", 64, 192, false, 0));
  out.push_back(regs("stack16+image+regs(-256,+768)", 256, 768, false, 0));
  out.push_back(regs("stack16+image+regs(-1024,+3072)", 1024, 3072, false, 0));
  out.push_back(regs("stack16+image+regs(page)", 0, 1, true, 0));
  out.push_back(regs("stack16+image+regs(page, next)", 0, kPage + 1, true, 0));
  for (uint32_t n : {16u, 64u})
    out.push_back(regs("stack16+image+regs(page, next)+process-hints" + std::to_string(n), 0,
                       kPage + 1, true, n));
  out.push_back(regs("stack16+image+regs(-256,+768)+process-hints16", 256, 768, false, 16));
  SnapshotPolicy best{"stack64+image+process-hints64, no vector registers", 64 * 1024, true, 64};
  best.vector_state = false;
  out.push_back({best, Learning::kStopWindows, true});
  out.push_back(regs("stack16+image+regs(page, next)+process-hints64, no vector registers", 0,
                     kPage + 1, true, 64, false));
  return out;
}

// Taken branches per window, summarised.
struct Lengths {
  std::vector<uint32_t> v;
  double Median() const {
    if (v.empty()) return 0;
    std::vector<uint32_t> s = v;
    std::sort(s.begin(), s.end());
    return s.size() % 2 ? s[s.size() / 2] : (s[s.size() / 2 - 1] + s[s.size() / 2]) / 2.0;
  }
  double Mean() const {
    double sum = 0;
    for (uint32_t x : v) sum += x;
    return v.empty() ? 0 : sum / static_cast<double>(v.size());
  }
  double ShareAtLeast(uint32_t k) const {
    size_t n = 0;
    for (uint32_t x : v) n += x >= k;
    return v.empty() ? 0 : 100.0 * static_cast<double>(n) / static_cast<double>(v.size());
  }
};

// The classes of the pages live windows read (each page once per window).
enum Kind { kCode, kImage, kStack16, kStack64, kStackBeyond, kHintable, kOther, kKinds };
constexpr const char* kKindNames[kKinds] = {
    "code", "image", "stack <=16K", "stack <=64K", "stack beyond 64K", "hint-learnable", "other"};

struct ProgramResult {
  std::string program;
  uint32_t windows = 0;
  Lengths live;  // the stop-and-emulate window itself (all memory)
  std::vector<Lengths> ends, refined;
  // Tracked: run over a partial guest (SnapshotGuest::Mode::kTrack), the emulator marking the
  // bytes the snapshot does not hold unknown: what a snapshot emulator gets.
  std::vector<Lengths> tracked;
  std::vector<std::array<uint32_t, pathprof::emulator::kEmulationEndCount>> tracked_ends;
  uint32_t tracked_wrong = 0;    // a tracked window left the live window's events (a bug)
  uint32_t tracked_steered = 0;  // two poisons gave two tracked windows (a bug: missed unknown)
  std::vector<uint64_t> register_bytes;  // per policy: bytes its register copy added, all windows
  std::array<uint64_t, kKinds> kinds{};
  uint32_t vector_windows = 0;      // windows that needed the vector registers
  uint32_t inconsistent = 0;        // a policy's run left the live window's events (a bug)
  uint32_t dead_stack_steered = 0;  // poison below the red zone steered a window
};
std::vector<ProgramResult> g_results;

EmulatorLimits Limits() {
  EmulatorLimits l;
  l.window_taken = kWindowTaken;
  l.max_ns = 0;  // counts, not times: a window the host delays must not end early
  return l;
}

// The mapping that holds `rsp` (the thread's stack), in the process's maps `space`.
SnapshotStack StackOf(const pathprof::decoders::AddressSpace* space, uint64_t rsp) {
  SnapshotStack s;
  s.rsp = rsp;
  if (space != nullptr)
    if (const pathprof::decoders::Mapping* m = space->Find(rsp))
      s.low = m->start, s.high = m->end();
  return s;
}

// One program's windows under every policy.
class Reach {
 public:
  explicit Reach(pid_t pid) : pid_(pid), pages_(pid), live_emulator_(Limits()) {
    policies_ = Policies();
    for (const Policy& p : policies_) {
      Runs r;
      r.end = std::make_unique<WindowEmulator>(Limits());
      for (auto& e : r.poison) e = std::make_unique<WindowEmulator>(Limits());
      for (auto& e : r.tracked) e = std::make_unique<WindowEmulator>(Limits());
      if (p.learning != Learning::kNone)
        r.hints = std::make_unique<HintPages>(p.snapshot.hint_pages);
      runs_.push_back(std::move(r));
    }
    result_.ends.resize(policies_.size());
    result_.tracked.resize(policies_.size());
    result_.tracked_ends.resize(policies_.size());
    result_.refined.resize(policies_.size());
    result_.register_bytes.resize(policies_.size());
  }

  // `start`: the registers of the thread, stopped by this tracer.
  void Window(const CpuState& start) {
    if (pages_.Refresh(MonotonicNs(), kMapsMaxAgeNs)) {
      live_emulator_.Reset();
      for (Runs& r : runs_) {
        r.end->Reset();
        for (auto& e : r.poison) e->Reset();
        for (auto& e : r.tracked) e->Reset();
      }
    }
    // The maps now: the stack's mapping, and which pages the registers point into are readable.
    auto maps = pathprof::decoders::ReadProcMaps(pid_);
    const pathprof::decoders::AddressSpace* space = maps.ok() ? &*maps : nullptr;
    const SnapshotStack stack = StackOf(space, start.gpr[kRsp]);
    auto readable = [space](uint64_t page) {
      const pathprof::decoders::Mapping* m = space ? space->Find(page) : nullptr;
      return m != nullptr && m->readable;
    };
    const uint64_t key = start.rip & ~(Guest::kPageSize - 1);
    pages_.BeginWindow(start.gpr[kRsp]);
    ThreadGuest thread(pid_, pages_);
    // The live window, every page read and classified (its emulator forgets the stable pages
    // of earlier windows, so that they are counted too).
    const SnapshotPolicy all{"live", 64 * 1024, true, 0};
    SnapshotGuest recorder(thread, all, stack, nullptr, key, SnapshotGuest::Mode::kServe);
    live_emulator_.Reset();
    const EmulatedWindow live = live_emulator_.Run(start, recorder);
    ++result_.windows;
    result_.live.v.push_back(live.taken);
    result_.vector_windows += recorder.vector_loads() > 0;
    for (const SnapshotGuest::Read& r : recorder.reads()) ++result_.kinds[KindOf(r, key)];

    for (size_t i = 0; i < policies_.size(); ++i) {
      const Policy& p = policies_[i];
      Runs& runs = runs_[i];
      const uint64_t hint_key = p.per_process ? 0 : key;
      const std::vector<ByteRange> register_bytes =
          RegisterRanges(start, p.snapshot, stack, readable);
      result_.register_bytes[i] += TotalBytes(register_bytes);
      SnapshotGuest ends(thread, p.snapshot, stack, runs.hints.get(), hint_key,
                         SnapshotGuest::Mode::kEnd);
      ends.HoldAlso(register_bytes);
      const EmulatedWindow end = runs.end->Run(start, ends);
      result_.inconsistent += TakenInCommon(live, end) != end.taken;
      result_.ends[i].v.push_back(end.taken);
      uint32_t refined = live.taken;
      for (size_t k = 0; k < kPoisons.size(); ++k) {
        SnapshotGuest poisoned(thread, p.snapshot, stack, runs.hints.get(), hint_key,
                               SnapshotGuest::Mode::kPoison, kPoisons[k]);
        poisoned.HoldAlso(register_bytes);
        refined = std::min(refined, TakenInCommon(live, runs.poison[k]->Run(start, poisoned)));
      }
      // Poison changes only bytes the end run could not read, and the dead stack below the
      // red zone, which the end run reads live: a refined window shorter than the end run's
      // read dead stack before it wrote it, and SnapshotGuest's rule for it would be wrong.
      result_.dead_stack_steered += refined < end.taken;
      result_.refined[i].v.push_back(refined);
      // Tracked, under both poisons: the unknown bytes' values must not show in the window.
      std::array<EmulatedWindow, kPoisons.size()> tracked;
      for (size_t k = 0; k < kPoisons.size(); ++k) {
        SnapshotGuest partial(thread, p.snapshot, stack, runs.hints.get(), hint_key,
                              SnapshotGuest::Mode::kTrack, kPoisons[k]);
        partial.HoldAlso(register_bytes);
        tracked[k] = runs.tracked[k]->Run(start, partial);
      }
      result_.tracked_wrong += TakenInCommon(live, tracked[0]) != tracked[0].taken;
      result_.tracked_steered += tracked[0].events != tracked[1].events;
      result_.tracked[i].v.push_back(tracked[0].taken);
      ++result_.tracked_ends[i][static_cast<size_t>(tracked[0].end)];
      if (p.learning == Learning::kMisses && ends.first_unheld() != ~0ull)
        runs.hints->Learn(hint_key, ends.first_unheld());
    }
    // What the stack copy and the image do not hold, learned from this live window: last read
    // first, so that where a code page has more such pages than hints, those the window read
    // first (the window ends at the first it misses) are the most recent and stay.
    for (auto it = recorder.reads().rbegin(); it != recorder.reads().rend(); ++it) {
      const SnapshotGuest::Read& r = *it;
      if (r.held) continue;
      learnable_.Learn(key, r.page.page);
      for (size_t i = 0; i < policies_.size(); ++i)
        if (policies_[i].learning == Learning::kStopWindows)
          runs_[i].hints->Learn(policies_[i].per_process ? 0 : key, r.page.page);
    }
    pages_.EndWindow();
  }

  const std::vector<Policy>& policies() const { return policies_; }
  ProgramResult& result() { return result_; }

 private:
  struct Runs {
    std::unique_ptr<WindowEmulator> end;
    std::array<std::unique_ptr<WindowEmulator>, kPoisons.size()> poison;
    std::array<std::unique_ptr<WindowEmulator>, kPoisons.size()> tracked;
    std::unique_ptr<HintPages> hints;
  };

  Kind KindOf(const SnapshotGuest::Read& r, uint64_t key) const {
    switch (r.page.cls) {
      case SnapshotPageClass::kCode:
        return kCode;
      case SnapshotPageClass::kImage:
        return kImage;
      case SnapshotPageClass::kStack:
        if (r.page.stack_reach <= 16 * 1024) return kStack16;
        if (r.page.stack_reach <= 64 * 1024) return kStack64;
        break;
      case SnapshotPageClass::kOther:
        break;
    }
    if (learnable_.Holds(key, r.page.page)) return kHintable;
    return r.page.cls == SnapshotPageClass::kStack ? kStackBeyond : kOther;
  }

  pid_t pid_;
  ProcessPages pages_;
  WindowEmulator live_emulator_;
  std::vector<Policy> policies_;
  std::vector<Runs> runs_;
  HintPages learnable_{~0u};  // every page earlier live windows from a code page read
  ProgramResult result_;
};

uint32_t WindowsWanted() {
  const char* env = std::getenv("PATHPROF_SNAPSHOT_WINDOWS");
  const long n = env ? std::strtol(env, nullptr, 10) : 500;
  return n > 0 ? static_cast<uint32_t>(n) : 500;
}

void BM_SnapshotReach(benchmark::State& state, const char* name) {
  const std::vector<std::string> argv = pathprof::bench::LiveProgram(name);
  if (const std::string missing = pathprof::bench::LiveProgramMissing(argv); !missing.empty()) {
    static std::string why;  // the library may keep the pointer past this call
    why = missing;
    state.SkipWithError(why.c_str());
    return;
  }
  pathprof::bench::LiveTarget target(argv);
  if (!target.ok()) {
    static std::string why;
    why = "could not start and seize " + argv[0];
    state.SkipWithError(why.c_str());
    return;
  }
  Reach reach(target.pid());
  reach.result().program = name;
  const uint32_t wanted = WindowsWanted();
  uint32_t in_syscall_stops = 0;
  for (auto _ : state) {
    while (reach.result().windows < wanted) {
      if (ptrace(PTRACE_INTERRUPT, target.pid(), nullptr, nullptr) != 0) break;
      int st = 0;
      if (waitpid(target.pid(), &st, __WALL) != target.pid() || !WIFSTOPPED(st)) break;
      CpuState start;
      bool in_syscall = false;
      pathprof::stepping::ReadCpuState(target.pid(), &start, &in_syscall);
      if (in_syscall)
        ++in_syscall_stops;
      else
        reach.Window(start);
      // A signal the child stopped for instead is handed back to it.
      const int sig = (st >> 16) == PTRACE_EVENT_STOP ? 0 : WSTOPSIG(st);
      ptrace(PTRACE_CONT, target.pid(), nullptr, reinterpret_cast<void*>(static_cast<long>(sig)));
      usleep(5000);  // the windows spread over the program's work
    }
  }
  ProgramResult& r = reach.result();
  state.counters["windows"] = r.windows;
  state.counters["in_syscall_stops"] = in_syscall_stops;
  state.counters["live_mean_taken"] = r.live.Mean();
  state.counters["inconsistent"] = r.inconsistent;
  state.counters["dead_stack_steered"] = r.dead_stack_steered;
  state.counters["tracked_wrong"] = r.tracked_wrong;
  state.counters["tracked_steered"] = r.tracked_steered;
  for (size_t i = 0; i < reach.policies().size(); ++i)
    if (reach.policies()[i].snapshot.name == "stack64+image")
      state.counters["stack64_image_mean_taken"] = r.ends[i].Mean();
  g_results.push_back(std::move(r));
}

void PrintTables() {
  if (g_results.empty()) return;
  const std::vector<Policy> policies = Policies();
  std::printf("\n### Window length in taken branches (of %u)\n\n", kWindowTaken);
  std::printf(
      "| program | policy | median | mean | >= 24 | = 32 | refined median | refined mean | "
      "refined = 32 | register KiB |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const ProgramResult& r : g_results) {
    std::printf("| %s (%u windows) | live (all memory) | %.0f | %.1f | %.0f%% | %.0f%% | | | | |\n",
                r.program.c_str(), r.windows, r.live.Median(), r.live.Mean(),
                r.live.ShareAtLeast(24), r.live.ShareAtLeast(kWindowTaken));
    for (size_t i = 0; i < policies.size(); ++i)
      std::printf(
          "| | %s | %.0f | %.1f | %.0f%% | %.0f%% | %.0f | %.1f | %.0f%% | %.1f |\n",
          policies[i].snapshot.name.c_str(), r.ends[i].Median(), r.ends[i].Mean(),
          r.ends[i].ShareAtLeast(24), r.ends[i].ShareAtLeast(kWindowTaken), r.refined[i].Median(),
          r.refined[i].Mean(), r.refined[i].ShareAtLeast(kWindowTaken),
          static_cast<double>(r.register_bytes[i]) / 1024.0 / std::max<uint32_t>(r.windows, 1));
  }
  std::printf(
      "\n### Tracked: unknown bytes marked, the window ends where one steers it\n\n"
      "| program | policy | median | mean | >= 24 | = 32 | ends by reason (not complete) |\n"
      "|---|---|---:|---:|---:|---:|---|\n");
  for (const ProgramResult& r : g_results)
    for (size_t i = 0; i < policies.size(); ++i) {
      std::string reasons;
      for (int e = 1; e < pathprof::emulator::kEmulationEndCount; ++e)
        if (const uint32_t n = r.tracked_ends[i][static_cast<size_t>(e)]; n != 0)
          reasons += std::string(reasons.empty() ? "" : ", ") +
                     std::string(pathprof::emulator::EmulationEndName(
                         static_cast<pathprof::emulator::EmulationEnd>(e))) +
                     " " + std::to_string(n);
      std::printf("| %s | %s | %.0f | %.1f | %.0f%% | %.0f%% | %s |\n",
                  i == 0 ? r.program.c_str() : "", policies[i].snapshot.name.c_str(),
                  r.tracked[i].Median(), r.tracked[i].Mean(), r.tracked[i].ShareAtLeast(24),
                  r.tracked[i].ShareAtLeast(kWindowTaken), reasons.c_str());
    }
  std::printf("\n### Pages live windows read, by class (each page once per window)\n\n");
  std::printf("| program | pages/window |");
  for (const char* k : kKindNames) std::printf(" %s |", k);
  std::printf(" vector regs |\n|---|---:|");
  for (int k = 0; k < kKinds; ++k) std::printf("---:|");
  std::printf("---:|\n");
  for (const ProgramResult& r : g_results) {
    uint64_t total = 0;
    for (uint64_t n : r.kinds) total += n;
    std::printf("| %s | %.1f |", r.program.c_str(),
                static_cast<double>(total) / std::max<uint32_t>(r.windows, 1));
    for (uint64_t n : r.kinds)
      std::printf(" %.1f%% |", 100.0 * static_cast<double>(n) / std::max<uint64_t>(total, 1));
    std::printf(" %.0f%% |\n", 100.0 * r.vector_windows / std::max<uint32_t>(r.windows, 1));
  }
  for (const ProgramResult& r : g_results) {
    if (r.inconsistent)
      std::printf("\n%s: %u policy runs left the live window's events (a bug to look at)\n",
                  r.program.c_str(), r.inconsistent);
    if (r.tracked_wrong || r.tracked_steered)
      std::printf(
          "\n%s: %u tracked windows left the live window's events and %u differed between "
          "two poisons (unknown bytes steered them unseen: a bug to look at)\n",
          r.program.c_str(), r.tracked_wrong, r.tracked_steered);
    if (r.dead_stack_steered)
      std::printf(
          "\n%s: %u poisoned runs were steered before the end run's first unheld read "
          "(dead stack below the red zone read before written)\n",
          r.program.c_str(), r.dead_stack_steered);
  }
}

}  // namespace

#define PROGRAM(id, name) BENCHMARK_CAPTURE(BM_SnapshotReach, id, name)->Iterations(1)
PROGRAM(hotloop, "hotloop");
PROGRAM(xz, "xz");
PROGRAM(zstd, "zstd");
PROGRAM(python3, "python3");
PROGRAM(sqlite3, "sqlite3");
PROGRAM(lua54, "lua5.4");

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  PrintTables();
  return 0;
}
