// Snapshot windows checked at the same instant (issue 39's verify mode): the eBPF sampler takes a
// snapshot of the traced child and, in the same run of its program, sends the child's thread a
// signal; the tracer (this process) sees the thread stop for it at the very instruction the
// snapshot holds, checks that the stop's registers are the snapshot's, runs today's
// stop-and-emulate window there (over the live memory) and the snapshot's window (over the
// record and the image only), and compares them event by event. The signal is then suppressed.
// A snapshot window may end earlier than the live one, never differ from it: that is the
// exactness bar. Used by tests/collectors/snapshot_windows_test.cc and
// bench/snapshot_windows_bench.cc.
#pragma once

#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "live_guest.h"
#include "pathprof/collectors/ebpf_stack_sampler.h"
#include "pathprof/core/clock.h"
#include "pathprof/emulator/window_emulator.h"
#include "record_guest.h"

namespace pathprof::collectors::verify {

inline constexpr int kVerifySignal = SIGURG;  // ignored by default: nothing else uses it

inline uint64_t ThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

struct Result {
  uint64_t stops = 0;             // the child stopped for the verify signal
  uint64_t no_record = 0;         // ... with no snapshot of the thread in the ring
  uint64_t registers_differ = 0;  // ... where the stop's registers are not the snapshot's
  uint64_t in_syscall = 0;        // compared windows of samples taken inside a system call
  uint64_t in_mapping_syscall =
      0;                   // samples inside mmap, mprotect, ...: no window, as in the source
  uint64_t compared = 0;   // windows compared
  uint64_t identical = 0;  // the snapshot window is the live one's prefix, event for event
  uint64_t longer = 0;     // ... went past where the live window ended (wrong)
  // Wrong windows that went past a load or store the live window faulted on (a page whose
  // protection changed between the image's read of the maps and the sample, when the record's
  // mapping sequence does not catch it).
  uint64_t past_a_fault = 0;
  std::vector<uint32_t> taken;  // each compared snapshot window's taken branches
  std::vector<uint32_t> live_taken;
  std::vector<uint32_t> snapshot_window_ns;  // this thread's CPU time per snapshot window
  std::array<uint64_t, emulator::kEmulationEndCount> ends{};  // the snapshot windows'
  std::array<uint64_t, static_cast<size_t>(SnapshotPageSource::kCount)> page_sources{};
  uint64_t record_bytes = 0;  // stack + snapshot bytes of the compared samples
  ProcessImage::Stats image;
  std::vector<std::string> differences;  // the first few, described
  EbpfSamplerStats sampler;
  std::string error;

  uint64_t wrong() const { return compared - identical; }
  static uint32_t Median(std::vector<uint32_t> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  }
};

// The Guest decorator that notes the pages a live window read (for learning hint pages), with
// whether they were stable.
class NotingGuest final : public emulator::Guest {
 public:
  explicit NotingGuest(emulator::Guest& inner) : inner_(inner) {}
  bool ReadPage(uint64_t page, uint8_t* out, bool* stable) override {
    const bool ok = inner_.ReadPage(page, out, stable);
    if (ok) pages.push_back({page, *stable});
    return ok;
  }
  bool PageWritable(uint64_t page) override { return inner_.PageWritable(page); }
  bool PageExecutable(uint64_t page) override { return inner_.PageExecutable(page); }
  bool LoadVectorState(emulator::CpuState* s) override { return inner_.LoadVectorState(s); }
  struct Page {
    uint64_t page;
    bool stable;
  };
  std::vector<Page> pages;

