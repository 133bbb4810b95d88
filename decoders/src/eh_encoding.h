// DW_EH_PE_* pointer encodings, as .eh_frame and .eh_frame_hdr use them: the sizes of their
// fixed formats, shared by the readers of those sections (code names, the CFI checks).
#pragma once

#include <dwarf.h>

#include <cstddef>
#include <cstdint>

namespace pathprof::decoders {

// Bytes of a value in `encoding`'s format (absptr is 8 bytes on x86-64); 0 for LEB128 and
// unknown formats, which neither reader skips.
inline size_t EncodedSize(uint8_t encoding) {
  switch (encoding & 0x0f) {
    case DW_EH_PE_udata2:
    case DW_EH_PE_sdata2:
      return 2;
    case DW_EH_PE_udata4:
    case DW_EH_PE_sdata4:
      return 4;
    case DW_EH_PE_absptr:
    case DW_EH_PE_udata8:
    case DW_EH_PE_sdata8:
      return 8;
    default:
      return 0;
  }
}

}  // namespace pathprof::decoders
