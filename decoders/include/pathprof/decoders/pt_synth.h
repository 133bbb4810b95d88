// Intel PT synthesis: turns an exact branch stream (a .pbs from the ptrace tracer) into the
// packets a PT-capable CPU would have written for it, per thread, with libipt's encoder. This
// lets the PT decoder be checked event for event against exact truth on real binaries, on
// hosts without PT hardware.
//
// Encoding (user-space-only tracing, as perf records it):
//   segment start   PSB, PSBEND, MODE.exec(64-bit), TIP.PGE(first event's source)
//   conditional     one TNT bit (TNT-8 up to 6 bits, TNT-64 up to 47)
//   direct jmp/call nothing (the decoder follows them in the binary)
//   indirect, ret   TIP(target) (returns are never compressed)
//   syscall etc.    TIP.PGD(suppressed), MODE.exec, TIP.PGE(resume address)
//   async transfer  FUP(interrupted address), TIP.PGD(suppressed), MODE.exec, TIP.PGE(target)
//   gap             FUP(last target), TIP.PGD, OVF, then a new segment
//   periodic        PSB, MODE.exec, FUP(last target), PSBEND about every psb_period bytes
//   end             FUP(last target), TIP.PGD(suppressed)
// The decoder starts each segment at its first event's source, so that event's `instructions`
// decodes as 1 (what ran before it in its block is not in the trace).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "pathprof/core/branch.h"
#include "pathprof/core/status.h"

namespace pathprof::decoders {

struct PtSynthOptions {
  uint64_t psb_period = 4096;  // bytes between PSB+ (sync points for resync after errors)
  // Says whether the instruction at an address is a far-transfer branch (syscall, int, iret):
  // those disable tracing synchronously; any other far transfer is asynchronous (a signal).
  // Unset: every far transfer is treated as synchronous.
  std::function<bool(uint64_t ip)> is_far_branch_instruction;
};

struct PtSynthTrace {
  uint32_t pid = 0;
  uint32_t tid = 0;
  std::vector<uint8_t> bytes;
  uint64_t packets = 0;
  uint64_t events = 0;  // branch events encoded
};

// One trace per thread, in order of each thread's first batch.
Result<std::vector<PtSynthTrace>> SynthesizePt(const std::vector<BranchBatch>& batches,
                                               const PtSynthOptions& options = {});

}  // namespace pathprof::decoders