 private:
  emulator::Guest& inner_;
};

struct Options {
  int hz = 199;
  uint32_t stack_bytes = 16384;
  SnapshotSettings snapshot;  // enabled and verify_signal are set by Run
  uint32_t windows = 200;
  double max_seconds = 30;
  // Hint pages, up to snapshot.hint_pages: first the pages of read-only mappings that are not
  // their file's (RELRO) that live windows read and the image has no copy of yet (copied once:
  // ProcessImage::Adopt); then, with learn_hints, the data pages the live windows read, most
  // recent first, as a sampler beside stop-and-emulate windows would learn them.
  bool learn_hints = false;
};

// `pid`: a single-threaded child this process has seized (PTRACE_SEIZE) and that runs.
inline Result Run(pid_t pid, Options opt) {
  Result r;
  EbpfSamplerConfig cfg;
  cfg.frequency_hz = opt.hz;
  cfg.pids = {static_cast<uint32_t>(pid)};
  cfg.kernel_stacks = false;
  cfg.copy_user_stacks = true;
  cfg.stack_copy_bytes = opt.stack_bytes;
  cfg.snapshot = opt.snapshot;
  cfg.snapshot.enabled = true;
  cfg.snapshot.verify_signal = kVerifySignal;
  auto sampler = EbpfStackSampler::Start(cfg);
  if (!sampler.ok()) {
    r.error = sampler.status().ToString();
    return r;
  }
  std::map<uint32_t, RawStackSample> latest;  // by tid
  auto sink = [&](const RawStackSample& s) {
    if (s.snapshot) latest[s.tid] = s;
  };
  stepping::ProcessPages pages(pid);
  DirectProcessAccess access(std::nullopt);
  ProcessImage image(pid, access);
  emulator::WindowEmulator live_emulator, snapshot_emulator;
  std::vector<uint64_t> data_hints, once_hints;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(opt.max_seconds * 1000));
  while (r.compared < opt.windows && std::chrono::steady_clock::now() < deadline) {
    (void)(*sampler)->Drain(sink);
    int st = 0;
    const pid_t got = waitpid(pid, &st, __WALL | WNOHANG);
    if (got == 0) {
      usleep(100);
      continue;
    }
    if (got != pid || !WIFSTOPPED(st)) {
      r.error = "the child ended";
      break;
    }
    const int sig = (st >> 16) == PTRACE_EVENT_STOP ? 0 : WSTOPSIG(st);
    if (sig != kVerifySignal) {  // not ours: handed back
      ptrace(PTRACE_CONT, pid, nullptr, reinterpret_cast<void*>(static_cast<long>(sig)));
      continue;
    }
    ++r.stops;
    (void)(*sampler)->Drain(sink);
    auto it = latest.find(static_cast<uint32_t>(pid));
    emulator::CpuState live_state;
    SnapshotStart start;
    if (it == latest.end() || !stepping::ReadCpuState(pid, &live_state) ||
        !StartFromSample(it->second, image, &start)) {
      ++r.no_record;
      ptrace(PTRACE_CONT, pid, nullptr, nullptr);
      continue;
    }
    const RawStackSample sample = std::move(it->second);
    latest.erase(it);
    if (start.in_mapping_syscall) {  // the collector starts no window there either
      ++r.in_mapping_syscall;
      ptrace(PTRACE_CONT, pid, nullptr, nullptr);
      continue;
    }
    bool same = start.state.rip == live_state.rip;
    for (int g = 0; g < 16; ++g)
      if (!(start.unheld_registers & (1u << g)) && start.state.gpr[g] != live_state.gpr[g])
        same = false;
    // The arithmetic flags (the stop's rflags may carry the kernel's RF and TF handling bits).
    if ((start.state.rflags ^ live_state.rflags) & 0x8d5) same = false;
    if (!same) {
      ++r.registers_differ;
      ptrace(PTRACE_CONT, pid, nullptr, nullptr);
      continue;
    }
    // The live window: today's stop-and-emulate, over the process's memory.
    if (pages.Refresh(MonotonicNs(), 50'000'000)) live_emulator.Reset();
    pages.BeginWindow(live_state.gpr[emulator::kRsp]);
    stepping::ThreadGuest thread(pid, pages);
    NotingGuest noting(thread);
    const emulator::EmulatedWindow live = live_emulator.Run(live_state, noting);
    pages.EndWindow();
    // The snapshot's window, over the record and the image only.
    // Timed as the collector would pay for it: the image's refresh, the guest, the emulation.
    const uint64_t t0 = ThreadCpuNs();
    if (image.RefreshForSample(*sample.snapshot, sample.time_ns, MonotonicNs(), 50'000'000))
      snapshot_emulator.Reset();
    RecordGuest guest(sample, start, image);
    const emulator::EmulatedWindow snap = snapshot_emulator.Run(start.state, guest);
    r.snapshot_window_ns.push_back(
        static_cast<uint32_t>(std::min<uint64_t>(ThreadCpuNs() - t0, ~0u)));
    ++r.compared;
    if (start.in_syscall) ++r.in_syscall;
    r.record_bytes += sample.snapshot->stack.size() + sample.snapshot->bytes.size();
    for (size_t i = 0; i < r.page_sources.size(); ++i) r.page_sources[i] += guest.reads()[i];
    bool identical = snap.events.size() <= live.events.size();
    size_t first_difference = 0;
    for (size_t i = 0; identical && i < snap.events.size(); ++i)
      if (!(snap.events[i] == live.events[i])) {
        identical = false;
        first_difference = i;
      }
    if (identical && snap.end == emulator::EmulationEnd::kComplete && live.taken != snap.taken)
      identical = false;
    if (identical) {
      ++r.identical;
    } else {
      if (snap.events.size() > live.events.size()) ++r.longer;
      if ((live.end == emulator::EmulationEnd::kFault ||
           live.end == emulator::EmulationEnd::kUnreadable) &&
          snap.events.size() > live.events.size())
        ++r.past_a_fault;
      if (r.differences.size() < 5)
        r.differences.push_back(
            "window at rip 0x" +
            [&] {
              char b[32];
              std::snprintf(b, sizeof b, "%llx", static_cast<unsigned long long>(start.state.rip));
              return std::string(b);
            }() +
            ": first difference at event " + std::to_string(first_difference) + " of " +
            std::to_string(snap.events.size()) + " (live " + std::to_string(live.events.size()) +
            ", ends " + std::string(emulator::EmulationEndName(snap.end)) + " / " +
            std::string(emulator::EmulationEndName(live.end)) + ")");
    }
    r.taken.push_back(snap.taken);
    r.live_taken.push_back(live.taken);
    ++r.ends[static_cast<size_t>(snap.end)];
    if (opt.snapshot.hint_pages > 0) {
      for (const NotingGuest::Page& p : noting.pages) {
        if (p.stable) {
          if (image.WantsCopy(p.page) &&
              std::find(once_hints.begin(), once_hints.end(), p.page) == once_hints.end())
            once_hints.push_back(p.page);
        } else if (opt.learn_hints) {
          data_hints.erase(std::remove(data_hints.begin(), data_hints.end(), p.page),
                           data_hints.end());
          data_hints.insert(data_hints.begin(), p.page);
        }
      }
      once_hints.erase(std::remove_if(once_hints.begin(), once_hints.end(),
                                      [&](uint64_t page) { return !image.WantsCopy(page); }),
                       once_hints.end());
      if (data_hints.size() > opt.snapshot.hint_pages) data_hints.resize(opt.snapshot.hint_pages);
      std::vector<uint64_t> hints = once_hints;
      for (uint64_t page : data_hints)
        if (hints.size() < opt.snapshot.hint_pages) hints.push_back(page);
      if (hints.size() > opt.snapshot.hint_pages) hints.resize(opt.snapshot.hint_pages);
      (void)(*sampler)->SetHintPages(static_cast<uint32_t>(pid), hints);
    }
    ptrace(PTRACE_CONT, pid, nullptr, nullptr);
  }
  r.sampler = (*sampler)->stats();
  r.image = image.stats();
  return r;
}

}  // namespace pathprof::collectors::verify
