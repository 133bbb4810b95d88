#include "pathprof/emulator/window_emulator.h"

#include <Zydis/Zydis.h>

#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "decoded_instruction.h"
#include "fast_ops.h"
#include "machine.h"
#include "pathprof/core/clock.h"
#include "unknown_bytes.h"
#include "window_memory.h"

namespace pathprof::emulator {

std::string_view EmulationEndName(EmulationEnd end) {
  switch (end) {
    case EmulationEnd::kComplete:
      return "complete";
    case EmulationEnd::kSyscall:
      return "syscall";
    case EmulationEnd::kTrap:
      return "trap";
    case EmulationEnd::kUnmodelled:
      return "unmodelled";
    case EmulationEnd::kHiddenState:
      return "hidden_state";
    case EmulationEnd::kFault:
      return "fault";
    case EmulationEnd::kUnreadable:
      return "unreadable";
    case EmulationEnd::kSelfModifying:
      return "self_modifying";
    case EmulationEnd::kInstructionLimit:
      return "instruction_limit";
    case EmulationEnd::kPageLimit:
      return "page_limit";
    case EmulationEnd::kDecode:
      return "decode";
    case EmulationEnd::kVectorState:
      return "vector_state";
    case EmulationEnd::kTimeLimit:
      return "time_limit";
    case EmulationEnd::kSharedMemory:
      return "shared_memory";
    case EmulationEnd::kNotExecutable:
      return "not_executable";
    case EmulationEnd::kNotInSnapshot:
      return "not_in_snapshot";
    case EmulationEnd::kVectorStateUnknown:
      return "vector_state_unknown";
    case EmulationEnd::kRegisterUnknown:
      return "register_unknown";
    case EmulationEnd::kProtectionUnknown:
      return "protection_unknown";
  }
  return "?";
}

std::string_view MnemonicName(uint16_t mnemonic) {
  if (mnemonic > ZYDIS_MNEMONIC_MAX_VALUE) return "?";
  const char* s = ZydisMnemonicGetString(static_cast<ZydisMnemonic>(mnemonic));
  return s ? s : "?";
}

struct WindowEmulator::Impl {
  explicit Impl(const EmulatorLimits& l)
      : limits(l), stable(l.max_stable_pages), memory(stable, l.max_window_pages, &stats) {}

  // The instruction at m.s.rip, decoded once per address. A decode from a stable page is
  // reused as long as the window has written no stable page; any other is checked against
  // the bytes the window sees now (code may change: JIT regions, self-modifying code).
  const DecodedInstruction* Fetch(Machine& m, WindowMemory& memory, EmulatedWindow& w) {
    const uint64_t rip = m.s.rip;
    auto it = decoded.find(rip);
    if (it != decoded.end() && it->second.stable && !memory.wrote_stable_page())
      return &it->second.insn;
    uint8_t bytes[decoders::kX86MaxInstructionLength];
    size_t got = 0;
    bool stable = false, written = false;
    const MemoryStatus st = memory.Fetch(rip, bytes, sizeof bytes, &got, &stable, &written);
    if (st != MemoryStatus::kOk) {
      w.end = st == MemoryStatus::kPageLimit ? EmulationEnd::kPageLimit : EmulationEnd::kUnreadable;
      return nullptr;
    }
    if (written) {
      w.end = EmulationEnd::kSelfModifying;
      return nullptr;
    }
    if (it != decoded.end() && it->second.insn.length <= got &&
        std::memcmp(it->second.insn.bytes.data(), bytes, it->second.insn.length) == 0) {
      it->second.stable = stable;
      return &it->second.insn;
    }
    Cached c;
    if (!DecodeInstruction(bytes, got, rip, &c.insn)) {
      w.end = EmulationEnd::kDecode;
      return nullptr;
    }
    ++stats.decoded;
    c.stable = stable;
    if (it != decoded.end()) {
      it->second = c;
      return &it->second.insn;
    }
    if (decoded.size() >= limits.max_decoded) {
      decoded.clear();
      ++stats.decode_drops;
    }
    return &decoded.emplace(rip, c).first->second.insn;
  }

  // The straight-line run of instructions from an address through the next branch, decoded
  // once while every byte of it lies on stable pages. A window then looks up one block per
  // branch instead of one decode per instruction (a hash lookup per instruction was a third of
  // the emulator's time).
  struct Block {
    std::vector<DecodedInstruction> insns;
    // The block run after this one, the last time it ran with that successor: a loop or a
    // call chain then goes from block to block without a lookup. One slot for the branch taken
    // (or an indirect target), one for falling through.
    mutable const Block* taken = nullptr;
    mutable uint64_t taken_at = 0;
    mutable const Block* fall = nullptr;
    mutable uint64_t fall_at = 0;
  };
  static constexpr size_t kMaxBlockInstructions = 64;

