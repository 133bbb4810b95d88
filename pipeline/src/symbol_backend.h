// Where SymbolService's readers of others' bytes run: libdw over an image's symbol table, DWARF
// and CFI (decoders::Symbolizer, decoders::CfiUnwinder). In this process for a user's own
// pathctl; in the daemon, which runs as root (or holds capabilities), in pathprof-symbolizer, an
// unprivileged sandboxed helper (symbolizer_client.h), so that a crafted binary's DWARF or CFI
// that takes libdw over gets nobody's rights and a seccomp filter, not root's. SymbolService
// keeps what is not a parse of those bytes: finding and opening the images (with the
// requester's rights), their cache, and the mappings.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "pathprof/core/status.h"
#include "pathprof/decoders/cfi_unwinder.h"
#include "pathprof/decoders/elf_image.h"
#include "pathprof/decoders/symbolizer.h"
#include "pathprof/pipeline/symbol_service.h"

namespace pathprof::pipeline {

// The image behind a runtime address, as an unwind asks for it: the image and bias, and the
// mapping's range [start, end) the same answer holds for (a helper asks once per mapping).
struct UnwindMapping {
  decoders::UnwindImage at;
  uint64_t start = 0;
  uint64_t end = 0;
};
using UnwindMappingAt = std::function<UnwindMapping(uint64_t address)>;

class SymbolBackend {
 public:
  virtual ~SymbolBackend() = default;
  // decoders::Symbolizer::Symbolize when `lines`, else FunctionOf (the symbol table only).
  virtual Result<decoders::Symbolization> Symbolize(
      const std::shared_ptr<const decoders::ElfImage>& image, uint64_t vaddr,
      const std::string& debug_file, bool lines) = 0;
  // decoders::CfiUnwinder::Unwind of a stack of process `pid` (a key for what earlier unwinds
  // of it learnt; `mapping_at` is still asked whether that holds).
  virtual decoders::UnwindResult Unwind(uint32_t pid, std::span<const uint64_t> regs,
                                        uint64_t stack_start, std::span<const uint8_t> stack,
                                        const UnwindMappingAt& mapping_at) = 0;
  // Drops what was built from `image` (the image cache evicted it); ForgetAll drops everything.
  virtual void Forget(const decoders::ElfImage* image) = 0;
  virtual void ForgetAll() = 0;
  // The helper's counts and running pid; none for libdw in this process.
  virtual SymbolHelperStats HelperStats() const { return {}; }
  virtual int HelperPid() const { return 0; }
};

// libdw in this process.
std::unique_ptr<SymbolBackend> InProcessSymbolBackend();

}  // namespace pathprof::pipeline
