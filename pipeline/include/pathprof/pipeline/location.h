// A code location as every pipeline result reports it: symbolized when the result is read (not
// when the sample arrived), from the target's mappings kept by its ProfileStore, so a process that
// has exited still symbolizes. Mirrors pathprof.v1.Location.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pathprof::pipeline {

struct Location {
  uint64_t address = 0;  // runtime address in the target (kernel addresses for kernel frames)
  std::string function;  // demangled; empty when unknown
  uint64_t offset = 0;   // address - function start
  std::string file;      // innermost source position; empty without debug info
  uint32_t line = 0;
  std::string image;     // the mapped file ("[kernel.kallsyms]" for kernel frames)
  std::string build_id;  // lower-case hex, empty when the image has none
  // `function` is not a symbol's: the image has none for the address, and the name is what the
  // image proves (a PLT entry `memcmp@plt`, `_start`, `main`) or the unwind entry covering it
  // (image+0xSTART). The pprof export keeps the name but does not mark the mapping symbolized,
  // so that a backend holding the unstripped file or its debug info can name it.
  bool name_without_symbol = false;
  // The extent of such a function (its unwind entry, its PLT entry):
  // [address - offset, + function_size); 0 when unknown or named by a symbol.
  uint64_t function_size = 0;
  // The mapping the address lies in (runtime start and end, file offset of start); all 0 when
  // no mapping covers it. pprof, Parca and Pyroscope need these to symbolize what we could not.
  uint64_t map_start = 0;
  uint64_t map_limit = 0;
  uint64_t map_offset = 0;
  // Inline frames, innermost first (the code at the address, then the functions it was inlined
  // into); empty when nothing is inlined or there is no debug info.
  std::vector<Location> inlined_by;

  // "func+0x1a (file.c:12)", "0x7f12... (libfoo.so)" when unknown.
  std::string ToString() const;
};

}  // namespace pathprof::pipeline
