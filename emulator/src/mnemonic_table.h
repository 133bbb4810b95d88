// A table from Zydis mnemonic to what executes it, filled once when first used: each
// instruction family's file adds its own mnemonics, every mnemonic in one place, and dispatch is
// one lookup. The integer families (integer_handlers.h) and the vector ones (vector_handlers.h)
// each have one.
#pragma once

#include <Zydis/Zydis.h>

#include <array>
#include <cstdint>

#include "machine.h"

namespace pathprof::emulator {

using InstructionHandler = Step (*)(Machine& m, const DecodedInstruction& d);

template <typename Entry>
class MnemonicTable {
 public:
  void Set(ZydisMnemonic mnemonic, const Entry& entry) { table_[mnemonic] = entry; }
  // A value-initialized Entry (no handler) for a mnemonic nobody added.
  const Entry& Find(uint16_t mnemonic) const {
    static const Entry none{};
    return mnemonic < table_.size() ? table_[mnemonic] : none;
  }

 private:
  std::array<Entry, ZYDIS_MNEMONIC_MAX_VALUE + 1> table_{};
};

}  // namespace pathprof::emulator
