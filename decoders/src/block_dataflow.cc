#include "block_dataflow.h"

#include <algorithm>

namespace pathprof::decoders {
namespace {

using C = InstructionClass;

// The registers whose values flow between instructions. Flags are handled as groups (see
// FlagSlots); the instruction pointer, segment, control and x87 status registers are not
// dependencies worth timing (every x87 operation writes the status word, which would chain
// them all).
bool IsDataRegister(ZydisRegister r) {
  switch (ZydisRegisterGetClass(r)) {
    case ZYDIS_REGCLASS_GPR8:
    case ZYDIS_REGCLASS_GPR16:
    case ZYDIS_REGCLASS_GPR32:
    case ZYDIS_REGCLASS_GPR64:
    case ZYDIS_REGCLASS_X87:
    case ZYDIS_REGCLASS_MMX:
    case ZYDIS_REGCLASS_XMM:
    case ZYDIS_REGCLASS_YMM:
    case ZYDIS_REGCLASS_ZMM:
    case ZYDIS_REGCLASS_MASK:
      return true;
    default:
      return false;
  }
}

bool IsVectorOrX87(ZydisRegister r) {
  switch (ZydisRegisterGetClass(r)) {
    case ZYDIS_REGCLASS_X87:
    case ZYDIS_REGCLASS_MMX:
    case ZYDIS_REGCLASS_XMM:
    case ZYDIS_REGCLASS_YMM:
    case ZYDIS_REGCLASS_ZMM:
      return true;
    default:
      return false;
  }
}

bool IsVectorUnit(Unit u) {
  return u == Unit::kVectorAlu || u == Unit::kVectorShuffle || u == Unit::kFloatAdd ||
         u == Unit::kFloatMul || u == Unit::kFloatDivider;
}

// Writing al/ax keeps the rest of rax: the result merges with the old value, so it waits for
// it. (A 32-bit write zeroes the upper half and waits for nothing.)
bool IsPartialWrite(ZydisRegister r) {
  const ZydisRegisterClass c = ZydisRegisterGetClass(r);
  return c == ZYDIS_REGCLASS_GPR8 || c == ZYDIS_REGCLASS_GPR16;
}

uint16_t SlotOf(ZydisRegister r) {
  return static_cast<uint16_t>(ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, r));
}

bool IsStackOperation(const ZydisDecodedInstruction& insn) {
  switch (insn.meta.category) {
    case ZYDIS_CATEGORY_PUSH:
    case ZYDIS_CATEGORY_POP:
    case ZYDIS_CATEGORY_CALL:
    case ZYDIS_CATEGORY_RET:
      return true;
    default:
      return insn.mnemonic == ZYDIS_MNEMONIC_LEAVE;
  }
}

constexpr ZydisAccessedFlagsMask kCarry = ZYDIS_CPUFLAG_CF;
constexpr ZydisAccessedFlagsMask kArithmetic =
    ZYDIS_CPUFLAG_OF | ZYDIS_CPUFLAG_SF | ZYDIS_CPUFLAG_ZF | ZYDIS_CPUFLAG_AF | ZYDIS_CPUFLAG_PF;

template <int N>
void AddFlagSlots(ZydisAccessedFlagsMask mask, Slots<N>* slots) {
  if (mask & kCarry) slots->Add(kCarryFlagSlot);
  if (mask & kArithmetic) slots->Add(kArithmeticFlagsSlot);
}

MemoryAddress AddressOf(const ZydisDecodedInstruction& insn, const ZydisDecodedOperand& op,
                        uint64_t address) {
  MemoryAddress a;
  a.segment = op.mem.segment;
  a.base = op.mem.base;
  a.index = op.mem.index;
  a.scale = op.mem.scale;
  a.displacement = op.mem.disp.has_displacement ? op.mem.disp.value : 0;
  a.bits = op.size;
  if (a.base == ZYDIS_REGISTER_RIP || a.base == ZYDIS_REGISTER_EIP) {
    // Relative to the next instruction: two instructions naming one global differ in their
    // displacement, not in their target.
    a.base = ZYDIS_REGISTER_NONE;
    a.displacement += static_cast<int64_t>(address + insn.length);
  }
  // fs and gs have bases of their own (thread-local storage); the others are flat.
  if (a.segment != ZYDIS_REGISTER_FS && a.segment != ZYDIS_REGISTER_GS)
    a.segment = ZYDIS_REGISTER_NONE;
  return a;
}

}  // namespace

