#include "host_integer.h"

#include "machine.h"

namespace pathprof::emulator {
namespace {

// Runs `insn` between loading the guest's arithmetic flags and reading them back.
// They go in without popfq, which costs ~50 ns here (microcoded) against ~3 ns for this: OF by
// an 8-bit add that overflows exactly when the guest's OF is set, then SF, ZF, AF, PF and CF
// by sahf from ah. rax is the scratch register: clobbered (PATHPROF_GUEST_FLAGS), or saved and
// restored where an operand lives in it (PATHPROF_GUEST_FLAGS_RAX, with a `save` output).
// pushfq reads them back below the red zone, where a leaf function may keep values (the stack
// pointer moves by lea, which leaves the flags alone).
#define PATHPROF_LOAD_GUEST_FLAGS                                              \
  "mov %[f], %%rax\n\tshr $4, %%eax\n\tand $0x80, %%eax\n\tadd %%al, %%al\n\t" \
  "mov %[f], %%rax\n\tmov %%al, %%ah\n\tsahf\n\t"
#define PATHPROF_READ_FLAGS \
  "\n\tlea -128(%%rsp), %%rsp\n\tpushfq\n\tpop %[f]\n\tlea 128(%%rsp), %%rsp"
#define PATHPROF_GUEST_FLAGS(insn) PATHPROF_LOAD_GUEST_FLAGS insn PATHPROF_READ_FLAGS
#define PATHPROF_GUEST_FLAGS_RAX(insn)               \
  "mov %%rax, %[save]\n\t" PATHPROF_LOAD_GUEST_FLAGS \
  "mov %[save], %%rax\n\t" insn PATHPROF_READ_FLAGS

// Only the arithmetic flags go in (with the always-set bit 1): never TF, DF or AC.
uint64_t FlagsIn(const uint64_t* flags) {
  return (*flags & kArithmeticFlags) | 0x2;
}

template <typename T>
uint64_t Shift(HostShiftOp op, uint64_t value, uint8_t count, uint64_t* flags) {
  T v = static_cast<T>(value);
  uint64_t f = FlagsIn(flags);
  switch (op) {
    case HostShiftOp::kShl:
      asm(PATHPROF_GUEST_FLAGS("shl %%cl, %[v]")
          : [v] "+r"(v), [f] "+r"(f)
          : "c"(count)
          : "cc", "rax");
      break;
    case HostShiftOp::kShr:
      asm(PATHPROF_GUEST_FLAGS("shr %%cl, %[v]")
          : [v] "+r"(v), [f] "+r"(f)
          : "c"(count)
          : "cc", "rax");
      break;
    case HostShiftOp::kSar:
      asm(PATHPROF_GUEST_FLAGS("sar %%cl, %[v]")
          : [v] "+r"(v), [f] "+r"(f)
          : "c"(count)
          : "cc", "rax");
      break;
    case HostShiftOp::kRol:
      asm(PATHPROF_GUEST_FLAGS("rol %%cl, %[v]")
          : [v] "+r"(v), [f] "+r"(f)
          : "c"(count)
          : "cc", "rax");
      break;
    case HostShiftOp::kRor:
      asm(PATHPROF_GUEST_FLAGS("ror %%cl, %[v]")
          : [v] "+r"(v), [f] "+r"(f)
          : "c"(count)
          : "cc", "rax");
      break;
    case HostShiftOp::kRcl:
      asm(PATHPROF_GUEST_FLAGS("rcl %%cl, %[v]")
          : [v] "+r"(v), [f] "+r"(f)
          : "c"(count)
          : "cc", "rax");
      break;
    case HostShiftOp::kRcr:
      asm(PATHPROF_GUEST_FLAGS("rcr %%cl, %[v]")
          : [v] "+r"(v), [f] "+r"(f)
          : "c"(count)
          : "cc", "rax");
      break;
  }
  *flags = f & kArithmeticFlags;
  return v;
}

template <typename T>
uint64_t DoubleShift(bool left, uint64_t dst, uint64_t src, uint8_t count, uint64_t* flags) {
  T d = static_cast<T>(dst);
  const T s = static_cast<T>(src);
  uint64_t f = FlagsIn(flags);
  if (left)
    asm(PATHPROF_GUEST_FLAGS("shld %%cl, %[s], %[d]")
        : [d] "+r"(d), [f] "+r"(f)
        : [s] "r"(s), "c"(count)
        : "cc", "rax");
  else
    asm(PATHPROF_GUEST_FLAGS("shrd %%cl, %[s], %[d]")
        : [d] "+r"(d), [f] "+r"(f)
        : [s] "r"(s), "c"(count)
        : "cc", "rax");
  *flags = f & kArithmeticFlags;
  return d;
}

template <typename T>
void WideMultiply(bool is_signed, uint64_t a, uint64_t b, uint64_t* lo, uint64_t* hi,
                  uint64_t* flags) {
  T l = static_cast<T>(a), h = 0;
  const T s = static_cast<T>(b);
  uint64_t save = 0;
  uint64_t f = FlagsIn(flags);
  if (is_signed)
    asm(PATHPROF_GUEST_FLAGS_RAX("imul %[s]")
        : "+a"(l), "+d"(h), [f] "+r"(f), [save] "=&r"(save)
        : [s] "r"(s)
        : "cc");
  else
    asm(PATHPROF_GUEST_FLAGS_RAX("mul %[s]")
        : "+a"(l), "+d"(h), [f] "+r"(f), [save] "=&r"(save)
        : [s] "r"(s)
        : "cc");
  *lo = l;
  *hi = h;
  *flags = f & kArithmeticFlags;
}

// Bytes multiply al by the source into ax.
void ByteMultiply(bool is_signed, uint64_t a, uint64_t b, uint64_t* lo, uint64_t* hi,
                  uint64_t* flags) {
  uint16_t ax = static_cast<uint8_t>(a);
  const uint8_t s = static_cast<uint8_t>(b);
  uint64_t save = 0;
  uint64_t f = FlagsIn(flags);
  if (is_signed)
    asm(PATHPROF_GUEST_FLAGS_RAX("imulb %[s]")
        : "+a"(ax), [f] "+r"(f), [save] "=&r"(save)
        : [s] "q"(s)
        : "cc");
  else
    asm(PATHPROF_GUEST_FLAGS_RAX("mulb %[s]")
        : "+a"(ax), [f] "+r"(f), [save] "=&r"(save)
        : [s] "q"(s)
        : "cc");
  *lo = ax & 0xff;
  *hi = ax >> 8;
  *flags = f & kArithmeticFlags;
}

template <typename T>
uint64_t TruncatedMultiply(uint64_t a, uint64_t b, uint64_t* flags) {
  T x = static_cast<T>(a);
  const T y = static_cast<T>(b);
  uint64_t f = FlagsIn(flags);
  asm(PATHPROF_GUEST_FLAGS("imul %[y], %[x]")
      : [x] "+r"(x), [f] "+r"(f)
      : [y] "r"(y)
      : "cc", "rax");
  *flags = f & kArithmeticFlags;
  return x;
}

template <typename T>
void Divide(bool is_signed, uint64_t lo, uint64_t hi, uint64_t divisor, uint64_t* quotient,
            uint64_t* remainder, uint64_t* flags) {
  T l = static_cast<T>(lo), h = static_cast<T>(hi);
  const T d = static_cast<T>(divisor);
  uint64_t save = 0;
  uint64_t f = FlagsIn(flags);
  if (is_signed)
    asm(PATHPROF_GUEST_FLAGS_RAX("idiv %[d]")
        : "+a"(l), "+d"(h), [f] "+r"(f), [save] "=&r"(save)
        : [d] "r"(d)
        : "cc");
  else
    asm(PATHPROF_GUEST_FLAGS_RAX("div %[d]")
        : "+a"(l), "+d"(h), [f] "+r"(f), [save] "=&r"(save)
        : [d] "r"(d)
        : "cc");
  *quotient = l;
  *remainder = h;
  *flags = f & kArithmeticFlags;
}

// Bytes divide ax: al = quotient, ah = remainder.
void ByteDivide(bool is_signed, uint64_t ax_in, uint64_t divisor, uint64_t* quotient,
                uint64_t* remainder, uint64_t* flags) {
  uint16_t ax = static_cast<uint16_t>(ax_in);
  const uint8_t d = static_cast<uint8_t>(divisor);
  uint64_t save = 0;
  uint64_t f = FlagsIn(flags);
  if (is_signed)
    asm(PATHPROF_GUEST_FLAGS_RAX("idivb %[d]")
        : "+a"(ax), [f] "+r"(f), [save] "=&r"(save)
        : [d] "q"(d)
        : "cc");
  else
    asm(PATHPROF_GUEST_FLAGS_RAX("divb %[d]")
        : "+a"(ax), [f] "+r"(f), [save] "=&r"(save)
        : [d] "q"(d)
        : "cc");
  *quotient = ax & 0xff;
  *remainder = ax >> 8;
  *flags = f & kArithmeticFlags;
}

// The destination register whole, before and after: bsf and bsr with a zero source leave it
// unchanged, and on AMD cores that includes the upper half of a 32-bit destination, which a
// 32-bit write would otherwise zero. kSize picks the register names (%w 16, %k 32, %q 64 bits).
#define PATHPROF_BIT_SCAN(insn, w)                       \
  asm(PATHPROF_GUEST_FLAGS(insn " %" w "[s], %" w "[d]") \
      : [d] "+r"(d), [f] "+r"(f)                         \
      : [s] "r"(s)                                       \
      : "cc", "rax")

template <unsigned kSize>
uint64_t BitScan(HostBitScanOp op, uint64_t src, uint64_t dst, uint64_t* flags) {
  const uint64_t s = src;
  uint64_t d = dst;
  uint64_t f = FlagsIn(flags);
  switch (op) {
    case HostBitScanOp::kBsf:
      if constexpr (kSize == 2)
        PATHPROF_BIT_SCAN("bsf", "w");
      else if constexpr (kSize == 4)
        PATHPROF_BIT_SCAN("bsf", "k");
      else
        PATHPROF_BIT_SCAN("bsf", "q");
      break;
    case HostBitScanOp::kBsr:
      if constexpr (kSize == 2)
        PATHPROF_BIT_SCAN("bsr", "w");
      else if constexpr (kSize == 4)
        PATHPROF_BIT_SCAN("bsr", "k");
      else
        PATHPROF_BIT_SCAN("bsr", "q");
      break;
    case HostBitScanOp::kTzcnt:
      if constexpr (kSize == 2)
        PATHPROF_BIT_SCAN("tzcnt", "w");
      else if constexpr (kSize == 4)
        PATHPROF_BIT_SCAN("tzcnt", "k");
      else
        PATHPROF_BIT_SCAN("tzcnt", "q");
      break;
    case HostBitScanOp::kLzcnt:
      if constexpr (kSize == 2)
        PATHPROF_BIT_SCAN("lzcnt", "w");
      else if constexpr (kSize == 4)
        PATHPROF_BIT_SCAN("lzcnt", "k");
      else
        PATHPROF_BIT_SCAN("lzcnt", "q");
      break;
    case HostBitScanOp::kPopcnt:
      if constexpr (kSize == 2)
        PATHPROF_BIT_SCAN("popcnt", "w");
      else if constexpr (kSize == 4)
        PATHPROF_BIT_SCAN("popcnt", "k");
      else
        PATHPROF_BIT_SCAN("popcnt", "q");
      break;
  }
  *flags = f & kArithmeticFlags;
  return d;
}

#undef PATHPROF_BIT_SCAN

#define PATHPROF_COMPARE_EXCHANGE(w)                           \
  asm(PATHPROF_GUEST_FLAGS_RAX("cmpxchg %" w "[s], %" w "[d]") \
      : "+a"(a), [d] "+r"(d), [f] "+r"(f), [save] "=&r"(save)  \
      : [s] "r"(s)                                             \
      : "cc")

template <unsigned kSize>
void CompareExchange(uint64_t* accumulator, uint64_t* destination, uint64_t source,
                     uint64_t* flags) {
  uint64_t a = *accumulator, d = *destination;
  const uint64_t s = source;
  uint64_t save = 0;
  uint64_t f = FlagsIn(flags);
  if constexpr (kSize == 1)
    PATHPROF_COMPARE_EXCHANGE("b");
  else if constexpr (kSize == 2)
    PATHPROF_COMPARE_EXCHANGE("w");
  else if constexpr (kSize == 4)
    PATHPROF_COMPARE_EXCHANGE("k");
  else
    PATHPROF_COMPARE_EXCHANGE("q");
  *accumulator = a;
  *destination = d;
  *flags = f & kArithmeticFlags;
}

#undef PATHPROF_COMPARE_EXCHANGE

template <typename T>
uint64_t BitTest(HostBitTestOp op, uint64_t value, uint64_t bit, uint64_t* flags) {
  T v = static_cast<T>(value);
  const T b = static_cast<T>(bit);
  uint64_t f = FlagsIn(flags);
  switch (op) {
    case HostBitTestOp::kBt:
      asm(PATHPROF_GUEST_FLAGS("bt %[b], %[v]")
          : [v] "+r"(v), [f] "+r"(f)
          : [b] "r"(b)
          : "cc", "rax");
      break;
    case HostBitTestOp::kBts:
      asm(PATHPROF_GUEST_FLAGS("bts %[b], %[v]")
          : [v] "+r"(v), [f] "+r"(f)
          : [b] "r"(b)
          : "cc", "rax");
      break;
    case HostBitTestOp::kBtr:
      asm(PATHPROF_GUEST_FLAGS("btr %[b], %[v]")
          : [v] "+r"(v), [f] "+r"(f)
          : [b] "r"(b)
          : "cc", "rax");
      break;
    case HostBitTestOp::kBtc:
      asm(PATHPROF_GUEST_FLAGS("btc %[b], %[v]")
          : [v] "+r"(v), [f] "+r"(f)
          : [b] "r"(b)
          : "cc", "rax");
      break;
  }
  *flags = f & kArithmeticFlags;
  return v;
}

template <typename T>
uint64_t Bmi(HostBmiOp op, uint64_t a_in, uint64_t b_in, uint64_t* flags) {
  const T a = static_cast<T>(a_in), b = static_cast<T>(b_in);
  T r = 0;
  uint64_t f = FlagsIn(flags);
  // AT&T order: sources first, the destination last.
  switch (op) {
    case HostBmiOp::kAndn:
      asm(PATHPROF_GUEST_FLAGS("andn %[b], %[a], %[r]")
          : [r] "=r"(r), [f] "+r"(f)
          : [a] "r"(a), [b] "r"(b)
          : "cc", "rax");
      break;
    case HostBmiOp::kBzhi:
      asm(PATHPROF_GUEST_FLAGS("bzhi %[b], %[a], %[r]")
          : [r] "=r"(r), [f] "+r"(f)
          : [a] "r"(a), [b] "r"(b)
          : "cc", "rax");
      break;
    case HostBmiOp::kBextr:
      asm(PATHPROF_GUEST_FLAGS("bextr %[b], %[a], %[r]")
          : [r] "=r"(r), [f] "+r"(f)
          : [a] "r"(a), [b] "r"(b)
          : "cc", "rax");
      break;
    case HostBmiOp::kBlsr:
      asm(PATHPROF_GUEST_FLAGS("blsr %[a], %[r]")
          : [r] "=r"(r), [f] "+r"(f)
          : [a] "r"(a)
          : "cc", "rax");
      break;
    case HostBmiOp::kBlsi:
      asm(PATHPROF_GUEST_FLAGS("blsi %[a], %[r]")
          : [r] "=r"(r), [f] "+r"(f)
          : [a] "r"(a)
          : "cc", "rax");
      break;
    case HostBmiOp::kBlsmsk:
      asm(PATHPROF_GUEST_FLAGS("blsmsk %[a], %[r]")
          : [r] "=r"(r), [f] "+r"(f)
          : [a] "r"(a)
          : "cc", "rax");
      break;
  }
  *flags = f & kArithmeticFlags;
  return r;
}

// 0x12345678 rol 2 is 0x48d159e0 with CF 0: the cl form's OF (MSB xor CF) is 0. Going in with
// OF set, the imm8 form leaves OF 1 only where it keeps the flag.
bool ProbeImmediateRotate() {
  uint32_t v = 0x12345678;
  uint64_t f = kOF | 0x2;
  asm(PATHPROF_GUEST_FLAGS("rol $2, %[v]") : [v] "+r"(v), [f] "+r"(f) : : "cc", "rax");
  return (f & kOF) != 0;
}

#undef PATHPROF_GUEST_FLAGS_RAX
#undef PATHPROF_GUEST_FLAGS
#undef PATHPROF_READ_FLAGS
#undef PATHPROF_LOAD_GUEST_FLAGS

}  // namespace

bool ImmediateRotatesKeepOverflow() {
  static const bool keeps = ProbeImmediateRotate();
  return keeps;
}

uint64_t HostShift(HostShiftOp op, uint64_t value, uint8_t count, unsigned size,
                   bool register_by_immediate, uint64_t* flags) {
  const uint64_t flags_in = *flags;
  uint64_t r = 0;
  switch (size) {
    case 1:
      r = Shift<uint8_t>(op, value, count, flags);
      break;
    case 2:
      r = Shift<uint16_t>(op, value, count, flags);
      break;
    case 4:
      r = Shift<uint32_t>(op, value, count, flags);
      break;
    default:
      r = Shift<uint64_t>(op, value, count, flags);
      break;
  }
  // The cl form ran: where the imm8 form differs, its OF is the one before (the SDM leaves OF
  // undefined past a one-bit rotate; the window must still leave the thread's flags).
  const unsigned masked = count & (size == 8 ? 63u : 31u);
  if (register_by_immediate && masked > 1 && (op == HostShiftOp::kRol || op == HostShiftOp::kRor) &&
      ImmediateRotatesKeepOverflow())
    *flags = (*flags & ~kOF) | (flags_in & kOF);
  return r;
}

uint64_t HostDoubleShift(bool left, uint64_t dst, uint64_t src, uint8_t count, unsigned size,
                         uint64_t* flags) {
  switch (size) {
    case 2:
      return DoubleShift<uint16_t>(left, dst, src, count, flags);
    case 4:
      return DoubleShift<uint32_t>(left, dst, src, count, flags);
    default:
      return DoubleShift<uint64_t>(left, dst, src, count, flags);
  }
}

void HostWideMultiply(bool is_signed, uint64_t a, uint64_t b, unsigned size, uint64_t* lo,
                      uint64_t* hi, uint64_t* flags) {
  switch (size) {
    case 1:
      return ByteMultiply(is_signed, a, b, lo, hi, flags);
    case 2:
      return WideMultiply<uint16_t>(is_signed, a, b, lo, hi, flags);
    case 4:
      return WideMultiply<uint32_t>(is_signed, a, b, lo, hi, flags);
    default:
      return WideMultiply<uint64_t>(is_signed, a, b, lo, hi, flags);
  }
}

uint64_t HostTruncatedMultiply(uint64_t a, uint64_t b, unsigned size, uint64_t* flags) {
  switch (size) {
    case 2:
      return TruncatedMultiply<uint16_t>(a, b, flags);
    case 4:
      return TruncatedMultiply<uint32_t>(a, b, flags);
    default:
      return TruncatedMultiply<uint64_t>(a, b, flags);
  }
}

void HostDivide(bool is_signed, uint64_t lo, uint64_t hi, uint64_t divisor, unsigned size,
                uint64_t* quotient, uint64_t* remainder, uint64_t* flags) {
  switch (size) {
    case 1:
      return ByteDivide(is_signed, lo, divisor, quotient, remainder, flags);
    case 2:
      return Divide<uint16_t>(is_signed, lo, hi, divisor, quotient, remainder, flags);
    case 4:
      return Divide<uint32_t>(is_signed, lo, hi, divisor, quotient, remainder, flags);
    default:
      return Divide<uint64_t>(is_signed, lo, hi, divisor, quotient, remainder, flags);
  }
}

uint64_t HostBitScan(HostBitScanOp op, uint64_t src, uint64_t dst, unsigned size, uint64_t* flags) {
  switch (size) {
    case 2:
      return BitScan<2>(op, src, dst, flags);
    case 4:
      return BitScan<4>(op, src, dst, flags);
    default:
      return BitScan<8>(op, src, dst, flags);
  }
}

void HostCompareExchange(uint64_t* accumulator, uint64_t* destination, uint64_t source,
                         unsigned size, uint64_t* flags) {
  switch (size) {
    case 1:
      return CompareExchange<1>(accumulator, destination, source, flags);
    case 2:
      return CompareExchange<2>(accumulator, destination, source, flags);
    case 4:
      return CompareExchange<4>(accumulator, destination, source, flags);
    default:
      return CompareExchange<8>(accumulator, destination, source, flags);
  }
}

uint64_t HostBitTest(HostBitTestOp op, uint64_t value, uint64_t bit, unsigned size,
                     uint64_t* flags) {
  switch (size) {
    case 2:
      return BitTest<uint16_t>(op, value, bit, flags);
    case 4:
      return BitTest<uint32_t>(op, value, bit, flags);
    default:
      return BitTest<uint64_t>(op, value, bit, flags);
  }
}

uint64_t HostBmi(HostBmiOp op, uint64_t a, uint64_t b, unsigned size, uint64_t* flags) {
  return size == 4 ? Bmi<uint32_t>(op, a, b, flags) : Bmi<uint64_t>(op, a, b, flags);
}

}  // namespace pathprof::emulator
