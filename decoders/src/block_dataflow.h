// A block of x86-64 instructions as the cycle model sees it: for each instruction, the
// registers, flags and memory it reads and writes, its latency and the units it occupies
// (instruction_costs.h). loop_cycles.h times the block run back to back from this.
//
// Why not Zydis's operands directly: the timing needs them resolved once per block, not once
// per simulated iteration: registers folded to their full register (al, ax, eax -> rax; xmm0,
// ymm0 -> zmm0), flags folded to the two groups the cores rename separately (CF, and OF SF ZF
// AF PF), the stack pointer updates of push/pop/call/ret dropped (the cores' stack engine does
// them in the front end, without a dependency chain), and loads linked to the stores they read.
#pragma once

#include <Zydis/Zydis.h>

#include <array>
#include <bitset>
#include <cstdint>
#include <optional>
#include <vector>

#include "instruction_costs.h"

namespace pathprof::decoders {

// What an operation waits for and produces, as slots: registers (by their ZydisRegister value),
// then the two flag groups, then the memory locations the block stores to and loads back.
inline constexpr uint16_t kCarryFlagSlot = ZYDIS_REGISTER_MAX_VALUE + 1;
inline constexpr uint16_t kArithmeticFlagsSlot = ZYDIS_REGISTER_MAX_VALUE + 2;
inline constexpr uint16_t kFirstMemorySlot = ZYDIS_REGISTER_MAX_VALUE + 3;
inline constexpr int kMaxMemorySlots = 16;
inline constexpr int kSlotCount = kFirstMemorySlot + kMaxMemorySlots;

// A handful of slots, without allocating (a block is thousands of these at most).
template <int N>
struct Slots {
  std::array<uint16_t, N> slot{};
  uint8_t count = 0;
  void Add(uint16_t s) {
    for (int i = 0; i < count; ++i)
      if (slot[i] == s) return;
    if (count < N) slot[count++] = s;
  }
  const uint16_t* begin() const { return slot.data(); }
  const uint16_t* end() const { return slot.data() + count; }
};

struct DataflowOp {
  InstructionClass cls = InstructionClass::kUnknown;
  uint8_t latency = 0;   // from inputs (and the loaded value) to outputs
  uint8_t dispatch = 1;  // macro-ops
  Unit unit = Unit::kNone;
  float occupancy = 0;  // cycles on `unit`
  uint8_t loads = 0, stores = 0;
  uint8_t load_latency = 0;  // of an L1 hit, when it loads
  bool is_branch = false;
  // The store this op's load reads back, as a memory slot (-1: none known): its value then
  // comes from that store's data, kForwardingLatency later.
  int16_t load_slot = -1;
  int16_t store_slot = -1;  // the memory slot it stores to (-1: none tracked)
  Slots<14> inputs;         // registers and flags the operation itself reads
  Slots<4> address_inputs;  // registers its load's address needs
  Slots<14> outputs;        // registers and flags it writes
};

// A memory operand's address as an expression: equal expressions over registers the block
// never writes name the same location on every iteration (rip-relative ones are made absolute).
struct MemoryAddress {
  ZydisRegister segment = ZYDIS_REGISTER_NONE, base = ZYDIS_REGISTER_NONE,
                index = ZYDIS_REGISTER_NONE;
  uint8_t scale = 0;
  int64_t displacement = 0;
  uint16_t bits = 0;  // access size
  bool SameStart(const MemoryAddress& o) const {
    return segment == o.segment && base == o.base && index == o.index && scale == o.scale &&
           displacement == o.displacement;
  }
};

class BlockDataflow {
 public:
  // Appends the instruction at `address`. False when the table has no cost for it (its time
  // depends on what the model cannot see: a repeat count, a system call, microcode); the block
  // then has no estimate.
  bool Add(const ZydisDecodedInstruction& insn, const ZydisDecodedOperand* operands,
           uint64_t address);
  // Links each load to the store it reads back when both name the same address expression
  // over registers the block never writes (a counter in memory, a spilled variable): the value
  // then travels through the store, on the dependency chain. Call after the last Add.
  void LinkStoresToLoads();

  const std::vector<DataflowOp>& ops() const { return ops_; }

 private:
  std::vector<DataflowOp> ops_;
  std::vector<std::optional<MemoryAddress>> load_address_, store_address_;  // per op
  std::bitset<kCarryFlagSlot> written_;  // registers some op writes, the stack pointer included
  bool fusible_compare_ = false;         // the last op is a cmp/test a jcc would fuse with
};

}  // namespace pathprof::decoders
