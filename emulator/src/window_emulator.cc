#include "pathprof/emulator/window_emulator.h"

#include <Zydis/Zydis.h>

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "decoded_instruction.h"
#include "machine.h"
#include "window_memory.h"

namespace pathprof::emulator {

std::string_view EmulationEndName(EmulationEnd end) {
  switch (end) {
    case EmulationEnd::kComplete: return "complete";
    case EmulationEnd::kSyscall: return "syscall";
    case EmulationEnd::kTrap: return "trap";
    case EmulationEnd::kUnmodelled: return "unmodelled";
    case EmulationEnd::kHiddenState: return "hidden_state";
    case EmulationEnd::kFault: return "fault";
    case EmulationEnd::kUnreadable: return "unreadable";
    case EmulationEnd::kSelfModifying: return "self_modifying";
    case EmulationEnd::kInstructionLimit: return "instruction_limit";
    case EmulationEnd::kPageLimit: return "page_limit";
    case EmulationEnd::kDecode: return "decode";
    case EmulationEnd::kVectorState: return "vector_state";
  }
  return "?";
}

std::string_view MnemonicName(uint16_t mnemonic) {
  if (mnemonic > ZYDIS_MNEMONIC_MAX_VALUE) return "?";
  const char* s = ZydisMnemonicGetString(static_cast<ZydisMnemonic>(mnemonic));
  return s ? s : "?";
}

struct WindowEmulator::Impl {
  explicit Impl(const EmulatorLimits& l) : limits(l), stable(l.max_stable_pages) {}

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
      w.end = st == MemoryStatus::kPageLimit ? EmulationEnd::kPageLimit
                                             : EmulationEnd::kUnreadable;
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

  struct Cached {
    DecodedInstruction insn;
    bool stable = false;
  };
  EmulatorLimits limits;
  EmulatorStats stats;
  StablePages stable;
  std::unordered_map<uint64_t, Cached> decoded;
};

WindowEmulator::WindowEmulator(const EmulatorLimits& limits)
    : impl_(std::make_unique<Impl>(limits)) {}
WindowEmulator::~WindowEmulator() = default;

void WindowEmulator::Reset() {
  impl_->stable.Clear();
  impl_->decoded.clear();
}
const EmulatorStats& WindowEmulator::stats() const { return impl_->stats; }
const EmulatorLimits& WindowEmulator::limits() const { return impl_->limits; }

EmulatedWindow WindowEmulator::Run(const CpuState& start, Guest& guest) {
  Impl& im = *impl_;
  WindowMemory memory(guest, im.stable, im.limits.max_window_pages, &im.stats);
  Machine m;
  m.s = start;
  m.memory = &memory;
  m.guest = &guest;
  m.stats = &im.stats;
  EmulatedWindow w;
  w.events.reserve(std::min<uint32_t>(im.limits.window_taken, 64) * 2);
  uint32_t since_event = 0;
  for (;;) {
    if (w.taken >= im.limits.window_taken) {
      w.end = EmulationEnd::kComplete;
      break;
    }
    if (w.instructions >= im.limits.max_instructions) {
      w.end = EmulationEnd::kInstructionLimit;
      break;
    }
    const DecodedInstruction* d = im.Fetch(m, memory, w);
    if (!d) break;
    const uint64_t rip = m.s.rip;
    if (d->branch.is_branch && d->branch.kind == BranchKind::kFarTransfer) {
      const auto mn = static_cast<ZydisMnemonic>(d->mnemonic);
      w.end = mn == ZYDIS_MNEMONIC_SYSCALL || mn == ZYDIS_MNEMONIC_SYSENTER
                  ? EmulationEnd::kSyscall
                  : EmulationEnd::kTrap;
      w.mnemonic = d->mnemonic;
      break;
    }
    if (d->rounding) {
      w.end = EmulationEnd::kUnmodelled;
      w.mnemonic = d->mnemonic;
      break;
    }
    m.next_rip = rip + d->length;
    m.taken = false;
    Step st = d->is_vector ? ExecuteVector(m, *d) : ExecuteInteger(m, *d);
    if (st == Step::kNotMine) st = d->is_vector ? ExecuteInteger(m, *d) : ExecuteVector(m, *d);
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
