// The target's memory as one window sees it: pages read on demand through the Guest, stores
// kept in the window's own copies (never written back), and the pages that do not change
// (read-only file-backed) kept across windows.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "pathprof/emulator/window_emulator.h"

namespace pathprof::emulator {

using PageBytes = std::array<uint8_t, Guest::kPageSize>;

// Pages that do not change while the target runs, kept until the target execs (bounded).
class StablePages {
 public:
  explicit StablePages(uint32_t max_pages) : max_pages_(max_pages) {}
  const PageBytes* Find(uint64_t page) const {
    auto it = pages_.find(page);
    return it == pages_.end() ? nullptr : it->second.get();
  }
  // Keeps a copy; starts over (counted) when full.
  const PageBytes* Add(uint64_t page, const PageBytes& bytes, EmulatorStats* stats);
  void Clear() { pages_.clear(); }

 private:
  uint32_t max_pages_;
  std::unordered_map<uint64_t, std::unique_ptr<PageBytes>> pages_;
};

enum class MemoryStatus : uint8_t { kOk, kUnreadable, kPageLimit, kReadOnly };

class WindowMemory {
 public:
  WindowMemory(Guest& guest, StablePages& stable, uint32_t max_pages, EmulatorStats* stats)
      : guest_(guest), stable_(stable), max_pages_(max_pages), stats_(stats) {}

  MemoryStatus Read(uint64_t address, void* out, size_t size);
  MemoryStatus Write(uint64_t address, const void* in, size_t size);
  // Reads up to `size` code bytes at `address`; fewer where the next page is unreadable (an
  // instruction may end before it). *got is what was read; *stable whether every byte came
  // from a stable page that this window did not write; *written whether any did.
  MemoryStatus Fetch(uint64_t address, uint8_t* out, size_t size, size_t* got, bool* stable,
                     bool* written);
  uint32_t pages_read() const { return pages_read_; }
  // A store went to a page that was stable (code or read-only data): cached decodes of stable
  // code must be checked against this window's bytes from now on.
  bool wrote_stable_page() const { return wrote_stable_; }

 private:
  struct Page {
    const uint8_t* bytes = nullptr;  // the window's copy, or the stable cache's
    uint8_t* own = nullptr;          // the window's copy once it has one
    bool stable = false;
    bool written = false;
  };
  MemoryStatus Get(uint64_t page, Page** out);
  MemoryStatus MakeWritable(uint64_t address, Page* page);
  uint8_t* NewBuffer();

  Guest& guest_;
  StablePages& stable_;
  uint32_t max_pages_;
  EmulatorStats* stats_;
  uint32_t pages_read_ = 0;
  bool wrote_stable_ = false;
  uint64_t last_page_ = ~0ull;
  Page* last_ = nullptr;
  std::unordered_map<uint64_t, Page> pages_;
  std::vector<std::unique_ptr<PageBytes>> buffers_;
};

}  // namespace pathprof::emulator
