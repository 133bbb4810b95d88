#include "pathprof/decoders/x86_idioms.h"

#include <Zydis/Zydis.h>

namespace pathprof::decoders {

bool IsDependencyBreakingIdiom(uint16_t mnemonic) {
  switch (static_cast<ZydisMnemonic>(mnemonic)) {
    case ZYDIS_MNEMONIC_XOR:
    case ZYDIS_MNEMONIC_SUB:
    case ZYDIS_MNEMONIC_PXOR:
    case ZYDIS_MNEMONIC_VPXOR:
    case ZYDIS_MNEMONIC_VPXORD:
    case ZYDIS_MNEMONIC_VPXORQ:
    case ZYDIS_MNEMONIC_XORPS:
    case ZYDIS_MNEMONIC_VXORPS:
    case ZYDIS_MNEMONIC_XORPD:
    case ZYDIS_MNEMONIC_VXORPD:
    case ZYDIS_MNEMONIC_PSUBB:
    case ZYDIS_MNEMONIC_PSUBW:
    case ZYDIS_MNEMONIC_PSUBD:
    case ZYDIS_MNEMONIC_PSUBQ:
    case ZYDIS_MNEMONIC_VPSUBB:
    case ZYDIS_MNEMONIC_VPSUBW:
    case ZYDIS_MNEMONIC_VPSUBD:
    case ZYDIS_MNEMONIC_VPSUBQ:
    case ZYDIS_MNEMONIC_PCMPEQB:
    case ZYDIS_MNEMONIC_PCMPEQW:
    case ZYDIS_MNEMONIC_PCMPEQD:
    case ZYDIS_MNEMONIC_VPCMPEQB:
    case ZYDIS_MNEMONIC_VPCMPEQW:
    case ZYDIS_MNEMONIC_VPCMPEQD:
    case ZYDIS_MNEMONIC_PCMPGTB:
    case ZYDIS_MNEMONIC_PCMPGTW:
    case ZYDIS_MNEMONIC_PCMPGTD:
    case ZYDIS_MNEMONIC_VPCMPGTB:
    case ZYDIS_MNEMONIC_VPCMPGTW:
    case ZYDIS_MNEMONIC_VPCMPGTD:
      return true;
    default:
      return false;
  }
}

}  // namespace pathprof::decoders
