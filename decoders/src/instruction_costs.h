// What one x86-64 instruction costs on a current out-of-order core: its latency, the dispatch
// slots it takes and the execution unit it occupies, by instruction class. The cycle model
// (cycle_model.h) combines these into a block's cycles per iteration (loop_cycles.h).
//
// The figures stand for AMD Zen 3 / Zen 4 (family 19h: EPYC 7003/9004, Ryzen 5000/7000), the
// cores of the hosts pathprof's ptrace bursts run on (cloud VMs without a PMU). They are an
// approximation written for time-weighting branch windows, not a scheduling model: one figure
// per class where the real cores vary by operand width, addressing mode and microcode. They
// come from public documentation read by hand: AMD's Software Optimization Guide for family
// 19h (its execution-unit chapter and latency tables), Agner Fog's published instruction
// tables and microarchitecture guide (measured latencies and reciprocal throughputs for Zen 3
// and Zen 4), and the uops.info measurements; Intel's Golden Cove / Raptor Cove cores are within
// a cycle on most classes (loads 5 instead of 4 cycles, no 512-bit double pumping).
#pragma once

#include <Zydis/Zydis.h>

#include <cstdint>

namespace pathprof::decoders {

// The execution resources the model counts. A class occupies one of them; loads and stores
// additionally occupy kLoad / kStore (from their memory operands, not the class).
enum class Unit : uint8_t {
  kNone,           // handled at rename (zero idioms, eliminated moves, nops) or by the load alone
  kAlu,            // integer ALU pipes
  kBranch,         // branch units
  kLoad,           // load pipes (address generation and the L1 data cache port)
  kStore,          // stores committing to the L1 data cache
  kMultiplier,     // integer multiplier (sits on an ALU pipe)
  kDivider,        // integer divider, not pipelined
  kAtomic,         // locked read-modify-writes and fences: the memory-ordering machinery
  kVectorAlu,      // vector integer add/logic/compare (every FP/vector pipe)
  kVectorShuffle,  // shuffles, shifts, inserts, extracts
  kFloatAdd,       // FP add/compare/convert pipes
  kFloatMul,       // FP multiply/FMA pipes (vector integer multiply too)
  kFloatDivider,   // FP divide and square root, not pipelined
  kCount,
};

// How many operations of `unit` start per cycle.
double UnitsPerCycle(Unit unit);
const char* UnitName(Unit unit);

// Dispatch (rename) width: macro-ops per cycle into the out-of-order core.
inline constexpr double kDispatchWidth = 6;
// Integer ALU-type work (kAlu plus the multiplier, which sits on an ALU pipe) per cycle.
inline constexpr double kIntegerPipes = 4;
// Loads and stores together per cycle (address generation units).
inline constexpr double kMemoryPipes = 3;
// Every FP/vector operation, whatever its unit, per cycle (the FP/vector pipes).
inline constexpr double kVectorPipes = 4;
// Taken branches per cycle: the front end redirects fetch at most once a cycle.
inline constexpr double kTakenBranchesPerCycle = 1;

// Load-to-use latency of an L1 hit: integer registers (one more with an index register), and
// vector/FP registers.
inline constexpr uint8_t kLoadLatency = 4;
inline constexpr uint8_t kIndexedLoadExtra = 1;
inline constexpr uint8_t kVectorLoadLatency = 7;
// A load that reads back a store of the same address expression: Zen 2 and later rename it to
// the store's data register ("memory renaming"), so the value arrives with no latency of its
// own. A counter in memory (add [rbx], 1 in a loop) runs at one increment per cycle on the
// reference host, as a register would; older cores forward through the store buffer in 4-7.
inline constexpr uint8_t kForwardingLatency = 0;

enum class InstructionClass : uint8_t {
  kUnknown,            // no fixed cost: rep string ops, system calls, cpuid, rdtsc, pause, ...
  kNop,                // nop, endbr64, hints
  kZeroIdiom,          // xor r, r / pxor x, x / sub r, r: no input, no unit
  kEliminatedMove,     // mov r64, r64 / movaps x, x: renamed, no unit
  kOnesIdiom,          // pcmpeqd x, x: all ones; executes, but waits for no input
  kMove,               // mov-type: 1 cycle between registers; the load or store alone with memory
  kMoveImmediate64,    // mov r64, imm64: two per cycle (timed on the reference host)
  kIntAlu,             // add, sub, and, cmp, test, shifts, setcc, cmov, lea, movzx, popcnt, ...
  kIntAluSlow,         // two-cycle ALU work: 3-component lea, shld/shrd, xchg, xadd
  kIntMultiply,        // imul r, r/m(, imm): low half
  kIntMultiplyWide,    // mul/imul r/m (rdx:rax), mulx
  kIntDivide,          // div/idiv up to 32 bits
  kIntDivide64,        // div/idiv 64 bits
  kBranch,             // jcc, jmp (the result is predicted: no latency to anything)
  kCallReturn,         // call, ret: a branch plus a stack store or load
  kPushPop,            // push, pop: a store or load; rsp updates happen in the front end
  kAtomic,             // lock-prefixed read-modify-write, xchg with memory, cmpxchg
  kFence,              // mfence, lfence, sfence
  kPrefetch,           // prefetch*: a load slot, no result
  kVectorInt,          // padd, pcmp, pand, por, pxor, pmin, logic on ps/pd, blends
  kVectorShuffle,      // pshufb, punpck, pack, palignr, shufps, vector shifts, inserts/extracts
  kVectorCrossLane,    // vperm*, vinsert/vextract 128, broadcasts from a register
  kVectorIntMultiply,  // pmull, pmuludq, pmadd
  kFloatAdd,           // add/sub/min/max/cmp ps/pd/ss/sd, rounding, (u)comis
  kFloatMultiply,      // mul ps/pd/ss/sd, rcp, rsqrt
  kVectorCrypto,       // aes, pclmulqdq, sha, gf2p8
  kFloatFma,           // vfmadd/vfmsub/vfnmadd
  kFloatConvert,       // cvt between FP formats and vector integers
  kGprVectorMove,      // movd/movq/pextr/pinsr/pmovmsk/cvtsi2sd/cvttsd2si: across register files
  kFloatDivide,        // div ps/ss
  kFloatDivide64,      // div pd/sd
  kFloatSqrt,          // sqrt ps/ss
  kFloatSqrt64,        // sqrt pd/sd
  kX87,                // x87 arithmetic
  kX87Slow,            // x87 divide and square root
  kCount,
};

struct ClassCost {
  InstructionClass cls;
  const char* name;
  uint8_t latency;   // cycles from its register and flag inputs to its results
  uint8_t dispatch;  // macro-ops: dispatch slots
  Unit unit;
  float occupancy;  // cycles it holds its unit (1 when pipelined)
};

// The table row of `cls`.
const ClassCost& CostOf(InstructionClass cls);

// The class of a decoded instruction from its mnemonic and operands (zero idioms and
// eliminated moves depend on the operands; div's class on its width).
InstructionClass ClassOf(const ZydisDecodedInstruction& insn, const ZydisDecodedOperand* operands);

}  // namespace pathprof::decoders
