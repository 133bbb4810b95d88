// The emulator against the CPU on random instructions, in process: blocks of random integer and
// SSE integer instructions (Zydis's encoder over the mnemonics the emulator claims, listed in
// Classes() and VectorClasses(); random registers, sizes, immediates and memory operands in a
// 128-byte buffer), each run natively in this process and in the emulator from the same
// registers, flags, xmm registers and buffer. Compared: every general register, the arithmetic
// flags after the block, xmm0-15 and the buffer (folded into a register after the block). A
// block the emulator ends early is counted by reason; a block whose results differ is a
// divergence, attributed to its first instruction whose prefix already differs (bisection) and
// counted by mnemonic. Used by emulator_differential_test (a short run) and
// bench/emulator_differential_bench.cc (issue 40's 10^8 instructions).
//
// Why in process and not single-stepped: one native run per block instead of one stop per
// instruction lets 10^8 instructions run in minutes (tests/stepping's GeneratedCode compares
// event by event under single steps, on fewer instructions). The native run executes the block
// on a private stack from a trampoline written into the same page; a fault (an instruction this
// CPU lacks) comes back through a signal handler and is counted with the instruction.
#pragma once

#include <Zydis/Zydis.h>
#include <signal.h>
#include <sys/mman.h>

#include <array>
#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "pathprof/emulator/window_emulator.h"

