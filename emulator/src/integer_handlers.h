// The integer instruction families: each integer_*.cc file adds its mnemonics to one table that
// ExecuteInteger (integer_ops.cc) dispatches through, as the vector families do
// (vector_handlers.h). A mnemonic is named once, where its handler is added.
#pragma once

#include <Zydis/Zydis.h>

#include <initializer_list>

#include "machine.h"
#include "mnemonic_table.h"

namespace pathprof::emulator {

class IntegerHandlers {
 public:
  void Add(std::initializer_list<ZydisMnemonic> mnemonics, InstructionHandler handler) {
    for (ZydisMnemonic mn : mnemonics) table_.Set(mn, handler);
  }
  InstructionHandler Find(uint16_t mnemonic) const { return table_.Find(mnemonic); }

 private:
  MnemonicTable<InstructionHandler> table_;
};

void AddIntegerDataOps(IntegerHandlers& t);      // integer_ops.cc: moves, arithmetic, flags
void AddIntegerControlOps(IntegerHandlers& t);   // integer_control.cc: stack, jumps, conditions
void AddStringOps(IntegerHandlers& t);           // integer_strings.cc: movs, stos, lods, cmps, scas
void AddHostFlaggedOps(IntegerHandlers& t);      // integer_host_flags.cc: undefined flags
void AddBitManipulationOps(IntegerHandlers& t);  // integer_bit_manipulation.cc: pdep, mulx, adcx

}  // namespace pathprof::emulator
