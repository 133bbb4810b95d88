// Floating-point operations run on the host CPU, one element at a time, so that rounding, NaN
// payloads, denormals (DAZ/FTZ) and the exception flags are exactly those the target's CPU
// produces: the tracer runs on the machine the target runs on, and a target only retires an
// instruction its CPU has. Values travel as bit patterns (uint32_t, uint64_t): nothing here
// lets the compiler touch them as float or double.
#pragma once

#include <cstdint>

namespace pathprof::emulator {

inline constexpr uint32_t kMxcsrFlags = 0x3f;           // IE DE ZE OE UE PE
inline constexpr uint32_t kMxcsrMasks = 0x1f80;         // IM DM ZM OM UM PM
inline constexpr uint32_t kMxcsrUnderflowMask = 0x800;  // UM
inline constexpr uint32_t kMxcsrDefined = 0xffff;       // bits ldmxcsr accepts on every CPU

// Host operations run between construction and Raised(): the guest's rounding control, DAZ
// and FTZ are in force, every exception is masked (an unmasked one would trap in the
// emulator) and the flags start clear. The destructor puts the host's MXCSR back.
class GuestFloatingPointScope {
 public:
  explicit GuestFloatingPointScope(uint32_t guest_mxcsr);
  ~GuestFloatingPointScope();
  GuestFloatingPointScope(const GuestFloatingPointScope&) = delete;
  GuestFloatingPointScope& operator=(const GuestFloatingPointScope&) = delete;
  // The exception flags raised since construction.
  uint32_t Raised() const;

 private:
  uint32_t host_mxcsr_ = 0;
};

enum class FpOp : uint8_t { kAdd, kSub, kMul, kDiv, kMin, kMax, kSqrt, kRcp, kRsqrt };

// addss/addsd... on one element: a OP b (sqrt, rcp, rsqrt: of b). rcp and rsqrt are single
// precision only (their approximation is the host's own, as it is the target's).
uint32_t HostArithmetic(FpOp op, uint32_t a, uint32_t b);
uint64_t HostArithmetic(FpOp op, uint64_t a, uint64_t b);

// cmpss/cmpsd with predicate 0-31 (8-31 exist only in VEX/EVEX encodings): true when it holds.
bool HostCompare(unsigned predicate, uint32_t a, uint32_t b);
bool HostCompare(unsigned predicate, uint64_t a, uint64_t b);

// comiss/comisd (signaling) and ucomiss/ucomisd (quiet): the ZF, PF, CF they set.
uint64_t HostOrderedCompare(bool signaling, uint32_t a, uint32_t b);
uint64_t HostOrderedCompare(bool signaling, uint64_t a, uint64_t b);

// roundss/roundsd with imm8 0-15.
uint32_t HostRound(unsigned imm, uint32_t a);
uint64_t HostRound(unsigned imm, uint64_t a);

enum class FpConversion : uint8_t {
  kSingleToDouble,
  kDoubleToSingle,
  kInt32ToSingle,
  kInt64ToSingle,
  kInt32ToDouble,
  kInt64ToDouble,
  kSingleToInt32,
  kSingleToInt64,
  kSingleToInt32Truncated,
  kSingleToInt64Truncated,
  kDoubleToInt32,
  kDoubleToInt64,
  kDoubleToInt32Truncated,
  kDoubleToInt64Truncated,
};
// cvtss2sd, cvtsi2sd, cvttsd2si...: the bits of the result (an int32 in the low 32 bits).
uint64_t HostConvert(FpConversion conversion, uint64_t bits);

// vfmadd/vfmsub/vfnmadd/vfnmsub in their 132, 213 and 231 forms on one element: `dst` is the
// destination's old value, `b` and `c` the second and third operands. Which NaN propagates
// depends on the operand positions, so the host runs the same form.
enum class FmaKind : uint8_t {
  kMultiplyAdd,
  kMultiplySubtract,
  kNegatedMultiplyAdd,
  kNegatedMultiplySubtract
};
enum class FmaOrder : uint8_t { k132, k213, k231 };
uint32_t HostFusedMultiplyAdd(FmaKind kind, FmaOrder order, uint32_t dst, uint32_t b, uint32_t c);
uint64_t HostFusedMultiplyAdd(FmaKind kind, FmaOrder order, uint64_t dst, uint64_t b, uint64_t c);

}  // namespace pathprof::emulator