namespace pathprof::emulator::differential {

constexpr uint64_t kPage = Guest::kPageSize;
constexpr int kBlock = 64;         // random instructions per block
constexpr int kBufferBytes = 128;  // what memory operands reach ([rbx + 0..127])
constexpr uint64_t kArithmeticFlags = 0xcd5;
constexpr size_t kXmmOffset = 17 * 8;  // in the register areas: after the gprs and rflags
constexpr size_t kVectorBytes = 32;    // ymm0-15 in and out

// The registers random instructions use. rbx holds the buffer's address, rsp the private
// stack, r14 the flags after the block and r15 the buffer's fold: none is an operand.
constexpr std::array<int, 12> kFree = {0, 1, 2, 6, 7, 5, 8, 9, 10, 11, 12, 13};
inline const ZydisRegister kGpr64[16] = {
    ZYDIS_REGISTER_RAX, ZYDIS_REGISTER_RCX, ZYDIS_REGISTER_RDX, ZYDIS_REGISTER_RBX,
    ZYDIS_REGISTER_RSP, ZYDIS_REGISTER_RBP, ZYDIS_REGISTER_RSI, ZYDIS_REGISTER_RDI,
    ZYDIS_REGISTER_R8,  ZYDIS_REGISTER_R9,  ZYDIS_REGISTER_R10, ZYDIS_REGISTER_R11,
    ZYDIS_REGISTER_R12, ZYDIS_REGISTER_R13, ZYDIS_REGISTER_R14, ZYDIS_REGISTER_R15};

// The register of `index` at `bytes` (1, 2, 4, 8).
inline ZydisRegister Sized(int index, int bytes) {
  static const ZydisRegister r8[16] = {
      ZYDIS_REGISTER_AL,   ZYDIS_REGISTER_CL,   ZYDIS_REGISTER_DL,   ZYDIS_REGISTER_BL,
      ZYDIS_REGISTER_SPL,  ZYDIS_REGISTER_BPL,  ZYDIS_REGISTER_SIL,  ZYDIS_REGISTER_DIL,
      ZYDIS_REGISTER_R8B,  ZYDIS_REGISTER_R9B,  ZYDIS_REGISTER_R10B, ZYDIS_REGISTER_R11B,
      ZYDIS_REGISTER_R12B, ZYDIS_REGISTER_R13B, ZYDIS_REGISTER_R14B, ZYDIS_REGISTER_R15B};
  static const ZydisRegister r16[16] = {
      ZYDIS_REGISTER_AX,   ZYDIS_REGISTER_CX,   ZYDIS_REGISTER_DX,   ZYDIS_REGISTER_BX,
      ZYDIS_REGISTER_SP,   ZYDIS_REGISTER_BP,   ZYDIS_REGISTER_SI,   ZYDIS_REGISTER_DI,
      ZYDIS_REGISTER_R8W,  ZYDIS_REGISTER_R9W,  ZYDIS_REGISTER_R10W, ZYDIS_REGISTER_R11W,
      ZYDIS_REGISTER_R12W, ZYDIS_REGISTER_R13W, ZYDIS_REGISTER_R14W, ZYDIS_REGISTER_R15W};
  static const ZydisRegister r32[16] = {
      ZYDIS_REGISTER_EAX,  ZYDIS_REGISTER_ECX,  ZYDIS_REGISTER_EDX,  ZYDIS_REGISTER_EBX,
      ZYDIS_REGISTER_ESP,  ZYDIS_REGISTER_EBP,  ZYDIS_REGISTER_ESI,  ZYDIS_REGISTER_EDI,
      ZYDIS_REGISTER_R8D,  ZYDIS_REGISTER_R9D,  ZYDIS_REGISTER_R10D, ZYDIS_REGISTER_R11D,
      ZYDIS_REGISTER_R12D, ZYDIS_REGISTER_R13D, ZYDIS_REGISTER_R14D, ZYDIS_REGISTER_R15D};
  switch (bytes) {
    case 1:
      return r8[index];
    case 2:
      return r16[index];
    case 4:
      return r32[index];
    default:
      return kGpr64[index];
  }
}

// The mnemonics generated: the integer instructions the emulator claims (integer_ops.cc and
// its families), less those that fault on values (div, idiv), touch memory outside operands
// (string instructions, push/pop, enter/leave), transfer control, or read hidden state.
inline const std::vector<ZydisMnemonic>& Classes() {
  static const std::vector<ZydisMnemonic> all = {
      ZYDIS_MNEMONIC_ADD,     ZYDIS_MNEMONIC_SUB,     ZYDIS_MNEMONIC_ADC,    ZYDIS_MNEMONIC_SBB,
      ZYDIS_MNEMONIC_AND,     ZYDIS_MNEMONIC_OR,      ZYDIS_MNEMONIC_XOR,    ZYDIS_MNEMONIC_CMP,
      ZYDIS_MNEMONIC_TEST,    ZYDIS_MNEMONIC_MOV,     ZYDIS_MNEMONIC_XCHG,   ZYDIS_MNEMONIC_XADD,
      ZYDIS_MNEMONIC_CMPXCHG, ZYDIS_MNEMONIC_INC,     ZYDIS_MNEMONIC_DEC,    ZYDIS_MNEMONIC_NEG,
      ZYDIS_MNEMONIC_NOT,     ZYDIS_MNEMONIC_MOVZX,   ZYDIS_MNEMONIC_MOVSX,  ZYDIS_MNEMONIC_MOVSXD,
      ZYDIS_MNEMONIC_LEA,     ZYDIS_MNEMONIC_IMUL,    ZYDIS_MNEMONIC_MUL,    ZYDIS_MNEMONIC_SHL,
      ZYDIS_MNEMONIC_SHR,     ZYDIS_MNEMONIC_SAR,     ZYDIS_MNEMONIC_ROL,    ZYDIS_MNEMONIC_ROR,
      ZYDIS_MNEMONIC_RCL,     ZYDIS_MNEMONIC_RCR,     ZYDIS_MNEMONIC_SHLD,   ZYDIS_MNEMONIC_SHRD,
      ZYDIS_MNEMONIC_BT,      ZYDIS_MNEMONIC_BTS,     ZYDIS_MNEMONIC_BTR,    ZYDIS_MNEMONIC_BTC,
      ZYDIS_MNEMONIC_BSF,     ZYDIS_MNEMONIC_BSR,     ZYDIS_MNEMONIC_TZCNT,  ZYDIS_MNEMONIC_LZCNT,
      ZYDIS_MNEMONIC_POPCNT,  ZYDIS_MNEMONIC_BSWAP,   ZYDIS_MNEMONIC_CBW,    ZYDIS_MNEMONIC_CWDE,
      ZYDIS_MNEMONIC_CDQE,    ZYDIS_MNEMONIC_CWD,     ZYDIS_MNEMONIC_CDQ,    ZYDIS_MNEMONIC_CQO,
      ZYDIS_MNEMONIC_CLC,     ZYDIS_MNEMONIC_STC,     ZYDIS_MNEMONIC_CMC,    ZYDIS_MNEMONIC_LAHF,
      ZYDIS_MNEMONIC_SAHF,    ZYDIS_MNEMONIC_ANDN,    ZYDIS_MNEMONIC_BEXTR,  ZYDIS_MNEMONIC_BLSI,
      ZYDIS_MNEMONIC_BLSMSK,  ZYDIS_MNEMONIC_BLSR,    ZYDIS_MNEMONIC_BZHI,   ZYDIS_MNEMONIC_SARX,
      ZYDIS_MNEMONIC_SHLX,    ZYDIS_MNEMONIC_SHRX,    ZYDIS_MNEMONIC_RORX,   ZYDIS_MNEMONIC_PDEP,
      ZYDIS_MNEMONIC_PEXT,    ZYDIS_MNEMONIC_MULX,    ZYDIS_MNEMONIC_ADCX,   ZYDIS_MNEMONIC_ADOX,
      ZYDIS_MNEMONIC_CMOVZ,   ZYDIS_MNEMONIC_CMOVNZ,  ZYDIS_MNEMONIC_CMOVB,  ZYDIS_MNEMONIC_CMOVNBE,
      ZYDIS_MNEMONIC_CMOVL,   ZYDIS_MNEMONIC_CMOVNLE, ZYDIS_MNEMONIC_CMOVO,  ZYDIS_MNEMONIC_CMOVP,
      ZYDIS_MNEMONIC_CMOVS,   ZYDIS_MNEMONIC_SETZ,    ZYDIS_MNEMONIC_SETNZ,  ZYDIS_MNEMONIC_SETB,
      ZYDIS_MNEMONIC_SETNBE,  ZYDIS_MNEMONIC_SETL,    ZYDIS_MNEMONIC_SETNLE, ZYDIS_MNEMONIC_SETO,
      ZYDIS_MNEMONIC_SETP,    ZYDIS_MNEMONIC_SETS,
  };
  return all;
}

// SSE integer instructions the emulator claims (vector_integer.cc, vector_shuffles.cc,
// vector_moves.cc, vector_compare.cc):
// legacy encodings on xmm0-15, memory operands 16-byte
// aligned as they require.
inline const std::vector<ZydisMnemonic>& VectorClasses() {
  static const std::vector<ZydisMnemonic> all = {
      ZYDIS_MNEMONIC_PADDB,      ZYDIS_MNEMONIC_PADDW,      ZYDIS_MNEMONIC_PADDD,
      ZYDIS_MNEMONIC_PADDQ,      ZYDIS_MNEMONIC_PSUBB,      ZYDIS_MNEMONIC_PSUBW,
      ZYDIS_MNEMONIC_PSUBD,      ZYDIS_MNEMONIC_PSUBQ,      ZYDIS_MNEMONIC_PADDUSB,
      ZYDIS_MNEMONIC_PADDUSW,    ZYDIS_MNEMONIC_PSUBUSB,    ZYDIS_MNEMONIC_PSUBUSW,
      ZYDIS_MNEMONIC_PADDSB,     ZYDIS_MNEMONIC_PADDSW,     ZYDIS_MNEMONIC_PSUBSB,
      ZYDIS_MNEMONIC_PSUBSW,     ZYDIS_MNEMONIC_PMULLW,     ZYDIS_MNEMONIC_PMULHW,
      ZYDIS_MNEMONIC_PMULHUW,    ZYDIS_MNEMONIC_PMULUDQ,    ZYDIS_MNEMONIC_PMADDWD,
      ZYDIS_MNEMONIC_PSADBW,     ZYDIS_MNEMONIC_PAVGB,      ZYDIS_MNEMONIC_PAVGW,
      ZYDIS_MNEMONIC_PMINUB,     ZYDIS_MNEMONIC_PMAXUB,     ZYDIS_MNEMONIC_PMINSW,
      ZYDIS_MNEMONIC_PMAXSW,     ZYDIS_MNEMONIC_PAND,       ZYDIS_MNEMONIC_PANDN,
      ZYDIS_MNEMONIC_POR,        ZYDIS_MNEMONIC_PXOR,       ZYDIS_MNEMONIC_PCMPEQB,
      ZYDIS_MNEMONIC_PCMPEQW,    ZYDIS_MNEMONIC_PCMPEQD,    ZYDIS_MNEMONIC_PCMPGTB,
      ZYDIS_MNEMONIC_PCMPGTW,    ZYDIS_MNEMONIC_PCMPGTD,    ZYDIS_MNEMONIC_PSLLW,
      ZYDIS_MNEMONIC_PSLLD,      ZYDIS_MNEMONIC_PSLLQ,      ZYDIS_MNEMONIC_PSRLW,
      ZYDIS_MNEMONIC_PSRLD,      ZYDIS_MNEMONIC_PSRLQ,      ZYDIS_MNEMONIC_PSRAW,
      ZYDIS_MNEMONIC_PSRAD,      ZYDIS_MNEMONIC_PSLLDQ,     ZYDIS_MNEMONIC_PSRLDQ,
      ZYDIS_MNEMONIC_PSHUFD,     ZYDIS_MNEMONIC_PSHUFLW,    ZYDIS_MNEMONIC_PSHUFHW,
      ZYDIS_MNEMONIC_PUNPCKLBW,  ZYDIS_MNEMONIC_PUNPCKHBW,  ZYDIS_MNEMONIC_PUNPCKLWD,
      ZYDIS_MNEMONIC_PUNPCKHWD,  ZYDIS_MNEMONIC_PUNPCKLDQ,  ZYDIS_MNEMONIC_PUNPCKHDQ,
      ZYDIS_MNEMONIC_PUNPCKLQDQ, ZYDIS_MNEMONIC_PUNPCKHQDQ, ZYDIS_MNEMONIC_PACKSSWB,
      ZYDIS_MNEMONIC_PACKSSDW,   ZYDIS_MNEMONIC_PACKUSWB,   ZYDIS_MNEMONIC_PMOVMSKB,
      ZYDIS_MNEMONIC_MOVDQU,     ZYDIS_MNEMONIC_MOVDQA,     ZYDIS_MNEMONIC_MOVQ,
      ZYDIS_MNEMONIC_MOVD,       ZYDIS_MNEMONIC_PINSRW,     ZYDIS_MNEMONIC_PEXTRW,
      ZYDIS_MNEMONIC_PSHUFB,     ZYDIS_MNEMONIC_PALIGNR,    ZYDIS_MNEMONIC_PABSB,
      ZYDIS_MNEMONIC_PABSW,      ZYDIS_MNEMONIC_PABSD,      ZYDIS_MNEMONIC_PMINSB,
      ZYDIS_MNEMONIC_PMAXSB,     ZYDIS_MNEMONIC_PMINUD,     ZYDIS_MNEMONIC_PMAXUD,
      ZYDIS_MNEMONIC_PMOVZXBW,   ZYDIS_MNEMONIC_PMOVSXBW,   ZYDIS_MNEMONIC_PBLENDW,
      ZYDIS_MNEMONIC_PTEST,      ZYDIS_MNEMONIC_PCMPEQQ,    ZYDIS_MNEMONIC_PEXTRB,
      ZYDIS_MNEMONIC_PEXTRD,     ZYDIS_MNEMONIC_PEXTRQ,     ZYDIS_MNEMONIC_PINSRB,
      ZYDIS_MNEMONIC_PINSRD,     ZYDIS_MNEMONIC_PINSRQ,     ZYDIS_MNEMONIC_PMINSD,
      ZYDIS_MNEMONIC_PMAXSD,     ZYDIS_MNEMONIC_PMULLD,     ZYDIS_MNEMONIC_PMULDQ,
  };
  return all;
}

// AVX2 integer instructions the emulator claims, VEX-encoded on ymm (and xmm) registers.
inline const std::vector<ZydisMnemonic>& Avx2Classes() {
  static const std::vector<ZydisMnemonic> all = {
      ZYDIS_MNEMONIC_VPADDB,       ZYDIS_MNEMONIC_VPADDW,       ZYDIS_MNEMONIC_VPADDD,
      ZYDIS_MNEMONIC_VPADDQ,       ZYDIS_MNEMONIC_VPSUBB,       ZYDIS_MNEMONIC_VPSUBW,
      ZYDIS_MNEMONIC_VPSUBD,       ZYDIS_MNEMONIC_VPSUBQ,       ZYDIS_MNEMONIC_VPADDUSB,
      ZYDIS_MNEMONIC_VPSUBUSB,     ZYDIS_MNEMONIC_VPADDSW,      ZYDIS_MNEMONIC_VPSUBSW,
      ZYDIS_MNEMONIC_VPMULLW,      ZYDIS_MNEMONIC_VPMULLD,      ZYDIS_MNEMONIC_VPMULHUW,
      ZYDIS_MNEMONIC_VPMULUDQ,     ZYDIS_MNEMONIC_VPMADDWD,     ZYDIS_MNEMONIC_VPSADBW,
      ZYDIS_MNEMONIC_VPAVGB,       ZYDIS_MNEMONIC_VPMINUB,      ZYDIS_MNEMONIC_VPMAXUB,
      ZYDIS_MNEMONIC_VPMINSD,      ZYDIS_MNEMONIC_VPMAXUD,      ZYDIS_MNEMONIC_VPABSB,
      ZYDIS_MNEMONIC_VPABSD,       ZYDIS_MNEMONIC_VPAND,        ZYDIS_MNEMONIC_VPANDN,
      ZYDIS_MNEMONIC_VPOR,         ZYDIS_MNEMONIC_VPXOR,        ZYDIS_MNEMONIC_VPCMPEQB,
      ZYDIS_MNEMONIC_VPCMPEQD,     ZYDIS_MNEMONIC_VPCMPEQQ,     ZYDIS_MNEMONIC_VPCMPGTB,
      ZYDIS_MNEMONIC_VPCMPGTQ,     ZYDIS_MNEMONIC_VPSLLW,       ZYDIS_MNEMONIC_VPSLLD,
      ZYDIS_MNEMONIC_VPSLLQ,       ZYDIS_MNEMONIC_VPSRLW,       ZYDIS_MNEMONIC_VPSRLD,
      ZYDIS_MNEMONIC_VPSRLQ,       ZYDIS_MNEMONIC_VPSRAW,       ZYDIS_MNEMONIC_VPSRAD,
      ZYDIS_MNEMONIC_VPSLLVD,      ZYDIS_MNEMONIC_VPSLLVQ,      ZYDIS_MNEMONIC_VPSRLVD,
      ZYDIS_MNEMONIC_VPSRLVQ,      ZYDIS_MNEMONIC_VPSRAVD,      ZYDIS_MNEMONIC_VPSLLDQ,
      ZYDIS_MNEMONIC_VPSRLDQ,      ZYDIS_MNEMONIC_VPSHUFB,      ZYDIS_MNEMONIC_VPSHUFD,
      ZYDIS_MNEMONIC_VPSHUFLW,     ZYDIS_MNEMONIC_VPSHUFHW,     ZYDIS_MNEMONIC_VPALIGNR,
      ZYDIS_MNEMONIC_VPUNPCKLBW,   ZYDIS_MNEMONIC_VPUNPCKHWD,   ZYDIS_MNEMONIC_VPUNPCKLDQ,
      ZYDIS_MNEMONIC_VPUNPCKHQDQ,  ZYDIS_MNEMONIC_VPACKSSWB,    ZYDIS_MNEMONIC_VPACKUSWB,
      ZYDIS_MNEMONIC_VPACKUSDW,    ZYDIS_MNEMONIC_VPERMD,       ZYDIS_MNEMONIC_VPERMQ,
      ZYDIS_MNEMONIC_VPERM2I128,   ZYDIS_MNEMONIC_VINSERTI128,  ZYDIS_MNEMONIC_VEXTRACTI128,
      ZYDIS_MNEMONIC_VPBLENDD,     ZYDIS_MNEMONIC_VPBLENDW,     ZYDIS_MNEMONIC_VPBLENDVB,
      ZYDIS_MNEMONIC_VPBROADCASTB, ZYDIS_MNEMONIC_VPBROADCASTD, ZYDIS_MNEMONIC_VPBROADCASTQ,
      ZYDIS_MNEMONIC_VPMOVMSKB,    ZYDIS_MNEMONIC_VPTEST,       ZYDIS_MNEMONIC_VMOVDQU,
      ZYDIS_MNEMONIC_VMOVDQA,      ZYDIS_MNEMONIC_VPMOVZXBW,    ZYDIS_MNEMONIC_VPMOVSXWD,
      ZYDIS_MNEMONIC_VPSIGNB,      ZYDIS_MNEMONIC_VPMAXSW,      ZYDIS_MNEMONIC_VPMINUW,
  };
  return all;
}

struct Instruction {
  std::array<uint8_t, ZYDIS_MAX_INSTRUCTION_LENGTH> bytes{};
  uint8_t length = 0;
  ZydisMnemonic mnemonic = ZYDIS_MNEMONIC_INVALID;
};

// One random instruction: a mnemonic, then operand forms tried until the encoder takes one.
class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {}
  uint64_t Next() { return rng_(); }
  Instruction Draw() {
    for (;;) {  // A third of the draws from the SSE integer instructions, a sixth from AVX2's.
      const uint64_t kind = Below(6);
      const bool vector = kind >= 3;
      avx_ = kind == 5;
      const auto& classes = avx_ ? Avx2Classes() : vector ? VectorClasses() : Classes();
      const ZydisMnemonic mn = classes[Below(classes.size())];
      vector_ = vector;
      for (int attempt = 0; attempt < 16; ++attempt) {
        Instruction i;
        if (Encode(mn, &i)) return i;
      }
    }
  }

