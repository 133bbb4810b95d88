#include "instruction_costs.h"

#include "pathprof/decoders/x86_idioms.h"

#include <array>
#include <string_view>

namespace pathprof::decoders {
namespace {

using C = InstructionClass;

// Zen 3 / Zen 4: four integer ALU pipes, two branch units, three address generation units (up
// to three loads a cycle; stores reach the L1 one a cycle, which timed loops on the reference
// host confirm: two stores to different lines per iteration take two cycles), one multiplier,
// one integer divider; four FP/vector pipes, of which two multiply (and FMA), two add and
// convert, two shuffle, one divides.
constexpr std::array<double, static_cast<size_t>(Unit::kCount)> kUnitsPerCycle = {
    1e9,  // kNone: never a bound
    4,    // kAlu
    2,    // kBranch
    3,    // kLoad
    1,    // kStore: one store commits to the L1 per cycle
    1,    // kMultiplier
    1,    // kDivider
    1,    // kAtomic
    4,    // kVectorAlu
    2,    // kVectorShuffle
    2,    // kFloatAdd
    2,    // kFloatMul
    1,    // kFloatDivider
};

constexpr std::array<const char*, static_cast<size_t>(Unit::kCount)> kUnitNames = {
    "none",          "alu",    "branch",     "load",           "store",     "multiplier",
    "divider",       "atomic", "vector alu", "vector shuffle", "float add", "float multiply",
    "float divider",
};

// The table: one row per class, in InstructionClass order. Latencies are the common case of
// the class on Zen 3 / Zen 4 (see the header for where they come from); occupancy above 1 is a
// unit that is not pipelined (dividers) or is held by microcode (locked operations, fences).
// clang-format off
constexpr std::array<ClassCost, static_cast<size_t>(C::kCount)> kCosts = {{
    // class                 name                       latency dispatch unit        occupancy
    {C::kUnknown,            "unknown",                 0,  1, Unit::kNone,          0},
    {C::kNop,                "nop",                     0,  1, Unit::kNone,          0},
    {C::kZeroIdiom,          "zero idiom",              0,  1, Unit::kNone,          0},
    {C::kEliminatedMove,     "eliminated move",         0,  1, Unit::kNone,          0},
    {C::kOnesIdiom,          "all-ones idiom",          1,  1, Unit::kVectorAlu,     1},
    {C::kMove,               "move",                    1,  1, Unit::kAlu,           1},
    {C::kMoveImmediate64,    "move, 64-bit immediate",  1,  1, Unit::kAlu,           2},
    {C::kIntAlu,             "integer alu",             1,  1, Unit::kAlu,           1},
    {C::kIntAluSlow,         "integer alu, 2 cycles",   2,  2, Unit::kAlu,           1},
    {C::kIntMultiply,        "integer multiply",        3,  1, Unit::kMultiplier,    1},
    {C::kIntMultiplyWide,    "integer multiply, wide",  4,  2, Unit::kMultiplier,    2},
    // The divider's latency and issue interval grow with the quotient's significant bits; these
    // are mid-range operands (timed on the reference host: 32-bit divides issue every 6 cycles
    // with a 9-10 cycle latency, 64-bit ones every 7-13 cycles).
    {C::kIntDivide,          "integer divide",          10, 2, Unit::kDivider,       6},
    {C::kIntDivide64,        "integer divide, 64-bit",  13, 2, Unit::kDivider,       9},
    {C::kBranch,             "branch",                  1,  1, Unit::kBranch,        1},
    {C::kCallReturn,         "call/return",             1,  2, Unit::kBranch,        1},
    {C::kPushPop,            "push/pop",                0,  1, Unit::kNone,          0},
    {C::kAtomic,             "atomic",                  2,  4, Unit::kAtomic,        7},
    {C::kFence,              "fence",                   0,  4, Unit::kAtomic,        20},
    {C::kPrefetch,           "prefetch",                0,  1, Unit::kNone,          0},
    {C::kVectorInt,          "vector integer",          1,  1, Unit::kVectorAlu,     1},
    {C::kVectorShuffle,      "vector shuffle",          1,  1, Unit::kVectorShuffle, 1},
    {C::kVectorCrossLane,    "vector cross-lane",       3,  1, Unit::kVectorShuffle, 1},
    {C::kVectorIntMultiply,  "vector integer multiply", 3,  1, Unit::kFloatMul,      1},
    {C::kFloatAdd,           "float add",               3,  1, Unit::kFloatAdd,      1},
    {C::kFloatMultiply,      "float multiply",          3,  1, Unit::kFloatMul,      1},
    {C::kVectorCrypto,       "vector crypto",           4,  1, Unit::kFloatMul,      1},
    {C::kFloatFma,           "float fma",               4,  1, Unit::kFloatMul,      1},
    {C::kFloatConvert,       "float convert",           3,  1, Unit::kFloatAdd,      1},
    // Timed on the reference host: 7 cycles from a GPR to an xmm register and back.
    {C::kGprVectorMove,      "gpr/vector move",         4,  1, Unit::kFloatAdd,      1},
    {C::kFloatDivide,        "float divide",            10, 1, Unit::kFloatDivider,  3.5},
    {C::kFloatDivide64,      "float divide, double",    13, 1, Unit::kFloatDivider,  4.5},
    {C::kFloatSqrt,          "float sqrt",              14, 1, Unit::kFloatDivider,  5},
    {C::kFloatSqrt64,        "float sqrt, double",      20, 1, Unit::kFloatDivider,  8.5},
    {C::kX87,                "x87",                     5,  1, Unit::kFloatAdd,      1},
    {C::kX87Slow,            "x87 divide/sqrt",         15, 1, Unit::kFloatDivider,  6},
}};
// clang-format on

constexpr bool RowsInClassOrder() {
  for (size_t i = 0; i < kCosts.size(); ++i)
    if (static_cast<size_t>(kCosts[i].cls) != i) return false;
  return true;
}
static_assert(RowsInClassOrder(), "kCosts must list the classes in InstructionClass order");

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}
bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
bool AnyPrefix(std::string_view s, std::initializer_list<std::string_view> prefixes) {
  for (std::string_view p : prefixes)
    if (StartsWith(s, p)) return true;
  return false;
}
bool Contains(std::string_view s, std::string_view part) {
  return s.find(part) != s.npos;
}
bool Single(std::string_view s) {
  return EndsWith(s, "ps") || EndsWith(s, "ss") || EndsWith(s, "ph");
}

// SSE/AVX/AVX-512 instructions by name: there are hundreds, and their names follow a grammar
// (operation, then ps/pd/ss/sd or the p-prefixed integer forms) that says their class more
// readably than a list would. `name` is without the VEX/EVEX `v`.
InstructionClass VectorClassByName(std::string_view name) {
  if (name == "zeroupper" || name == "zeroall" || name == "emms") return C::kNop;
  if (Contains(name, "gather") || Contains(name, "scatter")) return C::kUnknown;
  if (AnyPrefix(name, {"fmadd", "fmsub", "fnmadd", "fnmsub"})) return C::kFloatFma;
  if (StartsWith(name, "div")) return Single(name) ? C::kFloatDivide : C::kFloatDivide64;
  if (StartsWith(name, "sqrt")) return Single(name) ? C::kFloatSqrt : C::kFloatSqrt64;
  if (AnyPrefix(name, {"rcp", "rsqrt", "mul"})) return C::kFloatMultiply;
  if (AnyPrefix(name, {"aes", "pclmul", "gf2p8", "sha"})) return C::kVectorCrypto;
  if (AnyPrefix(name, {"dpp"})) return C::kFloatFma;
  if (AnyPrefix(name, {"pcmpistr", "pcmpestr", "mpsadbw"})) return C::kVectorIntMultiply;
  if (AnyPrefix(name, {"pmul", "pmadd", "psadbw", "pdpb", "pdpw"})) return C::kVectorIntMultiply;
  if (StartsWith(name, "cvt")) return C::kFloatConvert;  // GPR forms: see ClassOf
  if (AnyPrefix(name, {"add", "sub", "min", "max", "cmp", "hadd", "hsub", "round", "comi", "ucomi",
                       "range", "reduce", "getexp", "getmant", "fixupimm", "scalef"}))
    return C::kFloatAdd;
  if (AnyPrefix(name, {"pmovmsk", "movmsk", "ptest", "testp", "pextr", "extractps", "pinsr"}))
    return C::kGprVectorMove;
  if (AnyPrefix(name, {"permil"})) return C::kVectorShuffle;
  if (AnyPrefix(name,
                {"perm", "vperm", "insertf", "inserti", "extractf", "extracti", "broadcast",
                 "pbroadcast", "compress", "expand", "pcompress", "pexpand", "pconflict", "align"}))
    return C::kVectorCrossLane;
  if (AnyPrefix(name,
                {"pshuf", "punpck",   "unpck",   "pack",       "palignr",  "pslldq",   "psrldq",
                 "shuf",  "insertps", "movhlps", "movlhps",    "movshdup", "movsldup", "movddup",
                 "psll",  "psrl",     "psra",    "pmovzx",     "pmovsx",   "pmov",     "prol",
                 "pror",  "pshld",    "pshrd",   "pmultishift"}))
    return C::kVectorShuffle;
  if (AnyPrefix(name, {"mov", "lddqu", "maskmov", "pmaskmov"})) return C::kMove;
  return C::kVectorInt;  // padd/psub/pand/por/pxor/pcmp/pmin/pmax/pabs/pavg, logic, blends
}

// Integer and x87 instructions: the ones the table knows. Anything else has no fixed cost
// here (system and privileged instructions, cpuid, rdtsc, pause, ...).
InstructionClass ScalarClass(ZydisMnemonic m) {
  switch (m) {
    case ZYDIS_MNEMONIC_MOV:
    case ZYDIS_MNEMONIC_MOVZX:
    case ZYDIS_MNEMONIC_MOVSX:
    case ZYDIS_MNEMONIC_MOVSXD:
    case ZYDIS_MNEMONIC_MOVNTI:
      return C::kMove;
    case ZYDIS_MNEMONIC_ADD:
    case ZYDIS_MNEMONIC_SUB:
    case ZYDIS_MNEMONIC_ADC:
    case ZYDIS_MNEMONIC_SBB:
    case ZYDIS_MNEMONIC_AND:
    case ZYDIS_MNEMONIC_OR:
    case ZYDIS_MNEMONIC_XOR:
    case ZYDIS_MNEMONIC_NOT:
    case ZYDIS_MNEMONIC_NEG:
    case ZYDIS_MNEMONIC_INC:
    case ZYDIS_MNEMONIC_DEC:
    case ZYDIS_MNEMONIC_CMP:
    case ZYDIS_MNEMONIC_TEST:
    case ZYDIS_MNEMONIC_SHL:
    case ZYDIS_MNEMONIC_SHR:
    case ZYDIS_MNEMONIC_SAR:
    case ZYDIS_MNEMONIC_ROL:
    case ZYDIS_MNEMONIC_ROR:
    case ZYDIS_MNEMONIC_RCL:
    case ZYDIS_MNEMONIC_RCR:
    case ZYDIS_MNEMONIC_BT:
    case ZYDIS_MNEMONIC_BTC:
    case ZYDIS_MNEMONIC_BTR:
    case ZYDIS_MNEMONIC_BTS:
    case ZYDIS_MNEMONIC_BSWAP:
    case ZYDIS_MNEMONIC_POPCNT:
    case ZYDIS_MNEMONIC_LZCNT:
    case ZYDIS_MNEMONIC_TZCNT:
    case ZYDIS_MNEMONIC_ANDN:
    case ZYDIS_MNEMONIC_BEXTR:
    case ZYDIS_MNEMONIC_BLSI:
    case ZYDIS_MNEMONIC_BLSMSK:
    case ZYDIS_MNEMONIC_BLSR:
    case ZYDIS_MNEMONIC_BZHI:
    case ZYDIS_MNEMONIC_SARX:
    case ZYDIS_MNEMONIC_SHLX:
    case ZYDIS_MNEMONIC_SHRX:
    case ZYDIS_MNEMONIC_RORX:
    case ZYDIS_MNEMONIC_CDQ:
    case ZYDIS_MNEMONIC_CQO:
    case ZYDIS_MNEMONIC_CWD:
    case ZYDIS_MNEMONIC_CBW:
    case ZYDIS_MNEMONIC_CWDE:
    case ZYDIS_MNEMONIC_CDQE:
    case ZYDIS_MNEMONIC_CLC:
    case ZYDIS_MNEMONIC_STC:
    case ZYDIS_MNEMONIC_CMC:
    case ZYDIS_MNEMONIC_CLD:
    case ZYDIS_MNEMONIC_STD:
    case ZYDIS_MNEMONIC_LAHF:
    case ZYDIS_MNEMONIC_SAHF:
    case ZYDIS_MNEMONIC_ADCX:
    case ZYDIS_MNEMONIC_ADOX:
    case ZYDIS_MNEMONIC_MOVBE:
    case ZYDIS_MNEMONIC_LEA:
    case ZYDIS_MNEMONIC_BSF:
    case ZYDIS_MNEMONIC_BSR:
      return C::kIntAlu;
    case ZYDIS_MNEMONIC_SHLD:
    case ZYDIS_MNEMONIC_SHRD:
    case ZYDIS_MNEMONIC_XCHG:
    case ZYDIS_MNEMONIC_XADD:
    case ZYDIS_MNEMONIC_CMPXCHG:
    case ZYDIS_MNEMONIC_FNSTSW:
      return C::kIntAluSlow;
    case ZYDIS_MNEMONIC_IMUL:  // the one-operand form is wide: see ClassOf
    case ZYDIS_MNEMONIC_PDEP:
    case ZYDIS_MNEMONIC_PEXT:
    case ZYDIS_MNEMONIC_CRC32:
      return C::kIntMultiply;
    case ZYDIS_MNEMONIC_MUL:
    case ZYDIS_MNEMONIC_MULX:
      return C::kIntMultiplyWide;
    case ZYDIS_MNEMONIC_DIV:
    case ZYDIS_MNEMONIC_IDIV:
      return C::kIntDivide;
    case ZYDIS_MNEMONIC_LEAVE:
      return C::kPushPop;
    case ZYDIS_MNEMONIC_MFENCE:
    case ZYDIS_MNEMONIC_LFENCE:
    case ZYDIS_MNEMONIC_SFENCE:
      return C::kFence;
    case ZYDIS_MNEMONIC_ENDBR64:
    case ZYDIS_MNEMONIC_ENDBR32:
    case ZYDIS_MNEMONIC_FNOP:
      return C::kNop;
    // x87: loads, stores and constants are moves; exchanges are renamed.
    case ZYDIS_MNEMONIC_FLD:
    case ZYDIS_MNEMONIC_FST:
    case ZYDIS_MNEMONIC_FSTP:
    case ZYDIS_MNEMONIC_FILD:
    case ZYDIS_MNEMONIC_FIST:
    case ZYDIS_MNEMONIC_FISTP:
    case ZYDIS_MNEMONIC_FISTTP:
    case ZYDIS_MNEMONIC_FLDZ:
    case ZYDIS_MNEMONIC_FLD1:
      return C::kMove;
    case ZYDIS_MNEMONIC_FXCH:
      return C::kEliminatedMove;
    case ZYDIS_MNEMONIC_FDIV:
    case ZYDIS_MNEMONIC_FDIVP:
    case ZYDIS_MNEMONIC_FDIVR:
    case ZYDIS_MNEMONIC_FDIVRP:
    case ZYDIS_MNEMONIC_FIDIV:
    case ZYDIS_MNEMONIC_FIDIVR:
    case ZYDIS_MNEMONIC_FSQRT:
      return C::kX87Slow;
    case ZYDIS_MNEMONIC_FADD:
    case ZYDIS_MNEMONIC_FADDP:
    case ZYDIS_MNEMONIC_FIADD:
    case ZYDIS_MNEMONIC_FSUB:
    case ZYDIS_MNEMONIC_FSUBP:
    case ZYDIS_MNEMONIC_FSUBR:
    case ZYDIS_MNEMONIC_FSUBRP:
    case ZYDIS_MNEMONIC_FISUB:
    case ZYDIS_MNEMONIC_FISUBR:
    case ZYDIS_MNEMONIC_FMUL:
    case ZYDIS_MNEMONIC_FMULP:
    case ZYDIS_MNEMONIC_FIMUL:
    case ZYDIS_MNEMONIC_FCHS:
    case ZYDIS_MNEMONIC_FABS:
    case ZYDIS_MNEMONIC_FCOM:
    case ZYDIS_MNEMONIC_FCOMP:
    case ZYDIS_MNEMONIC_FCOMPP:
    case ZYDIS_MNEMONIC_FCOMI:
    case ZYDIS_MNEMONIC_FCOMIP:
    case ZYDIS_MNEMONIC_FUCOM:
    case ZYDIS_MNEMONIC_FUCOMP:
    case ZYDIS_MNEMONIC_FUCOMPP:
    case ZYDIS_MNEMONIC_FUCOMI:
    case ZYDIS_MNEMONIC_FUCOMIP:
    case ZYDIS_MNEMONIC_FTST:
    case ZYDIS_MNEMONIC_FXAM:
    case ZYDIS_MNEMONIC_FCMOVB:
    case ZYDIS_MNEMONIC_FCMOVBE:
    case ZYDIS_MNEMONIC_FCMOVE:
    case ZYDIS_MNEMONIC_FCMOVNB:
    case ZYDIS_MNEMONIC_FCMOVNBE:
    case ZYDIS_MNEMONIC_FCMOVNE:
    case ZYDIS_MNEMONIC_FCMOVNU:
    case ZYDIS_MNEMONIC_FCMOVU:
      return C::kX87;
    default:
      return C::kUnknown;
  }
}

// Vector classes per mnemonic, worked out from the names once (there are ~1,700 mnemonics).
const std::array<InstructionClass, ZYDIS_MNEMONIC_MAX_VALUE + 1>& VectorClasses() {
  static const auto table = [] {
    std::array<InstructionClass, ZYDIS_MNEMONIC_MAX_VALUE + 1> t{};
    for (int m = 0; m <= ZYDIS_MNEMONIC_MAX_VALUE; ++m) {
      const char* s = ZydisMnemonicGetString(static_cast<ZydisMnemonic>(m));
      std::string_view name = s ? s : "";
      // The VEX/EVEX forms are the legacy names with a `v` (vaddps); "v"-words of their own
      // (vzeroupper, vperm*, vbroadcast*, vinsert*) are matched either way.
      if (StartsWith(name, "v")) name.remove_prefix(1);
      t[static_cast<size_t>(m)] = VectorClassByName(name);
    }
    return t;
  }();
  return table;
}

bool IsVectorRegister(ZydisRegister r) {
  switch (ZydisRegisterGetClass(r)) {
    case ZYDIS_REGCLASS_XMM:
    case ZYDIS_REGCLASS_YMM:
    case ZYDIS_REGCLASS_ZMM:
    case ZYDIS_REGCLASS_MMX:
    case ZYDIS_REGCLASS_MASK:
      return true;
    default:
      return false;
  }
}

bool IsGpr(ZydisRegister r) {
  switch (ZydisRegisterGetClass(r)) {
    case ZYDIS_REGCLASS_GPR8:
    case ZYDIS_REGCLASS_GPR16:
    case ZYDIS_REGCLASS_GPR32:
    case ZYDIS_REGCLASS_GPR64:
      return true;
    default:
      return false;
  }
}

// Full-register copies the renamer performs by pointing the destination at the source's
// physical register (Zen, and Intel since Ivy Bridge; Ice Lake's microcode turned it off for
// general-purpose registers, where such a move costs 1 cycle instead).
bool IsEliminableMove(ZydisMnemonic m) {
  switch (m) {
    case ZYDIS_MNEMONIC_MOV:
    case ZYDIS_MNEMONIC_MOVAPS:
    case ZYDIS_MNEMONIC_MOVAPD:
    case ZYDIS_MNEMONIC_MOVUPS:
    case ZYDIS_MNEMONIC_MOVUPD:
    case ZYDIS_MNEMONIC_MOVDQA:
    case ZYDIS_MNEMONIC_MOVDQU:
    case ZYDIS_MNEMONIC_VMOVAPS:
    case ZYDIS_MNEMONIC_VMOVAPD:
    case ZYDIS_MNEMONIC_VMOVUPS:
    case ZYDIS_MNEMONIC_VMOVUPD:
    case ZYDIS_MNEMONIC_VMOVDQA:
    case ZYDIS_MNEMONIC_VMOVDQU:
    case ZYDIS_MNEMONIC_VMOVDQA32:
    case ZYDIS_MNEMONIC_VMOVDQA64:
    case ZYDIS_MNEMONIC_VMOVDQU8:
    case ZYDIS_MNEMONIC_VMOVDQU16:
    case ZYDIS_MNEMONIC_VMOVDQU32:
    case ZYDIS_MNEMONIC_VMOVDQU64:
      return true;
    default:
      return false;
  }
}

// The visible register operands, in order (at most 4).
int VisibleRegisters(const ZydisDecodedInstruction& insn, const ZydisDecodedOperand* operands,
                     ZydisRegister* regs) {
  int n = 0;
  for (int i = 0; i < insn.operand_count_visible && n < 4; ++i)
    if (operands[i].type == ZYDIS_OPERAND_TYPE_REGISTER) regs[n++] = operands[i].reg.value;
  return n;
}

bool HasMemoryOperand(const ZydisDecodedInstruction& insn, const ZydisDecodedOperand* operands) {
  for (int i = 0; i < insn.operand_count_visible; ++i)
    if (operands[i].type == ZYDIS_OPERAND_TYPE_MEMORY &&
        operands[i].mem.type != ZYDIS_MEMOP_TYPE_AGEN)
      return true;
  return false;
}

bool HasGprOperand(const ZydisDecodedInstruction& insn, const ZydisDecodedOperand* operands) {
  for (int i = 0; i < insn.operand_count_visible; ++i)
    if (operands[i].type == ZYDIS_OPERAND_TYPE_REGISTER && IsGpr(operands[i].reg.value))
      return true;
  return false;
}

bool HasVectorOperand(const ZydisDecodedInstruction& insn, const ZydisDecodedOperand* operands) {
  for (int i = 0; i < insn.operand_count_visible; ++i)
    if (operands[i].type == ZYDIS_OPERAND_TYPE_REGISTER && IsVectorRegister(operands[i].reg.value))
      return true;
  return false;
}

// lea with all three of base, index and displacement takes two cycles; fewer, one.
InstructionClass LeaClass(const ZydisDecodedOperand& address) {
  const bool base = address.mem.base != ZYDIS_REGISTER_NONE;
  const bool index = address.mem.index != ZYDIS_REGISTER_NONE;
  const bool disp = address.mem.disp.has_displacement && address.mem.disp.value != 0;
  return base && index && disp ? C::kIntAluSlow : C::kIntAlu;
}

}  // namespace

