#include "exact_block_stepper.h"

#include <cstdint>
#include <limits>

#include "ptrace_primitives.h"

namespace pathprof::stepping {
namespace {

// A straight run of code (no branch) longer than this is not believed: the stretch before a
// leg's first branch is straight, but never this long.
constexpr uint32_t kMaxStraightRun = 1u << 16;

// Instructions from `from` to `to` with no branch between them; false when a branch or an
// unreadable instruction comes first.
bool StraightRun(InstructionReader& reader, uint64_t from, uint64_t to, uint32_t* count) {
  uint32_t n = 0;
  for (uint64_t pos = from; pos != to; ++n) {
    const decoders::X86Instruction* insn = reader.At(pos);
    if (insn == nullptr || insn->is_branch || n >= kMaxStraightRun) return false;
    pos = insn->next();
  }
  *count = n;
  return true;
}

uint64_t SumInstructions(const std::vector<BranchEvent>& events) {
  uint64_t n = 0;
  for (const BranchEvent& e : events) n += e.instructions;
  return n;
}

}  // namespace

BlockRun RunBlocks(pid_t tid, uint64_t rip, const StepContext& context,
                   const BlockRunOptions& options) {
  WindowStepOptions w;
  w.mode = options.mode;
  // The window is bounded by its stops alone: a window that fills up drops the branches a
  // stop retired past its end, which an exact trace cannot lose.
  w.window_taken = std::numeric_limits<uint32_t>::max();
  w.max_stops = options.max_stops;
  w.stop_timeout_ns = options.stop_timeout_ns;
  w.account_interrupted_legs = true;
  SteppedWindow window = StepThreadWindow(tid, rip, context, w);

  BlockRun run;
  run.breakpoint_legs = window.breakpoint_legs;
  run.single_steps = window.single_steps;
  run.lost_step_traps = window.lost_step_traps;
  run.thread_stopped = window.thread_stopped;
  run.wait_status = window.wait_status;
  run.events = std::move(window.events);
  // Where the thread stood after the last event it retired: from there to where it is now it
  // ran no branch the window recorded.
  const uint64_t after_events = run.events.empty() ? rip : run.events.back().to;
  switch (window.end) {
    case WindowEnd::kSyscall:
    case WindowEnd::kDecode:
    case WindowEnd::kStopLimit:
    case WindowEnd::kBudget:
    case WindowEnd::kComplete:
    case WindowEnd::kTrapFlag:  // stopped after the program's popf: the next run goes on from it
      run.end = BlockRun::End::kStopped;
      break;
    case WindowEnd::kSignal:
      run.end = BlockRun::End::kSignal;
      break;
    case WindowEnd::kExited:
      run.end = BlockRun::End::kExited;
      run.instructions = window.instructions;
      return run;
    case WindowEnd::kTimedOut:
      run.end = BlockRun::End::kTimedOut;
      run.path_known = false;
      return run;
    case WindowEnd::kPtraceError:
    case WindowEnd::kEmulationEnded:
      run.end = BlockRun::End::kLost;
      run.path_known = false;
      return run;
  }
  if (!ReadRip(tid, &run.rip)) {
    run.end = BlockRun::End::kLost;
    run.path_known = false;
    return run;
  }
  // From the last event to where the thread stands it ran no branch (the window has the events
  // of a leg a signal cut short too), so the instructions between are counted by decoding.
  run.path_known = !window.interrupted_leg_unknown &&
                   StraightRun(*context.reader, after_events, run.rip, &run.tail_instructions);
  run.instructions = SumInstructions(run.events) + run.tail_instructions;
  return run;
}

}  // namespace pathprof::stepping