bool BlockDataflow::Add(const ZydisDecodedInstruction& insn, const ZydisDecodedOperand* operands,
                        uint64_t address) {
  DataflowOp op;
  op.cls = ClassOf(insn, operands);
  if (op.cls == C::kUnknown) return false;
  const ClassCost& cost = CostOf(op.cls);
  op.latency = cost.latency;
  op.dispatch = cost.dispatch;
  op.unit = cost.unit;
  op.occupancy = cost.occupancy;
  op.is_branch = op.cls == C::kBranch || op.cls == C::kCallReturn;
  const bool stack_op = IsStackOperation(insn);
  // Idioms whose result is known without their inputs (xor r, r): they wait for nothing.
  const bool reads_nothing = op.cls == C::kZeroIdiom || op.cls == C::kOnesIdiom;
  bool vector = false, wide = false, indexed_load = false;
  std::optional<MemoryAddress> load_address, store_address;

  for (int i = 0; i < insn.operand_count; ++i) {
    const ZydisDecodedOperand& o = operands[i];
    const bool reads = o.actions & ZYDIS_OPERAND_ACTION_MASK_READ;
    const bool writes = o.actions & ZYDIS_OPERAND_ACTION_MASK_WRITE;
    if (o.type == ZYDIS_OPERAND_TYPE_REGISTER) {
      const ZydisRegister r = o.reg.value;
      if (!IsDataRegister(r)) continue;
      vector |= IsVectorOrX87(r);
      wide |= ZydisRegisterGetClass(r) == ZYDIS_REGCLASS_ZMM;
      const uint16_t slot = SlotOf(r);
      if (stack_op && slot == ZYDIS_REGISTER_RSP) {
        written_.set(slot);  // the address changes, even without a dependency chain
        continue;
      }
      if (reads && !reads_nothing) op.inputs.Add(slot);
      if (writes) {
        op.outputs.Add(slot);
        written_.set(slot);
        if (IsPartialWrite(r) && !reads_nothing) op.inputs.Add(slot);
      }
    } else if (o.type == ZYDIS_OPERAND_TYPE_MEMORY) {
      if (o.mem.type == ZYDIS_MEMOP_TYPE_AGEN) {  // lea: the address is the result
        for (ZydisRegister r : {o.mem.base, o.mem.index})
          if (r != ZYDIS_REGISTER_NONE && IsDataRegister(r)) op.inputs.Add(SlotOf(r));
        continue;
      }
      if (op.cls == C::kNop) continue;  // nop dword [rax]: never touches memory
      wide |= o.size == 512;
      if (reads) {
        ++op.loads;
        for (ZydisRegister r : {o.mem.base, o.mem.index}) {
          if (r == ZYDIS_REGISTER_NONE || !IsDataRegister(r)) continue;
          if (stack_op && SlotOf(r) == ZYDIS_REGISTER_RSP) continue;
          op.address_inputs.Add(SlotOf(r));
        }
        if (!load_address) load_address = AddressOf(insn, o, address);
        if (o.mem.index != ZYDIS_REGISTER_NONE) indexed_load = true;
      }
      if (writes) {
        ++op.stores;
        if (!store_address) store_address = AddressOf(insn, o, address);
      }
    }
  }
  if (insn.cpu_flags && !reads_nothing) AddFlagSlots(insn.cpu_flags->tested, &op.inputs);
  if (insn.cpu_flags)
    AddFlagSlots(insn.cpu_flags->modified | insn.cpu_flags->set_0 | insn.cpu_flags->set_1 |
                     insn.cpu_flags->undefined,
                 &op.outputs);

  if (op.loads > 0)
    op.load_latency =
        vector ? kVectorLoadLatency : kLoadLatency + (indexed_load ? kIndexedLoadExtra : 0);
  // A move to or from memory is the load or the store alone.
  if (op.cls == C::kMove && (op.loads > 0 || op.stores > 0)) {
    op.latency = 0;
    op.unit = Unit::kNone;
    op.occupancy = 0;
  }
  // Zen 4 runs 512-bit operations as two halves on its 256-bit pipes.
  if (wide && IsVectorUnit(op.unit)) op.occupancy *= 2;
  // cmp or test followed by a conditional branch travel as one macro-op (Zen 3/4 and Intel
  // cores fuse them), executed by the branch unit. examples/hotloop's hot() body, 8 instructions
  // with two such pairs, runs at 1 cycle an iteration on the reference host: 6 macro-ops.
  if (insn.meta.category == ZYDIS_CATEGORY_COND_BR && fusible_compare_) {
    DataflowOp& compare = ops_.back();
    compare.unit = Unit::kNone;
    compare.occupancy = 0;
    op.dispatch = 0;
  }
  fusible_compare_ =
      (insn.mnemonic == ZYDIS_MNEMONIC_CMP || insn.mnemonic == ZYDIS_MNEMONIC_TEST) &&
      op.loads == 0;
  ops_.push_back(op);
  load_address_.push_back(load_address);
  store_address_.push_back(store_address);
  return true;
}

void BlockDataflow::LinkStoresToLoads() {
  const auto invariant = [&](const MemoryAddress& a) {
    for (ZydisRegister r : {a.base, a.index})
      if (r != ZYDIS_REGISTER_NONE && written_.test(SlotOf(r))) return false;
    return true;
  };
  std::vector<MemoryAddress> stored;  // memory slot i is kFirstMemorySlot + i
  for (size_t i = 0; i < ops_.size(); ++i) {
    const std::optional<MemoryAddress>& a = store_address_[i];
    if (!a || !invariant(*a)) continue;
    size_t slot = 0;
    while (slot < stored.size() && !stored[slot].SameStart(*a)) ++slot;
    if (slot == stored.size()) {
      if (stored.size() == kMaxMemorySlots) continue;
      stored.push_back(*a);
    }
    stored[slot].bits = std::max(stored[slot].bits, a->bits);
    ops_[i].store_slot = static_cast<int16_t>(kFirstMemorySlot + slot);
  }
  for (size_t i = 0; i < ops_.size(); ++i) {
    const std::optional<MemoryAddress>& a = load_address_[i];
    if (!a || !invariant(*a)) continue;
    for (size_t slot = 0; slot < stored.size(); ++slot) {
      if (!stored[slot].SameStart(*a) || a->bits > stored[slot].bits) continue;
      ops_[i].load_slot = static_cast<int16_t>(kFirstMemorySlot + slot);
      break;
    }
  }
}

}  // namespace pathprof::decoders
