// What turns one snapshot sample into a window: per process, the image (ProcessImage), the
// emulator and its caches, the pages to ask the sampler to copy; per sample, the start from its
// registers, the guest over its bytes (RecordGuest), the emulator's run. No threads, no
// sampler: SnapshotWindowCollector feeds it samples in order, in the sandboxed helper
// (pathprof-emulator) or, where asked, in its own worker thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "pathprof/collectors/ebpf_stack_sampler.h"
#include "pathprof/core/branch.h"
#include "pathprof/emulator/window_emulator.h"
#include "process_access.h"
#include "process_image.h"

namespace pathprof::collectors {

struct EmulationSettings {
  uint32_t window_taken = 32;
  uint32_t hint_pages = 0;  // the sampler's room for hint pages per sample
  bool learn_hints = false;
  uint32_t max_processes = 1024;
  uint32_t max_stable_pages = emulator::EmulatorLimits{}.max_stable_pages;
  uint32_t max_decoded = emulator::EmulatorLimits{}.max_decoded;
};

// What one sample came to.
struct SampleOutcome {
  enum class Kind : uint8_t {
    kWindow,            // emulated (events may be empty: its first instruction needed a byte
                        // nobody held)
    kNoSnapshot,        // no registers or no snapshot
    kInMappingSyscall,  // inside a call that changes the mappings: no window
  };
  Kind kind = Kind::kNoSnapshot;
  bool exec = false;     // the process ran another program since its last sample
  bool evicted = false;  // a process was forgotten for max_processes to make room: this one
  uint32_t evicted_pid = 0;
  bool in_syscall = false;
  uint32_t taken = 0;
  emulator::EmulationEnd end = emulator::EmulationEnd::kComplete;
  uint64_t emulate_ns = 0;  // this thread's CPU time on the sample
  std::vector<BranchEvent> events;
  ProcessImage::Stats image;  // the sample's process's image, after it
};

class SnapshotEmulation {
 public:
  // Asks the sampler to copy `pages` with every sample of `pid` from now on (empty: none).
  using HintSink = std::function<void(uint32_t pid, const std::vector<uint64_t>& pages)>;
  // `access` must outlive this.
  SnapshotEmulation(const EmulationSettings& settings, ProcessAccess& access, HintSink hints);
  ~SnapshotEmulation();
  SnapshotEmulation(const SnapshotEmulation&) = delete;
  SnapshotEmulation& operator=(const SnapshotEmulation&) = delete;

  SampleOutcome Emulate(const RawStackSample& sample);
  // Observes the mapping sequences of samples about to be emulated (ProcessImage::
  // ObserveSequence), so that the first of a batch may already count on the later ones: a
  // sample taken after a read of the maps says whether the read describes the earlier ones.
  void ObserveAhead(const std::vector<RawStackSample>& samples);
  void Forget(uint32_t pid);

 private:
  struct Process;
  Process& ProcessOf(uint32_t pid, uint64_t now_ns, SampleOutcome* out);
  uint32_t EvictOldest();
  void LearnHints(uint32_t pid, Process& p, const std::vector<uint64_t>& wanted,
                  const std::vector<uint64_t>& unknown, emulator::EmulationEnd end);

  EmulationSettings settings_;
  ProcessAccess& access_;
  HintSink hints_;
  std::map<uint32_t, std::unique_ptr<Process>> processes_;
};

}  // namespace pathprof::collectors