 private:
  uint64_t Below(uint64_t n) { return rng_() % n; }
  // EVEX forms of the claimed vector classes on xmm/ymm need AVX-512 F, BW and VL.
  static bool CpuRunsEvex() {
    static const bool runs = __builtin_cpu_supports("avx512f") &&
                             __builtin_cpu_supports("avx512bw") &&
                             __builtin_cpu_supports("avx512vl");
    return runs;
  }
  bool Encode(ZydisMnemonic mn, Instruction* out) {
    ZydisEncoderRequest req;
    std::memset(&req, 0, sizeof req);
    req.machine_mode = ZYDIS_MACHINE_MODE_LONG_64;
    req.mnemonic = mn;
    // Zydis picks EVEX where VEX has no such form (vpslldq/vpsrldq from memory): on a CPU
    // without AVX-512 (AMD Zen 2, Zen 3) those fault natively and compare nothing.
    req.allowed_encodings = static_cast<ZydisEncodableEncoding>(
        ZYDIS_ENCODABLE_ENCODING_LEGACY | ZYDIS_ENCODABLE_ENCODING_VEX |
        (CpuRunsEvex() ? ZYDIS_ENCODABLE_ENCODING_EVEX : 0));
    req.operand_count = static_cast<ZyanU8>(Below(5));  // up to vpblendvb's four
    const int size = 1 << Below(4);
    bool memory = false;
    for (ZyanU8 k = 0; k < req.operand_count; ++k) {
      ZydisEncoderOperand& o = req.operands[k];
      const uint64_t form = Below(8);
      if (form < 4 || (memory && form < 6)) {
        o.type = ZYDIS_OPERAND_TYPE_REGISTER;
        o.reg.value =
            vector_ && Below(4) != 0
                ? static_cast<ZydisRegister>(
                      (avx_ && Below(3) != 0 ? ZYDIS_REGISTER_YMM0 : ZYDIS_REGISTER_XMM0) +
                      Below(16))
                : Sized(kFree[Below(kFree.size())], Below(4) == 0 ? 1 << Below(4) : size);
      } else if (form < 6) {
        memory = true;
        o.type = ZYDIS_OPERAND_TYPE_MEMORY;
        const int bytes = avx_ && Below(2)      ? 32
                          : vector_ && Below(2) ? 16
                          : Below(4) == 0       ? 1 << Below(4)
                                                : size;
        if (mn == ZYDIS_MNEMONIC_LEA) {  // no access: any registers
          o.mem.base = kGpr64[kFree[Below(kFree.size())]];
          o.mem.index = Below(2) ? kGpr64[kFree[Below(kFree.size())]] : ZYDIS_REGISTER_NONE;
          o.mem.scale = static_cast<ZyanU8>(o.mem.index == ZYDIS_REGISTER_NONE ? 0 : 1 << Below(4));
          o.mem.displacement = static_cast<ZyanI64>(static_cast<int32_t>(Next()));
        } else {
          o.mem.base = ZYDIS_REGISTER_RBX;
          // Legacy SSE's 16-byte operands must be aligned (or the CPU faults).
          o.mem.displacement = static_cast<ZyanI64>(
              bytes >= 16 ? bytes * Below(kBufferBytes / bytes) : Below(kBufferBytes - bytes + 1));
        }
        o.mem.size = static_cast<ZyanU16>(bytes);
      } else {
        o.type = ZYDIS_OPERAND_TYPE_IMMEDIATE;
        const uint64_t kind = Below(3);
        o.imm.s = kind == 0   ? static_cast<ZyanI64>(Below(64))
                  : kind == 1 ? static_cast<ZyanI64>(static_cast<int32_t>(Next()))
                              : static_cast<ZyanI64>(Next());
      }
    }
    ZyanUSize length = out->bytes.size();
    if (!ZYAN_SUCCESS(ZydisEncoderEncodeInstruction(&req, out->bytes.data(), &length)))
      return false;
    // bt* with a register bit offset address memory anywhere: only immediates there.
    if (memory && req.operand_count == 2 && req.operands[1].type == ZYDIS_OPERAND_TYPE_REGISTER &&
        (mn == ZYDIS_MNEMONIC_BT || mn == ZYDIS_MNEMONIC_BTS || mn == ZYDIS_MNEMONIC_BTR ||
         mn == ZYDIS_MNEMONIC_BTC))
      return false;
    // XOP (AMD's TBM: bextr with an immediate) is gone from current CPUs and never modelled.
    if (out->bytes[0] == 0x8f) return false;
    out->length = static_cast<uint8_t>(length);
    out->mnemonic = mn;
    return true;
  }
  std::mt19937_64 rng_;
  bool vector_ = false;
  bool avx_ = false;
};

