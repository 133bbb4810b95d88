// Integer instructions whose flags the SDM leaves undefined, run on this CPU.
//
// "Undefined" flags are not random: each core leaves a fixed function of the operands and the
// flags before, but vendors differ. On AMD Zen 4, idiv clears ZF and PF and sets AF, imul keeps
// SF, ZF and PF as they were, tzcnt and bzhi clear PF, every shift sets AF; Intel cores do
// otherwise. No compiler branches on such a flag, but a window's registers must still be the
// thread's at its end (the flags reach pushfq, lahf and the verification), and the tracer runs
// on the target's own machine: so these instructions run here, on the guest's operands and
// flags, and the window takes the result and every arithmetic flag this CPU gives.
//
// Each function takes the guest's rflags in `flags` (only the arithmetic flags are used) and
// returns the rflags the instruction leaves, arithmetic flags only. Sizes are 1, 2, 4 or 8 bytes
// where the instruction has the form; the caller checks the form exists.
#pragma once

#include <cstdint>

namespace pathprof::emulator {

enum class HostShiftOp : uint8_t { kShl, kShr, kSar, kRol, kRor, kRcl, kRcr };
// value OP count (the count as the instruction gives it: the CPU masks it). Runs the cl form.
// `register_by_immediate`: the instruction rotates a register by an imm8, a form that leaves OF
// otherwise on some cores for counts over 1 (ImmediateRotatesKeepOverflow): the flags are then
// that form's.
uint64_t HostShift(HostShiftOp op, uint64_t value, uint8_t count, unsigned size,
                   bool register_by_immediate, uint64_t* flags);
// True where `rol`/`ror` of a register by an imm8 count over 1 leave OF as it was, while the cl
// form, and the imm8 form on memory, set it from the result (an Intel Xeon, family 6 model 207,
// in a KVM guest: 2026-12-04); false where every form sets it alike (AMD Zen 4 and 5, where the
// differential test passes with the cl form alone). Probed once on this CPU.
bool ImmediateRotatesKeepOverflow();
// shld/shrd: `dst` shifted by `count`, filled from `src` (sizes 2, 4, 8).
uint64_t HostDoubleShift(bool left, uint64_t dst, uint64_t src, uint8_t count, unsigned size,
                         uint64_t* flags);

// mul/imul with one operand: rdx:rax (ax for bytes) = rax * src. `lo` and `hi` are the halves
// (for bytes: al * src, hi = ah).
void HostWideMultiply(bool is_signed, uint64_t a, uint64_t b, unsigned size, uint64_t* lo,
                      uint64_t* hi, uint64_t* flags);
// imul with two or three operands: the product truncated to `size` (2, 4, 8).
uint64_t HostTruncatedMultiply(uint64_t a, uint64_t b, unsigned size, uint64_t* flags);
// div/idiv of hi:lo by `divisor` (for bytes: ax by divisor). The caller has ruled out #DE (a
// zero divisor, a quotient that does not fit): it would raise SIGFPE here.
void HostDivide(bool is_signed, uint64_t lo, uint64_t hi, uint64_t divisor, unsigned size,
                uint64_t* quotient, uint64_t* remainder, uint64_t* flags);

enum class HostBitScanOp : uint8_t { kBsf, kBsr, kTzcnt, kLzcnt, kPopcnt };
// dst = OP(src) (sizes 2, 4, 8). `dst` is the destination register's whole 64-bit value
// before, and the return value its whole value after: bsf and bsr keep it for a zero source,
// on AMD cores even the upper half of a 32-bit destination.
uint64_t HostBitScan(HostBitScanOp op, uint64_t src, uint64_t dst, unsigned size, uint64_t* flags);

// cmpxchg r, r: `accumulator` (rax) and `destination` are the registers' whole 64-bit values
// before and after, `source` the source's value. A 32-bit destination that compares unequal is
// not written on AMD cores: its upper half stays, where a 32-bit write would zero it.
void HostCompareExchange(uint64_t* accumulator, uint64_t* destination, uint64_t source,
                         unsigned size, uint64_t* flags);

enum class HostBitTestOp : uint8_t { kBt, kBts, kBtr, kBtc };
// The bit `bit` (already reduced modulo the operand's bits) of `value`: CF, and the value
// after (sizes 2, 4, 8).
uint64_t HostBitTest(HostBitTestOp op, uint64_t value, uint64_t bit, unsigned size,
                     uint64_t* flags);

enum class HostBmiOp : uint8_t { kAndn, kBzhi, kBextr, kBlsr, kBlsi, kBlsmsk };
// BMI1/BMI2 with flags (sizes 4, 8): andn a, b = ~a & b; bzhi a, b = a with bits from b[7:0]
// up cleared; bextr a, b = the field of a that b gives; blsr, blsi, blsmsk of a (b unused).
uint64_t HostBmi(HostBmiOp op, uint64_t a, uint64_t b, unsigned size, uint64_t* flags);

}  // namespace pathprof::emulator