  // The stable block at `rip`, decoding it on first use; nullptr when the first instruction is
  // not on stable pages (the caller fetches instruction by instruction then).
  const Block* StableBlock(uint64_t rip, WindowMemory& memory) {
    if (auto it = blocks.find(rip); it != blocks.end()) return &it->second;
    Block b;
    uint64_t at = rip;
    while (b.insns.size() < kMaxBlockInstructions) {
      uint8_t bytes[decoders::kX86MaxInstructionLength];
      size_t got = 0;
      bool stable = false, written = false;
      if (memory.Fetch(at, bytes, sizeof bytes, &got, &stable, &written) != MemoryStatus::kOk ||
          !stable || written)
        break;
      DecodedInstruction d;
      if (!DecodeInstruction(bytes, got, at, &d)) break;
      ++stats.decoded;
      b.insns.push_back(d);
      if (d.branch.is_branch) break;
      at += d.length;
    }
    if (b.insns.empty()) return nullptr;
    if (block_instructions + b.insns.size() > limits.max_decoded) {
      blocks.clear();  // every successor pointer goes with them
      block_instructions = 0;
      ++block_generation;
      ++stats.decode_drops;
    }
    block_instructions += b.insns.size();
    return &blocks.emplace(rip, std::move(b)).first->second;
  }

