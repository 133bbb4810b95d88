#include "pathprof/decoders/x86_branch.h"

#include <Zydis/Zydis.h>

#include <cstdio>
#include <string>

#include "zydis_decoder.h"

namespace pathprof::decoders {

const ZydisDecoder& ZydisDecoder64() {
  static const ZydisDecoder decoder = [] {
    ZydisDecoder d;
    ZydisDecoderInit(&d, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
    return d;
  }();
  return decoder;
}

namespace {

// A relative immediate is what makes a jump or call "direct"; Zydis marks it in raw.imm.
bool RelativeTarget(const ZydisDecodedInstruction& insn, uint64_t address, uint64_t* target) {
  for (int i = 0; i < 2; ++i) {
    if (insn.raw.imm[i].size != 0 && insn.raw.imm[i].is_relative) {
      *target = address + insn.length + static_cast<uint64_t>(insn.raw.imm[i].value.s);
      return true;
    }
  }
  return false;
}

void Classify(const ZydisDecodedInstruction& insn, uint64_t address, X86Instruction* out) {
  uint64_t target = 0;
  const bool relative = RelativeTarget(insn, address, &target);
  const bool far = insn.meta.branch_type == ZYDIS_BRANCH_TYPE_FAR;
  auto set = [&](BranchKind kind, bool direct) {
    out->is_branch = true;
    out->kind = kind;
    out->has_direct_target = direct;
    out->direct_target = direct ? target : 0;
  };
  switch (insn.meta.category) {
    case ZYDIS_CATEGORY_COND_BR:  // jcc, jrcxz, loop/loope/loopne
      set(BranchKind::kConditional, relative);
      return;
    case ZYDIS_CATEGORY_UNCOND_BR:
      if (far) return set(BranchKind::kFarTransfer, false);
      return set(relative ? BranchKind::kDirectJump : BranchKind::kIndirectJump, relative);
    case ZYDIS_CATEGORY_CALL:
      if (far) return set(BranchKind::kFarTransfer, false);
      return set(relative ? BranchKind::kDirectCall : BranchKind::kIndirectCall, relative);
    case ZYDIS_CATEGORY_RET:
      // Zydis files iret and far ret here too; both leave the current privilege/code segment.
      if (far || insn.mnemonic == ZYDIS_MNEMONIC_IRET || insn.mnemonic == ZYDIS_MNEMONIC_IRETD ||
          insn.mnemonic == ZYDIS_MNEMONIC_IRETQ)
        return set(BranchKind::kFarTransfer, false);
      return set(BranchKind::kReturn, false);
    case ZYDIS_CATEGORY_SYSCALL:
    case ZYDIS_CATEGORY_SYSRET:
    case ZYDIS_CATEGORY_INTERRUPT:
      return set(BranchKind::kFarTransfer, false);
    default:
      break;
  }
  switch (insn.mnemonic) {
    case ZYDIS_MNEMONIC_SYSENTER:
    case ZYDIS_MNEMONIC_SYSEXIT:
    case ZYDIS_MNEMONIC_SYSCALL:
    case ZYDIS_MNEMONIC_SYSRET:
    case ZYDIS_MNEMONIC_INT:
    case ZYDIS_MNEMONIC_INT1:
    case ZYDIS_MNEMONIC_INT3:
    case ZYDIS_MNEMONIC_INTO:
    case ZYDIS_MNEMONIC_IRET:
    case ZYDIS_MNEMONIC_IRETD:
    case ZYDIS_MNEMONIC_IRETQ:
      return set(BranchKind::kFarTransfer, false);
    default:
      return;
  }
}

// Instructions that cause a VM exit on common hypervisors (always, or under common settings) and
// run from user mode: the ones whose single-step trap a buggy emulation can drop.
bool MayBeEmulated(ZydisMnemonic m) {
  switch (m) {
    case ZYDIS_MNEMONIC_CPUID:
    case ZYDIS_MNEMONIC_RDTSC:
    case ZYDIS_MNEMONIC_RDTSCP:
    case ZYDIS_MNEMONIC_RDPMC:
    case ZYDIS_MNEMONIC_RDRAND:
    case ZYDIS_MNEMONIC_RDSEED:
    case ZYDIS_MNEMONIC_RDPID:
    case ZYDIS_MNEMONIC_XGETBV:
    case ZYDIS_MNEMONIC_SGDT:
    case ZYDIS_MNEMONIC_SIDT:
    case ZYDIS_MNEMONIC_SLDT:
    case ZYDIS_MNEMONIC_SMSW:
    case ZYDIS_MNEMONIC_STR:
    case ZYDIS_MNEMONIC_PAUSE:
    case ZYDIS_MNEMONIC_MONITOR:
    case ZYDIS_MNEMONIC_MWAIT:
    case ZYDIS_MNEMONIC_UMONITOR:
    case ZYDIS_MNEMONIC_UMWAIT:
    case ZYDIS_MNEMONIC_TPAUSE:
    case ZYDIS_MNEMONIC_IN:
    case ZYDIS_MNEMONIC_OUT:
    case ZYDIS_MNEMONIC_INSB:
    case ZYDIS_MNEMONIC_INSW:
    case ZYDIS_MNEMONIC_INSD:
    case ZYDIS_MNEMONIC_OUTSB:
    case ZYDIS_MNEMONIC_OUTSW:
    case ZYDIS_MNEMONIC_OUTSD:
    case ZYDIS_MNEMONIC_VMCALL:
    case ZYDIS_MNEMONIC_VMMCALL:
      return true;
    default:
      return false;
  }
}

}  // namespace

bool DecodeX86Fast(const uint8_t* bytes, size_t size, uint64_t address, X86Instruction* out,
                   bool* truncated) {
  ZydisDecodedInstruction insn;
  ZydisDecoderContext ctx;
  const ZyanStatus st = ZydisDecoderDecodeInstruction(&ZydisDecoder64(), &ctx, bytes, size, &insn);
  if (truncated != nullptr) *truncated = st == ZYDIS_STATUS_NO_MORE_DATA;
  if (!ZYAN_SUCCESS(st)) return false;
  X86Instruction r;
  r.address = address;
  r.length = insn.length;
  Classify(insn, address, &r);
  r.may_be_emulated = MayBeEmulated(insn.mnemonic);
  *out = r;
  return true;
}

Result<X86Instruction> DecodeX86(std::span<const uint8_t> bytes, uint64_t address) {
  X86Instruction out;
  bool truncated = false;
  if (DecodeX86Fast(bytes.data(), bytes.size(), address, &out, &truncated)) return out;
  char where[64];
  std::snprintf(where, sizeof where, "0x%llx", static_cast<unsigned long long>(address));
  if (truncated || bytes.empty()) {
    return Error(ErrorCode::kTruncated, std::string("x86 decode at ") + where + ": only " +
                                            std::to_string(bytes.size()) +
                                            " bytes available; pass up to 15 bytes");
  }
  std::string hex;
  for (size_t i = 0; i < bytes.size() && i < kX86MaxInstructionLength; ++i) {
    char b[4];
    std::snprintf(b, sizeof b, "%02x", bytes[i]);
    if (i) hex += ' ';
    hex += b;
  }
  return Error(ErrorCode::kCorrupt, std::string("x86 decode at ") + where +
                                        ": invalid instruction bytes [" + hex +
                                        "]; wrong image or not code");
}

}  // namespace pathprof::decoders