// What a block starts from and ends with.
struct State {
  std::array<uint64_t, 16> gpr{};
  uint64_t rflags = 0;
  std::array<std::array<uint8_t, kVectorBytes>, 16> xmm{};  // ymm0-15
};

// The page a block runs from: trampoline, block, epilogue. Its layout (offsets fixed per
// block): [entry] loads the state and jumps on; [block] the random instructions; then
// pushfq; pop r14; the fold of the buffer into r15; [exit] stores the registers and returns.
class Arena {
 public:
  Arena() {
    code_ = static_cast<uint8_t*>(mmap(nullptr, 4 * kPage, PROT_READ | PROT_WRITE | PROT_EXEC,
                                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    data_ = static_cast<uint8_t*>(
        mmap(nullptr, 4 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  }
  ~Arena() {
    munmap(code_, 4 * kPage);
    munmap(data_, 4 * kPage);
  }
  bool ok() const { return code_ != MAP_FAILED && data_ != MAP_FAILED; }
  uint8_t* buffer() const { return data_; }  // 128 bytes
  // The registers in and out: 16 general registers, rflags, then xmm0-15 (kXmmOffset).
  uint64_t* in() const { return reinterpret_cast<uint64_t*>(data_ + 1024); }
  uint64_t* out() const { return reinterpret_cast<uint64_t*>(data_ + 2048); }
  uint64_t* saved_rsp() const { return reinterpret_cast<uint64_t*>(data_ + 3072); }
  uint64_t stack_top() const { return reinterpret_cast<uint64_t>(data_ + 4 * kPage - 64); }
  uint64_t block_address() const { return reinterpret_cast<uint64_t>(code_) + kBlockOffset; }
  uint64_t exit_address() const { return exit_; }
  uint8_t* code() const { return code_; }
  bool Holds(uint64_t page) const {
    const auto c = reinterpret_cast<uint64_t>(code_), d = reinterpret_cast<uint64_t>(data_);
    return (page >= c && page < c + 4 * kPage) || (page >= d && page < d + 4 * kPage);
  }

  // Writes the trampoline, `block` and the epilogue; returns the instructions after the block
  // that both runs execute (pushfq, pop, the fold).
  // `probes`: after the fold, a test of one bit of each register and of the flags, each
  // followed by a jz over nothing, so that a window's branch events show those values (the
  // tracked check below); the exit then follows them.
  int Write(const std::vector<Instruction>& block, bool probes = false) {
    uint8_t* p = code_;
    auto emit = [&p](std::initializer_list<uint8_t> b) {
      for (uint8_t x : b) *p++ = x;
    };
    auto imm64 = [&p](uint64_t v) {
      std::memcpy(p, &v, 8);
      p += 8;
    };
    // Entry: save callee-saved registers and rsp, load the state, run the block.
    emit({0x53, 0x55, 0x41, 0x54, 0x41, 0x55, 0x41, 0x56, 0x41, 0x57});  // push rbx..r15
    emit({0x48, 0xb8}), imm64(reinterpret_cast<uint64_t>(saved_rsp()));  // mov rax, &saved
    emit({0x48, 0x89, 0x20});                                            // mov [rax], rsp
    emit({0x48, 0xb8}), imm64(reinterpret_cast<uint64_t>(in()));         // mov rax, in
    emit({0x48, 0x8b, 0x60, 8 * 4});                                     // mov rsp, [rax+32]
    emit({0xff, 0xb0}), imm32(p, 8 * 16);                                // push [rax+128]
    emit({0x9d});                                                        // popfq
    for (int r = 1; r < 16; ++r) {
      if (r == 4) continue;
      // mov r, [rax + 8r]
      emit({static_cast<uint8_t>(r >= 8 ? 0x4c : 0x48), 0x8b,
            static_cast<uint8_t>(0x40 | ((r & 7) << 3)), static_cast<uint8_t>(8 * r)});
    }
    for (int x = 0; x < 16; ++x) Ymm(p, 0x6f, x);  // vmovdqu ymm, [rax + kXmmOffset + 32x]
    emit({0x48, 0x8b, 0x00});                      // mov rax, [rax]
    std::memset(p, 0x90, static_cast<size_t>(code_ + kBlockOffset - p));  // nops to the block
    p = code_ + kBlockOffset;
    for (const Instruction& i : block) {
      std::memcpy(p, i.bytes.data(), i.length);
      p += i.length;
    }
    emit({0x9c, 0x41, 0x5e});  // pushfq; pop r14
    int extra = 2;
    // r15 = fold of the buffer: mov r15, [rbx]; then (rol r15, 13; add r15, [rbx+8k]).
    emit({0x4c, 0x8b, 0x3b});
    ++extra;
    for (int k = 1; k < kBufferBytes / 8; ++k) {
      emit({0x49, 0xc1, 0xc7, 13});                           // rol r15, 13
      emit({0x4c, 0x03, 0x7b, static_cast<uint8_t>(8 * k)});  // add r15, [rbx+8k]
      extra += 2;
    }
    if (probes) {
      // test r, imm32 (bit k of the register); jz +0: for rax..r15 but rbx and rsp, and for
      // r14's CF, PF, ZF, SF and OF bits.
      auto probe = [&](int r, uint32_t bit) {
        emit({static_cast<uint8_t>(r >= 8 ? 0x49 : 0x48), 0xf7,
              static_cast<uint8_t>(0xc0 | (r & 7))});
        imm32(p, bit);
        emit({0x74, 0x00});
        extra += 2;
      };
      for (int r = 0; r < 16; ++r)
        if (r != 3 && r != 4) probe(r, 1u << (r * 7 % 31));
      for (uint32_t flag : {0x1u, 0x4u, 0x40u, 0x80u, 0x800u}) probe(14, flag);
    }
    exit_ = reinterpret_cast<uint64_t>(p);
    // Exit: push rax; mov rax, out; store every register; rflags; restore and return.
    emit({0x50});
    emit({0x48, 0xb8}), imm64(reinterpret_cast<uint64_t>(out()));
    for (int r = 1; r < 16; ++r) {
      if (r == 4) continue;
      emit({static_cast<uint8_t>(r >= 8 ? 0x4c : 0x48), 0x89,
            static_cast<uint8_t>(0x40 | ((r & 7) << 3)), static_cast<uint8_t>(8 * r)});
    }
    for (int x = 0; x < 16; ++x) Ymm(p, 0x7f, x);  // vmovdqu [rax + kXmmOffset + 32x], ymm
    emit({0x59});                                  // pop rcx (rax's value)
    emit({0x48, 0x89, 0x08});                      // mov [rax], rcx
    emit({0x48, 0xb8}), imm64(reinterpret_cast<uint64_t>(saved_rsp()));
    emit({0x48, 0x8b, 0x20});                                                  // mov rsp, [rax]
    emit({0x41, 0x5f, 0x41, 0x5e, 0x41, 0x5d, 0x41, 0x5c, 0x5d, 0x5b, 0xc3});  // pop..; ret
    return extra;
  }

 private:
  static constexpr size_t kBlockOffset = 512;
  // vmovdqu between ymm`x` and [rax + kXmmOffset + 32x] (VEX.256.F3.0F): `op` 0x6f loads,
  // 0x7f stores.
  static void Ymm(uint8_t*& p, uint8_t op, int x) {
    *p++ = 0xc5;
    *p++ = static_cast<uint8_t>((x < 8 ? 0x80 : 0x00) | 0x78 | 0x04 | 0x02);
    *p++ = op;
    *p++ = static_cast<uint8_t>(0x80 | ((x & 7) << 3));
    imm32(p, static_cast<uint32_t>(kXmmOffset + kVectorBytes * x));
  }
  static void imm32(uint8_t*& p, uint32_t v) {
    std::memcpy(p, &v, 4);
    p += 4;
  }
  uint8_t* code_ = nullptr;
  uint8_t* data_ = nullptr;
  uint64_t exit_ = 0;
};

inline sigjmp_buf g_fault;
inline void OnFault(int sig) {
  siglongjmp(g_fault, sig);
}

// Runs the arena's code natively from `s`; false when it faulted (*sig says how).
inline bool RunNative(const Arena& a, const State& s, State* out, int* sig) {
  std::memcpy(a.in(), s.gpr.data(), 8 * 16);
  a.in()[4] = a.stack_top();
  a.in()[16] = s.rflags;
  std::memcpy(reinterpret_cast<uint8_t*>(a.in()) + kXmmOffset, s.xmm.data(), sizeof s.xmm);
  if ((*sig = sigsetjmp(g_fault, 1)) != 0) return false;
  reinterpret_cast<void (*)()>(a.code())();
  std::memcpy(out->gpr.data(), a.out(), 8 * 16);
  std::memcpy(out->xmm.data(), reinterpret_cast<uint8_t*>(a.out()) + kXmmOffset, sizeof out->xmm);
  out->gpr[4] = a.stack_top();
  return true;
}

// The emulator's guest: this process's arena pages, read directly.
class ArenaGuest : public Guest {
 public:
  explicit ArenaGuest(const Arena& a) : arena_(a) {}
  bool ReadPage(uint64_t page, uint8_t* out, bool* stable) override {
    *stable = false;
    if (!arena_.Holds(page)) return false;
    std::memcpy(out, reinterpret_cast<const void*>(page), kPage);
    return true;
  }
  // The xmm registers the trampoline loads (the rest of each zmm, and the opmasks, zero).
  bool LoadVectorState(CpuState* state) override {
    for (int x = 0; x < 32; ++x) state->zmm[x].fill(0);
    for (int x = 0; x < 16; ++x)
      std::memcpy(state->zmm[x].data(),
                  reinterpret_cast<const uint8_t*>(arena_.in()) + kXmmOffset + kVectorBytes * x,
                  kVectorBytes);
    state->k.fill(0);
    return true;
  }

 private:
  const Arena& arena_;
};

// The arena as a snapshot that holds part of it (Guest::Partial): the buffer bytes `unheld`
// marks and the registers `unheld_registers` names are unknown and read as `poison`.
class PartialArenaGuest : public ArenaGuest {
 public:
  PartialArenaGuest(const Arena& a, const std::array<bool, kBufferBytes>& unheld,
                    uint16_t unheld_registers, bool vector_state, uint8_t poison)
      : ArenaGuest(a),
        arena_(a),
        unheld_(unheld),
        registers_(unheld_registers),
        vector_state_(vector_state),
        poison_(poison) {}
  bool ReadPage(uint64_t page, uint8_t* out, bool* stable) override {
    if (!ArenaGuest::ReadPage(page, out, stable)) return false;
    if (page == BufferPage())
      for (int i = 0; i < kBufferBytes; ++i)
        if (unheld_[i]) out[i] = poison_;
    return true;
  }
  bool LoadVectorState(CpuState* state) override {
    if (vector_state_) return ArenaGuest::LoadVectorState(state);
    for (auto& z : state->zmm) z.fill(poison_);
    return false;
  }
  bool Partial() override { return true; }
  bool UnheldBytes(uint64_t page, uint8_t* unheld) override {
    if (page != BufferPage()) return false;
    for (int i = 0; i < kBufferBytes; ++i) unheld[i] = unheld_[i];
    return true;
  }
  uint16_t UnheldRegisters() override { return registers_; }

 private:
  uint64_t BufferPage() const { return reinterpret_cast<uint64_t>(arena_.buffer()); }
  const Arena& arena_;
  std::array<bool, kBufferBytes> unheld_;
  uint16_t registers_;
  bool vector_state_;
  uint8_t poison_;
};

// Tracking unknown bytes (emulator/src/unknown_bytes.h) on the block: run over the whole arena
// and twice over a partial one (what it does not hold reading 0x00, then 0xff), with probes
// of every register and flag after it. The two partial windows must be equal and agree with
// the whole one as far as they go: an unknown value that reached a probe unseen would steer
// one of them elsewhere. Returns false on a disagreement; *taken: the partial window's taken
// branches (how far tracking let it go).
inline bool TrackedAgrees(Arena& a, const std::vector<Instruction>& block, const State& start,
                          const std::vector<uint8_t>& buffer,
                          const std::array<bool, kBufferBytes>& unheld, uint16_t unheld_registers,
                          bool vector_state, uint32_t* taken) {
  const int extra = a.Write(block, true);
  std::memcpy(a.buffer(), buffer.data(), buffer.size());
  std::memcpy(reinterpret_cast<uint8_t*>(a.in()) + kXmmOffset, start.xmm.data(), sizeof start.xmm);
  EmulatorLimits limits;
  limits.window_taken = 1000;
  limits.max_instructions = block.size() + static_cast<uint64_t>(extra);
  auto state = [&](int poison) {
    CpuState s;
    s.gpr = start.gpr;
    for (int r = 0; r < 16; ++r)
      if (poison >= 0 && (unheld_registers >> r) & 1) s.gpr[r] = poison ? ~0ull : 0;
    s.gpr[3] = reinterpret_cast<uint64_t>(a.buffer());
    s.gpr[4] = a.stack_top();
    s.rflags = start.rflags;
    s.rip = a.block_address();
    return s;
  };
  ArenaGuest whole(a);
  const EmulatedWindow full = WindowEmulator(limits).Run(state(-1), whole);
  std::array<EmulatedWindow, 2> partial;
  for (int k = 0; k < 2; ++k) {
    PartialArenaGuest g(a, unheld, unheld_registers, vector_state, k ? 0xff : 0x00);
    partial[k] = WindowEmulator(limits).Run(state(k), g);
  }
  *taken = partial[0].taken;
  if (partial[0].events != partial[1].events) return false;
  if (partial[0].events.size() > full.events.size()) return false;
  for (size_t i = 0; i < partial[0].events.size(); ++i)
    if (!(partial[0].events[i] == full.events[i])) return false;
  return true;
}

struct Totals {
  uint64_t instructions = 0, blocks = 0, compared_blocks = 0;
  uint64_t native_faults = 0;
  // Tracked (TrackedAgrees): blocks checked, those whose partial windows disagreed (by the
  // first instruction of the block whose prefix disagrees), and the probes' taken branches.
  uint64_t tracked_blocks = 0, tracked_taken = 0, tracked_probes = 0;
  std::map<std::string, uint64_t> tracked_disagreements;
  std::map<std::string, uint64_t> early_ends;   // reason (mnemonic) -> blocks
  std::map<std::string, uint64_t> faults_by;    // the faulting instruction -> blocks
  std::map<std::string, uint64_t> divergences;  // mnemonic -> blocks
  std::map<std::string, uint64_t> generated;    // mnemonic -> instructions
  std::vector<std::string> examples;
};

inline std::string Hex(const Instruction& i) {
  std::string s;
  char b[4];
  for (int k = 0; k < i.length; ++k) std::snprintf(b, sizeof b, "%02x", i.bytes[k]), s += b;
  return s;
}

// Whether the first `n` instructions of `block` run the same natively and emulated (or the
// emulator ends early). *early: it ended early.
inline bool Same(Arena& a, const std::vector<Instruction>& block, size_t n, const State& start,
                 const std::vector<uint8_t>& buffer, bool* early, std::string* why, bool* faulted) {
  const std::vector<Instruction> prefix(block.begin(), block.begin() + static_cast<long>(n));
  const int extra = a.Write(prefix);
  std::memcpy(a.buffer(), buffer.data(), buffer.size());
  CpuState s;
  s.gpr = start.gpr;
  s.gpr[3] = reinterpret_cast<uint64_t>(a.buffer());
  s.gpr[4] = a.stack_top();
  s.rflags = start.rflags;
  s.rip = a.block_address();
  std::memcpy(reinterpret_cast<uint8_t*>(a.in()) + kXmmOffset, start.xmm.data(),
              sizeof start.xmm);  // what the guest's vector state reads
  ArenaGuest guest(a);
  // The window ends after the block and what follows it: that many instructions exactly.
  const uint64_t want = n + static_cast<uint64_t>(extra);
  EmulatorLimits limits;
  limits.window_taken = 1;  // a block has no branch
  limits.max_instructions = want;
  WindowEmulator emulator(limits);
  const EmulatedWindow w = emulator.Run(s, guest);
  *early = false;
  *faulted = false;
  if (w.end != EmulationEnd::kInstructionLimit || w.instructions != want ||
      w.end_address != a.exit_address()) {
    *early = true;
    *why = std::string(EmulationEndName(w.end));
    if (w.mnemonic) *why += " " + std::string(MnemonicName(w.mnemonic));
  }
  State native_in;
  native_in.gpr = s.gpr;
  native_in.rflags = s.rflags;
  native_in.xmm = start.xmm;
  State native;
  int sig = 0;
  if (!RunNative(a, native_in, &native, &sig)) {
    *faulted = true;
    return true;
  }
  if (*early) return true;
  for (int r = 0; r < 16; ++r) {
    uint64_t e = w.state.gpr[r], n2 = native.gpr[r];
    if (r == 14) e &= kArithmeticFlags, n2 &= kArithmeticFlags;
    if (e != n2) return false;
  }
  if (w.state.vector_loaded)
    for (int x = 0; x < 16; ++x)
      if (std::memcmp(w.state.zmm[x].data(), native.xmm[x].data(), kVectorBytes) != 0) return false;
  return true;
}

// What this CPU lacks of what the drawn instructions and the trampoline (ymm moves) need, by
// name; empty when it has all.
inline std::string MissingCpuFeatures() {
  std::string missing;
  if (!__builtin_cpu_supports("avx2")) missing += " avx2";
  if (!__builtin_cpu_supports("bmi")) missing += " bmi";
  if (!__builtin_cpu_supports("bmi2")) missing += " bmi2";
  if (!__builtin_cpu_supports("lzcnt")) missing += " lzcnt";
  if (!__builtin_cpu_supports("adx")) missing += " adx";
  if (!__builtin_cpu_supports("popcnt")) missing += " popcnt";
  if (!__builtin_cpu_supports("sse4.1")) missing += " sse4.1";
  if (!__builtin_cpu_supports("ssse3")) missing += " ssse3";
  return missing;
}

// Runs blocks drawn from `seed` until `wanted` random instructions ran, adding to `t`. False
// when the arena cannot be mapped.
inline bool RunBlocks(uint64_t wanted, uint64_t seed, Totals& t) {
  Generator gen(seed);
  Arena arena;
  if (!arena.ok()) return false;
  struct sigaction sa {};
  sa.sa_handler = OnFault;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_NODEFER;
  // The handler runs on the private stack the block uses: an alternate one is not needed.
  struct sigaction old[4];
  const int signals[4] = {SIGSEGV, SIGILL, SIGFPE, SIGBUS};
  for (int k = 0; k < 4; ++k) sigaction(signals[k], &sa, &old[k]);
  while (t.instructions < wanted) {
    {
      std::vector<Instruction> block(kBlock);
      for (Instruction& i : block) i = gen.Draw();
      State start;
      for (uint64_t& g : start.gpr) g = gen.Next() >> (gen.Next() % 64);
      start.rflags = 0x202 | (gen.Next() & kArithmeticFlags & ~0x400ull);  // DF clear
      for (auto& x : start.xmm)
        for (uint8_t& b : x) b = static_cast<uint8_t>(gen.Next());
      std::vector<uint8_t> buffer(kBufferBytes);
      for (uint8_t& b : buffer) b = static_cast<uint8_t>(gen.Next());
      bool early = false, faulted = false;
      std::string why;
      const bool same = Same(arena, block, block.size(), start, buffer, &early, &why, &faulted);
      ++t.blocks;
      t.instructions += block.size();
      for (const Instruction& i : block)
        ++t.generated[MnemonicName(static_cast<uint16_t>(i.mnemonic)).data()];
      if (faulted) {
        // The first instruction whose prefix faults natively, by mnemonic.
        size_t lo = 0, hi = block.size();
        while (hi - lo > 1) {
          const size_t mid = (lo + hi) / 2;
          bool e = false, f = false;
          std::string w;
          Same(arena, block, mid, start, buffer, &e, &w, &f);
          (f ? hi : lo) = mid;
        }
        ++t.native_faults;
        ++t.faults_by[std::string(MnemonicName(static_cast<uint16_t>(block[hi - 1].mnemonic))) +
                      " " + Hex(block[hi - 1])];
        continue;
      }
      if (early) {
        ++t.early_ends[why];
        continue;
      }
      ++t.compared_blocks;
      if (same) {
        // Tracking: part of the buffer and of the registers unheld, the vector state too in
        // every other block.
        std::array<bool, kBufferBytes> unheld{};
        const uint64_t chunk = gen.Next() % (kBufferBytes / 16);  // one 16-byte piece
        for (uint64_t i = 0; i < 16; ++i) unheld[chunk * 16 + i] = true;
        uint16_t registers = 0;
        for (int r : kFree)
          if (gen.Next() % 12 == 0) registers |= static_cast<uint16_t>(1u << r);
        const bool vector_state = (t.blocks & 1) != 0;
        uint32_t taken = 0;
        ++t.tracked_blocks;
        if (TrackedAgrees(arena, block, start, buffer, unheld, registers, vector_state, &taken)) {
          t.tracked_taken += taken;
          t.tracked_probes += 19;
          continue;
        }
        size_t lo = 0, hi = block.size();  // prefix lo agrees, prefix hi does not
        while (hi - lo > 1) {
          const size_t mid = (lo + hi) / 2;
          const std::vector<Instruction> prefix(block.begin(),
                                                block.begin() + static_cast<long>(mid));
          uint32_t k = 0;
          (TrackedAgrees(arena, prefix, start, buffer, unheld, registers, vector_state, &k) ? lo
                                                                                            : hi) =
              mid;
        }
        const std::string name(MnemonicName(static_cast<uint16_t>(block[hi - 1].mnemonic)));
        if (++t.tracked_disagreements[name] <= 2) {
          std::string prefix;
          for (size_t i = 0; i < hi; ++i) prefix += Hex(block[i]) + " ";
          char regs[64];
          std::snprintf(regs, sizeof regs, " (unheld registers %#x%s)", registers,
                        vector_state ? "" : ", vector state");
          t.examples.push_back("tracked: " + name + " " + Hex(block[hi - 1]) + regs + " after " +
                               prefix);
        }
        continue;
      }
      // The first instruction whose prefix differs.
      size_t lo = 0, hi = block.size();  // prefix lo is the same, prefix hi differs
      while (hi - lo > 1) {
        const size_t mid = (lo + hi) / 2;
        bool e = false, f = false;
        std::string w;
        if (Same(arena, block, mid, start, buffer, &e, &w, &f) || e || f)
          lo = mid;
        else
          hi = mid;
      }
      const Instruction& culprit = block[hi - 1];
      const std::string name(MnemonicName(static_cast<uint16_t>(culprit.mnemonic)));
      if (++t.divergences[name] <= 2) t.examples.push_back(name + " " + Hex(culprit));
    }
  }
  for (int k = 0; k < 4; ++k) sigaction(signals[k], &old[k], nullptr);
  return true;
}

}  // namespace pathprof::emulator::differential
