// Turns runtime addresses of a process into Locations at query time: user addresses through the
// process's mappings (kept by its ProfileStore, so exited processes still symbolize), the ELF
// image behind them (decoders::ImageStore) and libdw (decoders::Symbolizer); kernel addresses
// through /proc/kallsyms. One instance is shared by every ProfileStore of a SessionManager; it is
// thread-safe (an internal mutex: libdw handles are not).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>

#include "pathprof/decoders/address_space.h"
#include "pathprof/decoders/cfi_unwinder.h"
#include "pathprof/decoders/elf_image.h"
#include "pathprof/decoders/image_store.h"
#include "pathprof/pipeline/location.h"

namespace pathprof::pipeline {

// Where libdw reads the binaries' symbol tables, DWARF and CFI: in this process (a user's own
// pathctl), or in pathprof-symbolizer, an unprivileged sandboxed helper (the daemon, which runs
// with privilege: a crafted binary that takes libdw over must not get it).
enum class SymbolizeIn { kThisProcess, kHelper };

// What the helper did (SymbolizeIn::kHelper): starts, requests, images handed over, and the
// requests it failed by reason ("start", "died", "timeout", "malformed", "restart_refused", "send":
// an image that could not be handed over).
struct SymbolHelperStats {
  uint64_t starts = 0;
  uint64_t requests = 0;
  uint64_t images_sent = 0;
  std::map<std::string, uint64_t> failures;
  // Unwinds done by the frame-pointer chain here because the helper failed them.
  uint64_t frame_pointer_fallbacks = 0;
};

class SymbolService {
 public:
  SymbolService();
  // Images found as `options` say (e.g. a --binary-dir for recordings from another host).
  explicit SymbolService(const decoders::ImageStoreOptions& options,
                         SymbolizeIn where = SymbolizeIn::kThisProcess);
  ~SymbolService();
  SymbolService(const SymbolService&) = delete;
  SymbolService& operator=(const SymbolService&) = delete;

  // Symbolizes `address` of the process whose mappings are `space` (`pid` only for the vdso).
  Location Symbolize(uint32_t pid, const decoders::AddressSpace& space, uint64_t address);
  // Whether Symbolize reads source lines (file, line, inline frames) from the images' DWARF; on
  // unless turned off. A report that prints function names only turns them off: the first line
  // read of an image decompresses and indexes its DWARF (a debug file's .debug_info), which was
  // most of a short run's report. Names, offsets and images are the same either way.
  void SetSourceLines(bool on);
  // The runtime entry address of the function holding `address`, for keying profiles by
  // function; `address` itself when no symbol covers it. Cached per (image, address).
  uint64_t FunctionStart(uint32_t pid, const decoders::AddressSpace& space, uint64_t address);

  // The code bytes at a user `address`, from the ELF image behind its mapping (to the end of its
  // segment); empty when no readable image backs it. `owner` keeps the bytes alive.
  struct Code {
    std::shared_ptr<const decoders::ElfImage> owner;
    std::span<const uint8_t> bytes;
  };
  Code CodeAt(uint32_t pid, const decoders::AddressSpace& space, uint64_t address);

  // The ELF image behind the file mapping `m` of `space`, found as every query finds it: a live
  // process's mapped file opened with the space's access rights (a confined session's
  // requester's), refused above the store's max_image_bytes, held in the shared cache so that
  // no query or export reads it again. The reason where there is none.
  Result<std::shared_ptr<const decoders::ElfImage>> MappedImage(const decoders::AddressSpace& space,
                                                                const decoders::Mapping& m);

  // Unwinds a sampled user stack with the images' DWARF CFI (frame pointers where an address has
  // none): `regs` in DWARF numbering, `stack` the user memory from `stack_start` up.
  decoders::UnwindResult UnwindUser(uint32_t pid, const decoders::AddressSpace& space,
                                    std::span<const uint64_t> regs, uint64_t stack_start,
                                    std::span<const uint8_t> stack);

  // Counts of the images behind symbolization: the (maybe shared) cache's bytes and evictions,
  // this service's lookups and refusals (too large, not permitted, not the mapped file).
  decoders::ImageCacheStats ImageCacheCounts() const;
  decoders::ImageStoreStats ImageStoreCounts() const;
  // The helper's counts; all zero with SymbolizeIn::kThisProcess.
  SymbolHelperStats HelperCounts() const;
  // The running helper's pid, 0 when none (tests read its /proc status).
  int HelperPid() const;

  // Kernel symbols from /proc/kallsyms (read once; addresses are zero without CAP_SYSLOG).
  Location SymbolizeKernel(uint64_t address);
  uint64_t KernelFunctionStart(uint64_t address);
  // Whether the kernel's table has been read: a store keys kernel frames by their addresses
  // until a query needs their functions (kernel_keys.h in pipeline/src says why).
  bool KernelSymbolsRead() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pathprof::pipeline
