// Symbolization of image virtual addresses with libdw (dwfl, offline reporting of the ELF at
// bias 0, so callers pass vaddr = runtime - load bias): function + offset, inline frames and
// file:line, C++ names demangled. Results are cached per (image, address); symbolization happens
// when a result is reported, not per event.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "pathprof/core/status.h"
#include "pathprof/decoders/elf_image.h"

namespace pathprof::decoders {

struct SourceFrame {
  std::string function;  // demangled; empty when unknown
  std::string file;
  int line = 0;
};

struct Symbolization {
  // The demangled ELF symbol containing the address; without one, the name the image proves
  // (`memcmp@plt`, `_start`, `main`: decoders/src/code_names.h) or else `image+0xSTART` after
  // the unwind entry (FDE) covering it; empty when there is none of these.
  std::string function;
  uint64_t offset = 0;             // address - symbol start
  uint64_t function_size = 0;      // the extent of an unnamed function (PLT entry, FDE); 0: unknown
  bool from_unwind_entry = false;  // `function` is the image+0xSTART name of an FDE
  // `function` comes from code_names.h (a PLT entry, _start, main, an FDE), not from a symbol
  // table: a symbolizer holding the unstripped file would name the address on its own.
  bool without_symbol = false;
  std::string file;  // innermost source position
  int line = 0;
  // Innermost first: frames[0] is the code at the address (maybe inlined), the last is the
  // out-of-line function. Has one entry when there is no inlining, none without debug info.
  std::vector<SourceFrame> frames;

  // "func+0x1a (file.c:12)" style, for reports.
  std::string ToString() const;
};

// abi::__cxa_demangle, falling back to the input for non-C++ names.
std::string Demangle(const std::string& name);

class Symbolizer {
 public:
  Symbolizer();
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // `debug_file` (optional) holds separate DWARF for `image` (e.g. from ImageStore::FindDebugFile):
  // opened by its path, or where `debug_fd` >= 0 read from that descriptor (a helper is handed
  // the file open; the descriptor stays the caller's).
  Result<Symbolization> Symbolize(const std::shared_ptr<const ElfImage>& image, uint64_t vaddr,
                                  const std::string& debug_file = "", int debug_fd = -1);

  // The function (name, offset, size): what a session's ingest needs per new frame. Reads the
  // symbol table, never the DWARF (source lines are there only if Symbolize read them before).
  Result<Symbolization> FunctionOf(const std::shared_ptr<const ElfImage>& image, uint64_t vaddr,
                                   const std::string& debug_file = "", int debug_fd = -1);

  // Drops what is held for `image` (the image cache evicted it).
  void Forget(const ElfImage* image);
  // Times every module was dropped at the bound on modules held.
  uint64_t modules_dropped() const { return modules_dropped_; }

  // Distinct addresses whose nearest symbol was a data object (never named after it).
  uint64_t data_symbols_refused() const { return data_symbols_refused_; }
  // Distinct addresses without a symbol, named `image+0xSTART` after their unwind entry (FDE).
  uint64_t unwind_entry_names() const { return unwind_entry_names_; }
  // Distinct addresses without a symbol named by what the image proves (PLT entry, _start, main).
  uint64_t proved_names() const { return proved_names_; }

 private:
  struct Module;
  struct Cached;
  void NameUnsymbolized(Module* m, uint64_t vaddr, Symbolization* s);
  Cached& FunctionPart(Module* m, uint64_t vaddr);
  Result<Module*> ModuleFor(const std::shared_ptr<const ElfImage>& image,
                            const std::string& debug_file, int debug_fd);

  static constexpr size_t kMaxModules = 1024;
  std::map<const ElfImage*, std::unique_ptr<Module>> modules_;
  uint64_t modules_dropped_ = 0;
  uint64_t data_symbols_refused_ = 0;
  uint64_t unwind_entry_names_ = 0;
  uint64_t proved_names_ = 0;
};

}  // namespace pathprof::decoders
