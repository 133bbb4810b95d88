// The exact tracer: runs a program under ptrace and records every branch it retires (all
// threads, taken and not taken) plus the executable images it maps. Exact, so it is the ground
// truth the sampled sources are checked against; slow, because the program stops often: once
// per instruction when single-stepped, once per taken conditional when block-stepped
// (breakpoints on every taken target ahead, the same events: src/exact_block_stepper.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "pathprof/core/branch.h"
#include "pathprof/core/pbs.h"
#include "pathprof/core/status.h"
#include "pathprof/stepping/step_mode.h"

namespace pathprof::stepping {

// How the tracer moves a thread on between the stops it records. Every mode records the same
// events (tests/stepping/exact_tracer_blocks_test.cc holds them to it).
enum class ExactStepMode : uint8_t {
  kSingleStep,   // PTRACE_SINGLESTEP, one stop per instruction: works wherever ptrace does
  kBlocks,       // block stepping with what the step probe (step_probe.h) finds works here:
                 // debug registers where they fire, else int3 bytes for a lone thread;
                 // single steps where none works
  kBreakpoints,  // block stepping with debug-register breakpoints (an error where they fail)
  kInt3,         // block stepping with int3 bytes in the text (an error where they fail)
};
// Their words (`pathctl trace --step-mode`); the step modes' alias "dr" is taken for
// breakpoints too.
inline constexpr EnumWords<ExactStepMode, 4> kExactStepModeWords{{
    {ExactStepMode::kBlocks, "auto"},
    {ExactStepMode::kBreakpoints, "breakpoints"},
    {ExactStepMode::kInt3, "int3"},
    {ExactStepMode::kSingleStep, "step"},
}};
std::string_view ExactStepModeName(ExactStepMode mode);
bool ParseExactStepMode(std::string_view text, ExactStepMode* out);

struct ExactTraceOptions {
  std::vector<std::string> argv;  // program and arguments; argv[0] is looked up in PATH
  size_t batch_events = 4096;     // a thread's events are cut into batches of at most this many
  // Stop (and kill the program) once this many instructions retired; 0: no limit. Block steps
  // stop on it as single steps do (a step decoded across a lost trap may pass it by up to 3).
  uint64_t max_steps = 0;
  ExactStepMode step_mode = ExactStepMode::kSingleStep;
  // When set and true (a signal handler's flag), the trace ends at the next stop or within
  // ~50 ms: the program is killed and reaped, and everything traced until then is kept.
  const std::atomic<bool>* interrupt = nullptr;
};

// Everything the tracer had to work around is counted here; nothing is dropped silently.
struct ExactTraceStats {
  // How a lone thread was moved on (threads beside others: debug registers where they work,
  // else single steps): step, breakpoints or int3.
  StepMode mode = StepMode::kSingleStep;
  uint64_t instructions = 0;     // retired (a REP string instruction once)
  uint64_t steps = 0;            // single-step stops handled
  uint64_t breakpoint_legs = 0;  // block-stepping stops: native runs to a breakpoint
  uint64_t branches = 0;         // events emitted
  uint64_t taken = 0;
  uint64_t threads = 0;  // threads seen, the first one included
  uint64_t execs = 0;
  uint64_t signals_forwarded = 0;     // signals re-injected into the program
  uint64_t async_transfers = 0;       // signal handler entries recorded as far transfers
  uint64_t unexpected_transfers = 0;  // a non-branch instruction not followed by its successor
  uint64_t lost_step_traps = 0;       // a step that stopped late (trap lost), decoded across
  uint64_t step_timeouts = 0;         // a step or leg that never trapped: stopped by force, gap
  // A signal stopped a block-stepped thread where two paths lead: a gap is marked there.
  uint64_t unknown_paths = 0;
  uint64_t decode_failures = 0;  // instruction bytes unreadable or undecodable
  uint64_t maps_reads = 0;       // times /proc/PID/maps was (re)read
  uint64_t images = 0;           // image records emitted
  bool step_limit_hit = false;
  bool interrupted = false;  // ended by options.interrupt: the program was killed
  int exit_code = -1;        // the program's exit status, or 128+signal
};

// Where the tracer puts what it records, in order.
struct ExactTraceSink {
  std::function<Status(const BranchBatch&)> on_batch;
  std::function<Status(const ImageRecord&)> on_image;
  std::function<Status(const MetaRecord&)> on_meta;
};

// Runs options.argv to completion under the tracer. On any failure, and on an interrupt, the
// program is killed and reaped; it is never left stopped or a zombie.
Result<ExactTraceStats> TraceExact(const ExactTraceOptions& options, const ExactTraceSink& sink);

// TraceExact into a .pbs file (batches, image records, and meta records: command, exit status).
Result<ExactTraceStats> TraceExactToFile(const ExactTraceOptions& options,
                                         const std::string& pbs_path);

}  // namespace pathprof::stepping