  struct Cached {
    DecodedInstruction insn;
    bool stable = false;
  };
  EmulatorLimits limits;
  EmulatorStats stats;
  StablePages stable;
  WindowMemory memory;  // one window's at a time; its page buffers are kept for the next
  std::unordered_map<uint64_t, Cached> decoded;  // instructions off stable pages
  std::unordered_map<uint64_t, Block> blocks;    // runs on stable pages (nodes: stable pointers)
  size_t block_instructions = 0;
  uint64_t block_generation = 0;  // bumped when `blocks` is cleared
};

WindowEmulator::WindowEmulator(const EmulatorLimits& limits)
    : impl_(std::make_unique<Impl>(limits)) {}
WindowEmulator::~WindowEmulator() = default;

void WindowEmulator::Reset() {
  impl_->stable.Clear();
  impl_->decoded.clear();
  impl_->blocks.clear();
  impl_->block_instructions = 0;
  ++impl_->block_generation;
}
const EmulatorStats& WindowEmulator::stats() const {
  return impl_->stats;
}
const EmulatorLimits& WindowEmulator::limits() const {
  return impl_->limits;
}

EmulatedWindow WindowEmulator::Run(const CpuState& start, Guest& guest, bool shared_memory) {
  Impl& im = *impl_;
  const uint64_t started_ns = im.limits.max_ns != 0 ? MonotonicNs() : 0;
  WindowMemory& memory = im.memory;
  memory.Begin(guest);
  Machine m;
  m.s = start;
  m.memory = &memory;
  m.guest = &guest;
  m.stats = &im.stats;
  // A partial guest (a snapshot): what it does not hold is tracked, not read (unknown_bytes.h).
  UnknownState unknowns;
  if (memory.tracking()) {
    const uint16_t unheld = guest.UnheldRegisters();
    for (unsigned r = 0; r < unknowns.gpr.size(); ++r)
      if (unheld & (1u << r)) unknowns.gpr[r] = kUnheldRegister;
    m.unknowns = &unknowns;
  }
  EmulatedWindow w;
  w.events.reserve(std::min<uint32_t>(im.limits.window_taken, 64) * 2);
  uint32_t since_event = 0;
  const Impl::Block* block = nullptr;
  size_t next = 0;  // the index in `block` of the instruction after the one running
  uint64_t executable_page = ~0ull;  // the code page last found executable
  for (;;) {
    if (w.taken >= im.limits.window_taken) {
      w.end = EmulationEnd::kComplete;
      break;
    }
    if (w.instructions >= im.limits.max_instructions) {
      w.end = EmulationEnd::kInstructionLimit;
      break;
    }
    if (im.limits.max_ns != 0 && (w.instructions & 63) == 63 &&
        MonotonicNs() - started_ns > im.limits.max_ns) {
      w.end = EmulationEnd::kTimeLimit;
      break;
    }
    // The next instruction: from the current stable block while the window has written no
    // stable page (then cached decodes must be checked against its own bytes), else fetched.
    const DecodedInstruction* d = nullptr;
    if (block != nullptr && next < block->insns.size() && !memory.wrote_stable_page()) {
      d = &block->insns[next++];
    } else {
      // At a block's end: its successor from the last time, or a lookup, remembered.
      const Impl::Block* ended = block;
      const bool was_taken = m.taken;
      const uint64_t generation = im.block_generation;
      block = nullptr;
      if (ended != nullptr && !memory.wrote_stable_page()) {
        if (was_taken && ended->taken_at == m.s.rip) block = ended->taken;
        if (!was_taken && ended->fall_at == m.s.rip) block = ended->fall;
      }
      if (block == nullptr && !memory.wrote_stable_page()) {
        block = im.StableBlock(m.s.rip, memory);
        if (block != nullptr && ended != nullptr && generation == im.block_generation) {
          (was_taken ? ended->taken : ended->fall) = block;
          (was_taken ? ended->taken_at : ended->fall_at) = m.s.rip;
        }
      }
      if (block != nullptr) {
        d = &block->insns[0];
        next = 1;
      } else {
        d = im.Fetch(m, memory, w);
        if (!d) break;
        // Code on a page the snapshot holds in part (a JIT's, on the heap): its bytes must
        // be known too. Stable blocks come from pages a partial guest holds whole.
        if (m.unknowns != nullptr) {
          if (const uint8_t u = memory.UnknownAt(m.s.rip, d->length); u != 0) {
            w.end =
                u & kUnheldMemory ? EmulationEnd::kNotInSnapshot : EmulationEnd::kRegisterUnknown;
            break;
          }
        }
      }
    }
    const uint64_t rip = m.s.rip;
    if (d->branch.is_branch && d->branch.kind == BranchKind::kFarTransfer) {
      const auto mn = static_cast<ZydisMnemonic>(d->mnemonic);
      w.end = mn == ZYDIS_MNEMONIC_SYSCALL || mn == ZYDIS_MNEMONIC_SYSENTER ? EmulationEnd::kSyscall
                                                                            : EmulationEnd::kTrap;
      w.mnemonic = d->mnemonic;
      break;
    }
    if (d->rounding) {
      w.end = EmulationEnd::kUnmodelled;
      w.mnemonic = d->mnemonic;
      break;
    }
    if (shared_memory && d->atomic) {
      w.end = EmulationEnd::kSharedMemory;
      w.mnemonic = d->mnemonic;
      break;
    }
    if ((rip & ~(Guest::kPageSize - 1)) != executable_page) {
      // Checked once per code page and window: the CPU faults on a jump into a page it may
      // not execute, where the emulator would read on.
      if (!guest.PageExecutable(rip & ~(Guest::kPageSize - 1))) {
        w.end = EmulationEnd::kNotExecutable;
        break;
      }
      executable_page = rip & ~(Guest::kPageSize - 1);
    }
    m.next_rip = rip + d->length;
    m.taken = false;
    if (m.unknowns != nullptr && CheckUnknownInputs(m, *d) == Step::kEnded) {
      w.end = m.end;
      break;
    }
    Step st;
    if (d->fast != FastOp::kNone) {
      st = ExecuteFast(m, *d);
    } else {
      st = d->is_vector ? ExecuteVector(m, *d) : ExecuteInteger(m, *d);
      if (st == Step::kNotMine) st = d->is_vector ? ExecuteInteger(m, *d) : ExecuteVector(m, *d);
    }
    if (st == Step::kNotMine) {
      w.end = EmulationEnd::kUnmodelled;
      w.mnemonic = d->mnemonic;
      break;
    }
    if (st == Step::kEnded) {
      w.end = m.end;
      if (m.end == EmulationEnd::kUnmodelled || m.end == EmulationEnd::kHiddenState)
        w.mnemonic = d->mnemonic;
      break;
    }
    if (m.unknowns != nullptr) PropagateUnknown(m, *d);
    ++w.instructions;
    ++since_event;
    if (d->branch.is_branch) {
      BranchEvent e;
      e.from = rip;
      e.kind = d->branch.kind;
      e.taken = m.taken;
      e.to = m.taken ? m.s.rip : m.next_rip;
      e.instructions = static_cast<uint16_t>(std::min<uint32_t>(since_event, 0xffff));
      since_event = 0;
      if (e.taken) ++w.taken;
      m.s.rip = e.to;
      w.events.push_back(e);
      next = block != nullptr ? block->insns.size() : 0;  // a block ends at its branch
    } else {
      m.s.rip = m.next_rip;
    }
  }
  w.end_address = m.s.rip;
  w.pages_read = memory.pages_read();
  w.state = m.s;
  ++im.stats.windows;
  im.stats.instructions += w.instructions;
  ++im.stats.ends[static_cast<size_t>(w.end)];
  return w;
}

}  // namespace pathprof::emulator
