// The exact tracer: runs a program under ptrace single-step and records every branch it retires
// (all threads, taken and not taken) plus the executable images it maps. Slow (one stop per
// instruction) but exact, so it is the ground truth the sampled sources are checked against.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "pathprof/core/branch.h"
#include "pathprof/core/pbs.h"
#include "pathprof/core/status.h"

namespace pathprof::stepping {

struct ExactTraceOptions {
  std::vector<std::string> argv;  // program and arguments; argv[0] is looked up in PATH
  size_t batch_events = 4096;     // a thread's events are cut into batches of at most this many
  uint64_t max_steps = 0;         // stop (and kill the program) after this many steps; 0: no limit
};

// Everything the tracer had to work around is counted here; nothing is dropped silently.
struct ExactTraceStats {
  uint64_t steps = 0;     // single-step stops handled
  uint64_t branches = 0;  // events emitted
  uint64_t taken = 0;
  uint64_t threads = 0;  // threads seen, the first one included
  uint64_t execs = 0;
  uint64_t signals_forwarded = 0;     // signals re-injected into the program
  uint64_t async_transfers = 0;       // signal handler entries recorded as far transfers
  uint64_t unexpected_transfers = 0;  // a non-branch instruction not followed by its successor
  uint64_t lost_step_traps = 0;       // a step that stopped late (trap lost), decoded across
  uint64_t step_timeouts = 0;         // a step that never trapped: stopped by force, gap marked
  uint64_t decode_failures = 0;       // instruction bytes unreadable or undecodable
  uint64_t maps_reads = 0;            // times /proc/PID/maps was (re)read
  uint64_t images = 0;                // image records emitted
  bool step_limit_hit = false;
  int exit_code = -1;  // the program's exit status, or 128+signal
};

// Where the tracer puts what it records, in order.
struct ExactTraceSink {
  std::function<Status(const BranchBatch&)> on_batch;
  std::function<Status(const ImageRecord&)> on_image;
  std::function<Status(const MetaRecord&)> on_meta;
};

// Runs options.argv to completion under the tracer. On any failure the program is killed;
// it is never left stopped.
Result<ExactTraceStats> TraceExact(const ExactTraceOptions& options, const ExactTraceSink& sink);

// TraceExact into a .pbs file (batches, image records, and meta records: command, exit status).
Result<ExactTraceStats> TraceExactToFile(const ExactTraceOptions& options,
                                         const std::string& pbs_path);

}  // namespace pathprof::stepping
