// CodeMap over processes' address spaces: a runtime address -> its mapping -> the ELF image
// behind it (ImageStore) -> the executable segment (PT_LOAD) holding it, whose load bias turns
// runtime addresses into image virtual addresses.
#pragma once

#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

#include "pathprof/decoders/address_space.h"
#include "pathprof/decoders/image_store.h"
#include "pathprof/decoders/lbr_reconstruct.h"

namespace pathprof::decoders {

struct CodeMapStats {
  uint64_t mappings_resolved = 0;
  uint64_t mappings_without_image = 0;  // no file found, special or non-executable mapping
};

class ProcessCodeMap : public CodeMap {
 public:
  // perf records kernel mappings with pid -1; they are shared by every process.
  static constexpr uint32_t kKernelPid = 0xffffffffu;

  explicit ProcessCodeMap(ImageStore* store, bool read_live_vdso = false)
      : store_(store), read_live_vdso_(read_live_vdso) {}

  void AddMapping(uint32_t pid, Mapping m);
  void SetAddressSpace(uint32_t pid, AddressSpace space);
  // A forked child starts with its parent's mappings.
  void Fork(uint32_t parent, uint32_t child);

  const CodeRegion* Find(uint32_t pid, uint64_t addr) override;

  const AddressSpace* space(uint32_t pid) const;
  const CodeMapStats& stats() const { return stats_; }

 private:
  struct Process {
    AddressSpace space;
    // Executable regions resolved so far, keyed by mapping start; an empty vector caches "no
    // code here".
    std::map<uint64_t, std::vector<CodeRegion>> resolved;
    const CodeRegion* last = nullptr;
  };
  const CodeRegion* FindIn(uint32_t pid, Process& p, uint64_t addr);
  std::vector<CodeRegion> Resolve(uint32_t pid, const Mapping& m);

  ImageStore* store_;
  bool read_live_vdso_;
  std::unordered_map<uint32_t, Process> procs_;
  CodeMapStats stats_;
};

}  // namespace pathprof::decoders
