// What one instruction reads and writes, summarised once at decode time from Zydis's full
// operand list (explicit and hidden operands, and the flags it tests and sets), for tracking
// unknown bytes (unknown_bytes.h): a window emulated from a snapshot marks what it computes from
// bytes the snapshot does not hold, and ends only where a branch, a jump target or an address
// depends on them.
//
// The rule is coarse and safe: every output of an instruction is unknown when any of its inputs
// is (a union over inputs, not a model of each instruction). Where that would lose too much on
// code every window runs, the summary is finer: the stack pointer that push/pop/call/ret move and
// the rsi/rdi that string instructions step are addresses, kept apart from the data they move;
// flags an instruction sets to a constant become known; zeroing idioms (xor eax, eax) have no
// inputs.
#pragma once

#include <Zydis/Zydis.h>

#include <cstdint>

namespace pathprof::emulator {

struct DataFlow {
  uint16_t gpr_read = 0;   // general registers whose values feed the outputs (bit per Gpr index)
  uint16_t gpr_write = 0;  // written whole (64- and 32-bit writes)
  uint16_t gpr_merge = 0;  // written in part (8- and 16-bit, conditional): the rest stays
  uint16_t address = 0;    // registers that form an address the instruction accesses
  // Vector registers, a bit per index, in two parts: bits 0-127 (xmm) and 128-511.
  uint32_t vector_read = 0;        // xmm part read
  uint32_t vector_read_high = 0;   // the part above read too (a ymm or zmm operand)
  uint32_t vector_write = 0;       // xmm part written from the inputs alone
  uint32_t vector_write_high = 0;  // the part above too (a ymm or zmm destination)
  uint32_t vector_zero_high = 0;   // the part above zeroed (VEX/EVEX xmm destination)
  uint32_t vector_merge = 0;       // written in part: the old value stays where not written
  uint8_t mask_read = 0;           // k registers
  uint8_t mask_write = 0;
  uint16_t flags_read = 0;      // RFLAGS bits (CF, PF, AF, ZF, SF, DF, OF) tested
  uint16_t flags_computed = 0;  // RFLAGS bits written with a value computed from the inputs
  uint16_t flags_constant = 0;  // RFLAGS bits set to 0 or 1
  // RFLAGS bits the SDM leaves undefined: the emulator runs those instructions on this CPU
  // (host_integer.h), which may keep the old flag there for some operands (found by
  // emulator_differential_test): the old flag stays an input of the new.
  uint16_t flags_undefined = 0;
  // The flags are written only on some values (a shift or rotate by 0 leaves them): the old
  // flags stay an input of the new.
  bool flags_conditional = false;
  bool control_read = false;  // mxcsr or the x87 control and status words
  bool control_write = false;
  bool zero_idiom = false;       // the result does not depend on the inputs (xor eax, eax)
  bool faults_on_value = false;  // div, idiv: an unknown operand may make it fault
  bool leave = false;            // rsp <- rbp, rbp <- [rbp]: two outputs, two inputs
  bool counted_compare = false;  // repe/repne cmps or scas: the data decides rcx, rsi, rdi
};

// The summary of `insn`, whose operands (all of them, hidden included) are `ops`.
DataFlow SummariseDataFlow(const ZydisDecodedInstruction& insn, const ZydisDecodedOperand* ops);

}  // namespace pathprof::emulator
