// The vector instruction families: each vector_*.cc file adds its mnemonics to one table that
// ExecuteVector (vector_ops.cc) dispatches through.
#pragma once

#include <Zydis/Zydis.h>

#include <initializer_list>

#include "machine.h"
#include "mnemonic_table.h"

namespace pathprof::emulator {

using VectorHandler = InstructionHandler;

class VectorHandlers {
 public:
  struct Entry {
    VectorHandler handler = nullptr;
    // vpblendm*, vblendm*: their opmask picks a source. Every other handler takes the opmask
    // as a writemask, so an instruction Zydis gives a control mask is left unmodelled there.
    bool control_mask = false;
    // Rounds or raises by mxcsr (the floating-point families): a window that could not load
    // the vector state does not know its result (unknown_bytes.h).
    bool floating_point = false;
  };
  void Add(std::initializer_list<ZydisMnemonic> mnemonics, VectorHandler handler) {
    for (ZydisMnemonic mn : mnemonics) table_.Set(mn, Entry{handler, false});
  }
  void AddFloatingPoint(std::initializer_list<ZydisMnemonic> mnemonics, VectorHandler handler) {
    for (ZydisMnemonic mn : mnemonics) table_.Set(mn, Entry{handler, false, true});
  }
  void AddWithControlMask(std::initializer_list<ZydisMnemonic> mnemonics, VectorHandler handler) {
    for (ZydisMnemonic mn : mnemonics) table_.Set(mn, Entry{handler, true});
  }
  const Entry& Find(uint16_t mnemonic) const { return table_.Find(mnemonic); }

 private:
  MnemonicTable<Entry> table_;
};

void AddVectorMoves(VectorHandlers& t);               // vector_moves.cc
void AddVectorIntegerOps(VectorHandlers& t);          // vector_integer.cc
void AddVectorCompares(VectorHandlers& t);            // vector_compare.cc
void AddVectorShuffles(VectorHandlers& t);            // vector_shuffles.cc
void AddVectorBlends(VectorHandlers& t);              // vector_blends.cc
void AddMaskRegisterOps(VectorHandlers& t);           // mask_registers.cc
void AddStringCompares(VectorHandlers& t);            // vector_string_compare.cc
void AddFloatingPointOps(VectorHandlers& t);          // vector_fp.cc
void AddFloatingPointConversions(VectorHandlers& t);  // vector_fp_convert.cc
void AddX87ControlOps(VectorHandlers& t);             // vector_x87_control.cc
void AddCarrylessMultiply(VectorHandlers& t);         // vector_carryless.cc

}  // namespace pathprof::emulator
