// The shared vocabulary of the pipeline: one retired branch, and a batch of them from one thread.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace pathprof {

enum class BranchKind : uint8_t {
  kConditional = 0,
  kDirectJump,
  kIndirectJump,
  kDirectCall,
  kIndirectCall,
  kReturn,
  kFarTransfer,  // syscall, interrupt, exception, async transfer
  kUnknown,
};
inline constexpr int kBranchKindCount = 8;

std::string_view BranchKindName(BranchKind kind);
// Parses the names BranchKindName produces; returns false for anything else.
bool ParseBranchKind(std::string_view name, BranchKind* out);

inline bool IsCall(BranchKind k) {
  return k == BranchKind::kDirectCall || k == BranchKind::kIndirectCall;
}
inline bool IsIndirect(BranchKind k) {
  return k == BranchKind::kIndirectJump || k == BranchKind::kIndirectCall;
}

// One retired branch. `to` is the target when taken and the next instruction when not taken.
// `instructions` counts the instructions retired since the previous branch's `to`, this branch
// included (the length of the block it ends); 0 when the source does not know.
// `cycles` and `mispredicted` come from LBR when the hardware reports them, else 0.
struct BranchEvent {
  uint64_t from = 0;
  uint64_t to = 0;
  uint32_t cycles = 0;
  uint16_t instructions = 0;
  BranchKind kind = BranchKind::kUnknown;
  bool taken = true;
  bool mispredicted = false;

  bool operator==(const BranchEvent&) const = default;
  // Forward/backward is decided by address comparison, as the hardware profiler does.
  bool IsBackward() const { return taken && to <= from; }
};

// Events of one thread in retirement order.
// `gap_before`: the stream is discontinuous before the first event (LBR window start, PT
// overflow, context switch, burst start); every consumer drops partial state there.
// `window`: the batch is a bounded sample window (LBR stack, ptrace burst), so estimates from it
// must be corrected for window bias (docs/design.md §5).
// The top of a thread's user stack at a window's start, as a tracer that stopped the thread read
// it: its registers and the stack memory from the stack pointer up. It names the window's calling
// context once unwound (the same DWARF CFI walk as a copied eBPF stack sample). Empty when the
// source has none (LBR, PT, recordings); `error` set when the read failed.
struct ThreadStack {
  std::vector<uint64_t> regs;  // x86-64 DWARF numbering, 17 registers (16: rip); empty: none
  uint64_t stack_start = 0;    // user address of stack[0] (the stack pointer)
  std::vector<uint8_t> stack;  // from stack_start up, bounded by the reader
  int32_t error = 0;           // errno of a failed read (EBADMSG: a malformed message)

  bool empty() const { return regs.empty() && error == 0; }
  bool operator==(const ThreadStack&) const = default;
};

struct BranchBatch {
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t time_ns = 0;
  bool gap_before = true;
  bool window = false;
  std::vector<BranchEvent> events;
  // ptrace bursts: the stopped thread's stack at the window's start (its calling context).
  ThreadStack stack;

  bool operator==(const BranchBatch&) const = default;
};

}  // namespace pathprof
