// One instruction decoded once (Zydis) into what the interpreter needs, compact enough to cache
// tens of thousands (a ZydisDecodedInstruction with its operands is ~1 KiB; this is ~140 bytes).
#pragma once

#include <array>
#include <cstdint>

#include "data_flow.h"
#include "pathprof/decoders/x86_branch.h"

namespace pathprof::emulator {

// A register reference resolved at decode time.
enum class RegClass : uint8_t { kNone, kGpr, kVector, kMask, kRip, kOther };
struct RegRef {
  RegClass cls = RegClass::kNone;
  uint8_t index = 0;  // gpr 0-15, vector 0-31, mask 0-7
  uint8_t size = 0;   // bytes: 1, 2, 4, 8 (gpr); 16, 32, 64 (vector); 8 (mask)
  uint8_t shift = 0;  // 8 for ah/ch/dh/bh
};

enum class OperandType : uint8_t { kNone, kRegister, kMemory, kImmediate, kPointer };

struct MemRef {
  RegRef base;   // kNone, kGpr or kRip
  RegRef index;  // kNone, kGpr or kVector (gathers: unmodelled)
  uint8_t scale = 0;
  uint8_t segment = 0;  // 0: none, 1: fs, 2: gs
  uint8_t address_size = 8;
  int64_t displacement = 0;
};

struct Operand {
  OperandType type = OperandType::kNone;
  uint8_t size = 0;  // bytes (memory and immediate: the operand's size; 0 when unsized)
  RegRef reg;
  MemRef mem;
  uint64_t imm = 0;          // sign-extended to 64 bits where the encoding sign-extends
  uint8_t element_size = 0;  // bytes per element of a vector operand (broadcasts)
  bool broadcast = false;    // EVEX {1toN}
};

// The integer instructions most code retires, with plain operands (general registers, memory,
// immediates), recognised at decode time so that the interpreter runs them without its general
// dispatch (fast_ops.h). kNone: the general path.
enum class FastOp : uint8_t {
  kNone,
  kNop,
  kMov,
  kMovzx,
  kMovsx,
  kLea,
  kAdd,
  kSub,
  kCmp,
  kAnd,
  kOr,
  kXor,
  kTest,
  kInc,
  kDec,
  kPush,
  kPop,
  kJcc,
  kJmp,
  kCall,
  kRet,
};

struct DecodedInstruction {
  uint16_t mnemonic = 0;  // ZydisMnemonic
  FastOp fast = FastOp::kNone;
  uint8_t condition = 0;  // kJcc: the condition code (0-15)
  uint8_t length = 0;
  uint8_t operand_count = 0;  // visible operands, an EVEX writemask not among them
  uint8_t operand_size = 0;   // bytes (Zydis operand_width / 8)
  uint8_t vector_length = 0;  // bytes: 16, 32, 64; 0 for non-vector
  uint8_t mask_register = 0;  // EVEX {k}: 0 when unmasked
  bool zeroing = false;       // EVEX {z}
  bool mask_control = false;  // the opmask selects sources (vpblendm*), not a writemask
  bool vex_or_evex = false;   // writes to a vector register zero the bits above it
  bool rep = false;           // REP / REPE
  bool repne = false;         // REPNE
  bool is_vector = false;     // touches vector or mask registers
  bool atomic = false;        // a lock prefix, or xchg with memory (locked implicitly)
  uint8_t rounding = 0;       // EVEX embedded rounding / SAE present: unmodelled
  std::array<Operand, 4> op{};
  decoders::X86Instruction branch;  // the branch classification the stepper uses
  DataFlow flow;                    // what it reads and writes, for snapshot windows
  std::array<uint8_t, 15> bytes{};  // to check a cached decode against the code it came from
};

// Decodes `bytes` (at least 15 readable, or up to the end of readable code) at `address`.
// False when they are not a valid instruction.
bool DecodeInstruction(const uint8_t* bytes, size_t size, uint64_t address,
                       DecodedInstruction* out);

}  // namespace pathprof::emulator
