// The kernel's function symbols (/proc/kallsyms text symbols), sorted by address, for naming
// kernel frames. Private to pipeline/src: SymbolService owns the one table and reads it when a
// kernel frame is first named.
//
// Read line by line and kept compact, in memory populated ahead of its use: the table is 120k
// symbols and 3 MB of names. Built from the whole 5.4 MB file read into a string grown by
// doubling, with 40-byte views grown by doubling, it took 5,807 page faults, which cost ~19 us
// each on a PVM guest: most of the 140-179 ms that naming the first kernel frame took, about a
// third of a short `pathctl run`'s CPU. Here each part is one reservation of address space
// whose pages are populated 1 MiB at a time by one call (MADV_POPULATE_WRITE), and entries are
// 16 bytes: 54 ms and 1,280 faults (bench/kernel_symbols_bench).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pathprof/core/procfs.h"

namespace pathprof::pipeline {

struct KernelSymbol {
  uint64_t address = 0;
  std::string_view name;
  std::string_view module;  // empty for the kernel image itself; "[...]" stripped
};

// Anonymous memory reserved up to a bound and populated ahead of each append in 1 MiB steps;
// what was reserved and never populated is given back when the table is complete.
class PopulatedArena {
 public:
  explicit PopulatedArena(size_t max_bytes = 0);
  PopulatedArena(PopulatedArena&& other) noexcept;
  PopulatedArena& operator=(PopulatedArena&& other) noexcept;
  PopulatedArena(const PopulatedArena&) = delete;
  PopulatedArena& operator=(const PopulatedArena&) = delete;
  ~PopulatedArena();

  // Room for `bytes` more at the end; nullptr past the bound (or with no reservation).
  char* Append(size_t bytes);
  // Returns the reservation past what was used (rounded up to a page).
  void Trim();
  char* data() const { return base_; }
  size_t size() const { return used_; }

 private:
  char* base_ = nullptr;
  size_t reserved_ = 0;
  size_t populated_ = 0;
  size_t used_ = 0;
};

class KernelSymbolTable {
 public:
  // Bounds on what is read (a kernel's table is a few MB, its lines under 600 bytes).
  static constexpr size_t kMaxBytes = size_t{64} << 20;
  static constexpr size_t kMaxLineBytes = 4096;

  // `procfs`'s kallsyms. Empty when it cannot be read, is too large, or shows every address as 0
  // (kptr_restrict without CAP_SYSLOG): kernel frames then stay addresses.
  static KernelSymbolTable Read(const procfs::Procfs& procfs);

  // The symbol at or below `address`; nullopt below the first. Its views live as long as the
  // table.
  std::optional<KernelSymbol> Find(uint64_t address) const;
  size_t size() const { return entries_.size() / sizeof(Entry); }

 private:
  struct Entry {
    uint64_t address;
    uint32_t name_offset;  // into names_
    uint16_t name_bytes;   // a line is at most kMaxLineBytes
    uint16_t module;       // index into modules_ plus one; 0: the kernel image
  };
  static_assert(sizeof(Entry) == 16);
  const Entry* begin() const { return reinterpret_cast<const Entry*>(entries_.data()); }
  const Entry* end() const { return begin() + size(); }

  PopulatedArena entries_;
  PopulatedArena names_;
  std::vector<std::string> modules_;  // a few hundred at most; found by a scan from the last
};

}  // namespace pathprof::pipeline
