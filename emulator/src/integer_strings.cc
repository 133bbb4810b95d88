// The string instructions, movs, stos, lods, cmps and scas, with their REP prefixes: one
// handler for each kind and element size, each mnemonic named once where it is added.
#include <Zydis/Zydis.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "integer_arithmetic.h"
#include "integer_handlers.h"
#include "machine.h"

namespace pathprof::emulator {
namespace {

enum class StringKind : uint8_t { kMovs, kStos, kLods, kCmps, kScas };

// Forward rep movs / rep stos over the part of the operands that lies within one page each: a
// page-sized memcpy or fill instead of an overlay access per element (glibc's memcpy and memset
// use them for large sizes; element by element they were most of the emulator's time on zstd).
// Returns the elements done; 0 where the next element crosses a page, or where a forward copy
// would read bytes it has just written (*overlapping set: the caller then runs the rest one
// element at a time). *st is not kOk where the first element's access fails, as it would one
// element at a time.
uint64_t BulkStringElements(Machine& m, bool movs, unsigned size, uint64_t max_elements,
                            MemoryStatus* st, bool* overlapping) {
  const size_t want = max_elements * size;
  const uint8_t* src = nullptr;
  size_t src_bytes = want;
  // The source first, as the element loop reads before it writes (the same status on failure).
  if (movs &&
      (*st = m.memory->ReadableSpan(m.s.gpr[kRsi], want, &src, &src_bytes)) != MemoryStatus::kOk)
    return 0;
  uint8_t* dst = nullptr;
  size_t dst_bytes = 0;
  if ((*st = m.memory->WritableSpan(m.s.gpr[kRdi], src_bytes, &dst, &dst_bytes)) !=
      MemoryStatus::kOk)
    return 0;
  if (movs) {
    // Read again: making the destination writable may have copied the source's page.
    if ((*st = m.memory->ReadableSpan(m.s.gpr[kRsi], dst_bytes, &src, &src_bytes)) !=
        MemoryStatus::kOk)
      return 0;
  }
  const uint64_t n = std::min(src_bytes, dst_bytes) / size;
  if (n == 0) return 0;
  const size_t bytes = n * size;
  if (movs) {
    const auto d = reinterpret_cast<uintptr_t>(dst), s = reinterpret_cast<uintptr_t>(src);
    if (d > s && d < s + bytes) {  // element order shows: not a memmove
      *overlapping = true;
      return 0;
    }
    std::memmove(dst, src, bytes);
    m.s.gpr[kRsi] += bytes;
  } else {
    const uint64_t v = m.s.gpr[kRax];
    if (size == 1) {
      std::memset(dst, static_cast<uint8_t>(v), bytes);
    } else {
      for (uint64_t i = 0; i < n; ++i) std::memcpy(dst + i * size, &v, size);
    }
  }
  m.s.gpr[kRdi] += bytes;
  m.s.gpr[kRcx] -= n;
  return n;
}

// movs, stos, lods, cmps, scas with their REP prefixes: every iteration is emulated; the
// instruction retires once (as the stepper counts it). When the window ends at one (an
// iteration would fault, or too many of them), it ends before the instruction: rax, rcx, rsi,
// rdi and the flags go back to what they were, as the stepped thread has them there.
template <StringKind kKind, unsigned kSize>
Step StringOp(Machine& m, const DecodedInstruction& d) {
  // movsd and cmpsd are also SSE instructions: those have vector operands.
  if (d.is_vector) return Step::kNotMine;
  constexpr unsigned size = kSize;
  const std::array<uint64_t, 4> before = {m.s.gpr[kRax], m.s.gpr[kRcx], m.s.gpr[kRsi],
                                          m.s.gpr[kRdi]};
  const uint64_t flags_before = m.s.rflags;
  const auto end = [&](EmulationEnd why) {
    m.s.gpr[kRax] = before[0];
    m.s.gpr[kRcx] = before[1];
    m.s.gpr[kRsi] = before[2];
    m.s.gpr[kRdi] = before[3];
    m.s.rflags = flags_before;
    return m.End(why);
  };
  const bool counted = d.rep || d.repne;
  const int64_t step = (m.s.rflags & kDF) ? -static_cast<int64_t>(size) : size;
  constexpr bool compares = kKind == StringKind::kCmps || kKind == StringKind::kScas;
  const RegRef acc{RegClass::kGpr, kRax, static_cast<uint8_t>(size), 0};
  constexpr bool movs = kKind == StringKind::kMovs;
  constexpr bool stos = kKind == StringKind::kStos;
  // Not while tracking unknown bytes: element by element, every store is recorded as made.
  bool bulk = counted && (movs || stos) && !(m.s.rflags & kDF) && m.unknowns == nullptr;
  constexpr uint64_t kMaxIterations = (1u << 20) + 1;  // then the window ends
  for (uint64_t iterations = 0;; ++iterations) {
    if (counted && m.s.gpr[kRcx] == 0) break;
    if (iterations >= kMaxIterations) return end(EmulationEnd::kInstructionLimit);
    MemoryStatus st = MemoryStatus::kOk;
    if (bulk) {
      bool overlapping = false;
      const uint64_t done = BulkStringElements(
          m, movs, size, std::min<uint64_t>(m.s.gpr[kRcx], kMaxIterations - iterations), &st,
          &overlapping);
      if (overlapping) bulk = false;  // the distance stays: the next chunks would overlap too
      if (st != MemoryStatus::kOk) {
        m.MemoryEnd(st);
        return end(m.end);
      }
      if (done > 0) {
        iterations += done - 1;
        continue;
      }
    }
    uint64_t v = 0, w = 0;
    switch (kKind) {
      case StringKind::kMovs:
        st = m.memory->Read(m.s.gpr[kRsi], &v, size);
        if (st == MemoryStatus::kOk) st = m.memory->Write(m.s.gpr[kRdi], &v, size);
        m.s.gpr[kRsi] += step;
        m.s.gpr[kRdi] += step;
        break;
      case StringKind::kStos:
        v = ReadGpr(m, acc);
        st = m.memory->Write(m.s.gpr[kRdi], &v, size);
        m.s.gpr[kRdi] += step;
        break;
      case StringKind::kLods:
        st = m.memory->Read(m.s.gpr[kRsi], &v, size);
        if (st == MemoryStatus::kOk) WriteGpr(m, acc, v);
        m.s.gpr[kRsi] += step;
        break;
      case StringKind::kCmps: {
        st = m.memory->Read(m.s.gpr[kRsi], &v, size);
        if (st == MemoryStatus::kOk) st = m.memory->Read(m.s.gpr[kRdi], &w, size);
        uint64_t f = 0;
        Sub(v, w, 0, size, &f);
        SetFlags(m, kArithmeticFlags, f);
        m.s.gpr[kRsi] += step;
        m.s.gpr[kRdi] += step;
        break;
      }
      case StringKind::kScas: {
        st = m.memory->Read(m.s.gpr[kRdi], &w, size);
        uint64_t f = 0;
        Sub(ReadGpr(m, acc), w, 0, size, &f);
        SetFlags(m, kArithmeticFlags, f);
        m.s.gpr[kRdi] += step;
        break;
      }
    }
    if (st != MemoryStatus::kOk) {
      m.MemoryEnd(st);
      return end(m.end);
    }
    if (!counted) break;
    --m.s.gpr[kRcx];
    if (compares && d.rep && !(m.s.rflags & kZF)) break;
    if (compares && d.repne && (m.s.rflags & kZF)) break;
  }
  return Step::kNext;
}

}  // namespace

void AddStringOps(IntegerHandlers& t) {
  using K = StringKind;
  t.Add({ZYDIS_MNEMONIC_MOVSB}, StringOp<K::kMovs, 1>);
  t.Add({ZYDIS_MNEMONIC_MOVSW}, StringOp<K::kMovs, 2>);
  t.Add({ZYDIS_MNEMONIC_MOVSD}, StringOp<K::kMovs, 4>);
  t.Add({ZYDIS_MNEMONIC_MOVSQ}, StringOp<K::kMovs, 8>);
  t.Add({ZYDIS_MNEMONIC_STOSB}, StringOp<K::kStos, 1>);
  t.Add({ZYDIS_MNEMONIC_STOSW}, StringOp<K::kStos, 2>);
  t.Add({ZYDIS_MNEMONIC_STOSD}, StringOp<K::kStos, 4>);
  t.Add({ZYDIS_MNEMONIC_STOSQ}, StringOp<K::kStos, 8>);
  t.Add({ZYDIS_MNEMONIC_LODSB}, StringOp<K::kLods, 1>);
  t.Add({ZYDIS_MNEMONIC_LODSW}, StringOp<K::kLods, 2>);
  t.Add({ZYDIS_MNEMONIC_LODSD}, StringOp<K::kLods, 4>);
  t.Add({ZYDIS_MNEMONIC_LODSQ}, StringOp<K::kLods, 8>);
  t.Add({ZYDIS_MNEMONIC_CMPSB}, StringOp<K::kCmps, 1>);
  t.Add({ZYDIS_MNEMONIC_CMPSW}, StringOp<K::kCmps, 2>);
  t.Add({ZYDIS_MNEMONIC_CMPSD}, StringOp<K::kCmps, 4>);
  t.Add({ZYDIS_MNEMONIC_CMPSQ}, StringOp<K::kCmps, 8>);
  t.Add({ZYDIS_MNEMONIC_SCASB}, StringOp<K::kScas, 1>);
  t.Add({ZYDIS_MNEMONIC_SCASW}, StringOp<K::kScas, 2>);
  t.Add({ZYDIS_MNEMONIC_SCASD}, StringOp<K::kScas, 4>);
  t.Add({ZYDIS_MNEMONIC_SCASQ}, StringOp<K::kScas, 8>);
}

}  // namespace pathprof::emulator
