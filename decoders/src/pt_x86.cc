#include "pathprof/decoders/pt_x86.h"

#include <Zydis/Zydis.h>

namespace pathprof::decoders {
namespace {

const ZydisDecoder& Decoder64() {
  static const ZydisDecoder decoder = [] {
    ZydisDecoder d;
    ZydisDecoderInit(&d, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
    return d;
  }();
  return decoder;
}

}  // namespace

bool DecodeX86(const uint8_t* bytes, size_t size, uint64_t ip, X86Insn* out) {
  ZydisDecodedInstruction insn;
  // No context: operands are not needed; the relative immediate gives direct targets.
  if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&Decoder64(), nullptr, bytes, size, &insn)))
    return false;
  *out = X86Insn{};
  out->length = insn.length;
  out->repeats = (insn.attributes &
                  (ZYDIS_ATTRIB_HAS_REP | ZYDIS_ATTRIB_HAS_REPE | ZYDIS_ATTRIB_HAS_REPNE)) != 0;
  const bool relative = insn.raw.imm[0].is_relative;
  const bool far = insn.meta.branch_type == ZYDIS_BRANCH_TYPE_FAR;
  auto set_direct = [&] {
    out->has_target = true;
    out->target = ip + insn.length + static_cast<uint64_t>(insn.raw.imm[0].value.s);
  };
  switch (insn.meta.category) {
    case ZYDIS_CATEGORY_COND_BR:
      out->is_branch = true;
      out->kind = BranchKind::kConditional;
      set_direct();
      break;
    case ZYDIS_CATEGORY_UNCOND_BR:
      out->is_branch = true;
      if (far) {
        out->kind = BranchKind::kFarTransfer;
      } else if (relative) {
        out->kind = BranchKind::kDirectJump;
        set_direct();
      } else {
        out->kind = BranchKind::kIndirectJump;
      }
      break;
    case ZYDIS_CATEGORY_CALL:
      out->is_branch = true;
      if (far) {
        out->kind = BranchKind::kFarTransfer;
      } else if (relative) {
        out->kind = BranchKind::kDirectCall;
        set_direct();
      } else {
        out->kind = BranchKind::kIndirectCall;
      }
      break;
    case ZYDIS_CATEGORY_RET:
      out->is_branch = true;
      out->kind = (far || insn.mnemonic != ZYDIS_MNEMONIC_RET) ? BranchKind::kFarTransfer
                                                               : BranchKind::kReturn;
      break;
    case ZYDIS_CATEGORY_SYSCALL:
    case ZYDIS_CATEGORY_SYSRET:
    case ZYDIS_CATEGORY_INTERRUPT:
      out->is_branch = true;
      out->kind = BranchKind::kFarTransfer;
      break;
    default:
      break;
  }
  return true;
}

}  // namespace pathprof::decoders