double UnitsPerCycle(Unit unit) {
  return kUnitsPerCycle[static_cast<size_t>(unit)];
}
const char* UnitName(Unit unit) {
  return kUnitNames[static_cast<size_t>(unit)];
}
const ClassCost& CostOf(InstructionClass cls) {
  return kCosts[static_cast<size_t>(cls)];
}

InstructionClass ClassOf(const ZydisDecodedInstruction& insn, const ZydisDecodedOperand* operands) {
  switch (insn.meta.category) {
    case ZYDIS_CATEGORY_COND_BR:
    case ZYDIS_CATEGORY_UNCOND_BR:
      return insn.meta.branch_type == ZYDIS_BRANCH_TYPE_FAR ? C::kUnknown : C::kBranch;
    case ZYDIS_CATEGORY_CALL:
    case ZYDIS_CATEGORY_RET:
      return insn.meta.branch_type == ZYDIS_BRANCH_TYPE_FAR ? C::kUnknown : C::kCallReturn;
    case ZYDIS_CATEGORY_PUSH:
    case ZYDIS_CATEGORY_POP:
      return C::kPushPop;
    case ZYDIS_CATEGORY_NOP:
    case ZYDIS_CATEGORY_WIDENOP:
      return C::kNop;
    case ZYDIS_CATEGORY_PREFETCH:
      return C::kPrefetch;
    case ZYDIS_CATEGORY_SETCC:
    case ZYDIS_CATEGORY_CMOV:
      return C::kIntAlu;
    case ZYDIS_CATEGORY_STRINGOP:
      // Repeated, its time is the count in rcx, which the model cannot see.
      if (insn.attributes & (ZYDIS_ATTRIB_HAS_REP | ZYDIS_ATTRIB_HAS_REPE | ZYDIS_ATTRIB_HAS_REPNE))
        return C::kUnknown;
      return C::kIntAluSlow;
    case ZYDIS_CATEGORY_GATHER:
    case ZYDIS_CATEGORY_AVX2GATHER:
    case ZYDIS_CATEGORY_SCATTER:
      return C::kUnknown;  // microcoded, one load per element: no single figure
    default:
      break;
  }
  if (insn.attributes & ZYDIS_ATTRIB_HAS_LOCK) return C::kAtomic;
  ZydisRegister regs[4];
  const int reg_count = VisibleRegisters(insn, operands, regs);
  const bool memory = HasMemoryOperand(insn, operands);
  if (insn.mnemonic == ZYDIS_MNEMONIC_XCHG && memory) return C::kAtomic;  // implicitly locked

  // Two sources that are one register: the last two registers of `xor r, r` or `vpxor x, y, y`.
  if (IsDependencyBreakingIdiom(static_cast<uint16_t>(insn.mnemonic)) && !memory &&
      reg_count >= 2 && regs[reg_count - 1] == regs[reg_count - 2]) {
    const bool zero =
        insn.mnemonic != ZYDIS_MNEMONIC_PCMPEQB && insn.mnemonic != ZYDIS_MNEMONIC_PCMPEQW &&
        insn.mnemonic != ZYDIS_MNEMONIC_PCMPEQD && insn.mnemonic != ZYDIS_MNEMONIC_VPCMPEQB &&
        insn.mnemonic != ZYDIS_MNEMONIC_VPCMPEQW && insn.mnemonic != ZYDIS_MNEMONIC_VPCMPEQD;
    return zero ? C::kZeroIdiom : C::kOnesIdiom;
  }
  if (IsEliminableMove(insn.mnemonic) && !memory && reg_count == 2 && regs[0] != regs[1] &&
      insn.operand_count_visible == 2) {
    const ZydisRegisterClass to = ZydisRegisterGetClass(regs[0]);
    const ZydisRegisterClass from = ZydisRegisterGetClass(regs[1]);
    if (to == from &&
        (to == ZYDIS_REGCLASS_GPR64 || to == ZYDIS_REGCLASS_GPR32 || to == ZYDIS_REGCLASS_XMM ||
         to == ZYDIS_REGCLASS_YMM || to == ZYDIS_REGCLASS_ZMM))
      return C::kEliminatedMove;
  }

  if (HasVectorOperand(insn, operands) && insn.meta.category != ZYDIS_CATEGORY_X87_ALU) {
    InstructionClass cls = VectorClasses()[insn.mnemonic];
    // Conversions and moves that cross between the integer and vector register files.
    if ((cls == C::kFloatConvert || cls == C::kMove) && HasGprOperand(insn, operands))
      return C::kGprVectorMove;
    // A register-to-register move that is not a full copy merges (movss x, x; movq x, x).
    if (cls == C::kMove && !memory) return C::kVectorShuffle;
    // A broadcast from memory is done by the load itself.
    if (cls == C::kVectorCrossLane && memory &&
        std::string_view(ZydisMnemonicGetString(insn.mnemonic)).find("broadcast") !=
            std::string_view::npos)
      return C::kMove;
    return cls;
  }
  InstructionClass cls = ScalarClass(insn.mnemonic);
  switch (insn.mnemonic) {
    case ZYDIS_MNEMONIC_IMUL:
      return insn.operand_count_visible == 1 ? C::kIntMultiplyWide : C::kIntMultiply;
    case ZYDIS_MNEMONIC_DIV:
    case ZYDIS_MNEMONIC_IDIV:
      return insn.operand_width == 64 ? C::kIntDivide64 : C::kIntDivide;
    case ZYDIS_MNEMONIC_LEA:
      for (int i = 0; i < insn.operand_count_visible; ++i)
        if (operands[i].type == ZYDIS_OPERAND_TYPE_MEMORY) return LeaClass(operands[i]);
      return cls;
    case ZYDIS_MNEMONIC_MOV:
      for (int i = 0; i < insn.operand_count_visible; ++i)
        if (operands[i].type == ZYDIS_OPERAND_TYPE_IMMEDIATE && operands[i].size == 64 &&
            insn.raw.imm[0].size == 64)
          return C::kMoveImmediate64;
      return cls;
    default:
      return cls;
  }
}

}  // namespace pathprof::decoders
