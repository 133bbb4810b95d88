// StepMode::kEmulate: a window for one ptrace stop. The thread is already stopped (the burst's
// interrupt); its registers are copied and its next W taken branches run in the emulator
// (emulator/window_emulator.h) over its process's memory (live_guest.h). Nothing is written to
// the thread or its memory: it resumes where it stopped and runs the code the window describes.
//
// Per process: the emulator keeps the pages of read-only file mappings and the instructions
// decoded from them across windows, and forgets them when such a mapping changes (the maps are
// re-read every kMapsMaxAgeNs and on a miss) or the process execs.
//
// CheckEmulatedWindow is the differential check: it single-steps the real thread through the
// instructions the emulated window retired and compares the two, event by event, and the
// registers at the end.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "live_guest.h"
#include "pathprof/emulator/window_emulator.h"
#include "pathprof/stepping/instruction_reader.h"
#include "window_stepper.h"

namespace pathprof::stepping {

class EmulatedWindows {
 public:
  static constexpr uint64_t kMapsMaxAgeNs = 100'000'000;

  EmulatedWindows(pid_t pid, uint32_t window_taken);

  struct Window {
    emulator::CpuState start;  // the thread's registers at the stop
    emulator::EmulatedWindow emulated;
    uint64_t emulate_ns = 0;  // time in the emulator (the thread stays stopped meanwhile)
  };
  // `tid` (of this process) is in a ptrace stop of this tracer, with the registers `start`
  // (ReadCpuState). `other_threads`: the process has threads that run meanwhile (windows end
  // at atomics, WindowEmulator::Run).
  void Run(pid_t tid, const emulator::CpuState& start, Window* out, bool other_threads = false);
  // The process exec'd: its address space is new.
  void Reset();

  const emulator::EmulatorStats& stats() const { return emulator_.stats(); }
  uint64_t resets() const { return resets_; }  // stable mappings changed: caches dropped
  uint64_t maps_reads() const { return pages_.maps_reads(); }
  const ProcessPages& pages() const { return pages_; }

 private:
  ProcessPages pages_;
  emulator::WindowEmulator emulator_;
  uint64_t resets_ = 0;
};

// The emulated window as a stepped one: the same events, counted the same way.
SteppedWindow AsSteppedWindow(const emulator::EmulatedWindow& w);

struct EmulationCheck {
  enum class Verdict : uint8_t {
    kIdentical,   // every event equal, and as many instructions
    kDiverged,    // the real thread retired other branches (detail says where)
    kNotChecked,  // stepping stopped early (a signal, the thread exited, too long)
  } verdict = Verdict::kNotChecked;
  // kIdentical: the general registers and rip at the end differ (data the branches did not
  // show yet; flags are compared only where every x86 core defines them).
  bool state_differs = false;
  std::string detail;     // what differed first, in words
  SteppedWindow stepped;  // what single-stepping saw (thread_stopped: where it was left)
};

// `tid` is stopped where `window.start` was read and has not run since. Single-steps it through
// window.emulated.instructions instructions (at most max_instructions; longer windows are not
// checked) and compares. The thread is left stopped at the end unless stepped.thread_stopped
// is false (it exited); a signal it stopped for instead is in stepped.wait_status.
EmulationCheck CheckEmulatedWindow(pid_t tid, const EmulatedWindows::Window& window,
                                   InstructionReader& reader, uint64_t max_instructions = 20000);

}  // namespace pathprof::stepping
