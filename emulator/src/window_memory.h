// The target's memory as one window sees it: pages read on demand through the Guest, stores
// kept in the window's own copies (never written back), and the pages that do not change
// (read-only file-backed) kept across windows.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <vector>

#include "pathprof/emulator/window_emulator.h"
#include "unknown_bytes.h"

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

enum class MemoryStatus : uint8_t { kOk, kUnreadable, kPageLimit, kReadOnly, kProtectionUnknown };

class WindowMemory {
 public:
  WindowMemory(StablePages& stable, uint32_t max_pages, EmulatorStats* stats)
      : stable_(stable), max_pages_(max_pages), stats_(stats) {}
  // Starts a window over `guest`: no page read yet, nothing written. The page buffers of the
  // last window are reused (a malloc and free per page read showed in the profile).
  void Begin(Guest& guest);

  // Loads and stores of the operand sizes instructions use (1, 2, 4, 8 bytes) within the page
  // accessed last take an inline path: most of a window's accesses hit the stack page it used
  // just before; anything else goes through the general one.
  MemoryStatus Read(uint64_t address, void* out, size_t size) {
    if ((address & ~kPageMask) == last_page_ && (address & kPageMask) + size <= Guest::kPageSize &&
        !tracking_)
      return CopySmall(out, last_->bytes + (address & kPageMask), size), MemoryStatus::kOk;
    return ReadSlow(address, out, size);
  }
  MemoryStatus Write(uint64_t address, const void* in, size_t size) {
    if ((address & ~kPageMask) == last_page_ && last_->written &&
        (address & kPageMask) + size <= Guest::kPageSize && !tracking_)
      return CopySmall(last_->own + (address & kPageMask), in, size), MemoryStatus::kOk;
    return WriteSlow(address, in, size);
  }
  // Reads up to `size` code bytes at `address`; fewer where the next page is unreadable (an
  // instruction may end before it). *got is what was read; *stable whether every byte came
  // from a stable page that this window did not write; *written whether any did.
  MemoryStatus Fetch(uint64_t address, uint8_t* out, size_t size, size_t* got, bool* stable,
                     bool* written);
  // The bytes from `address` to the end of its page, at most `size`, for a string
  // instruction to copy or fill in one go: *n is how many. The writable span is the window's
  // own copy (made as a store would make it); the readable one may be the stable cache's.
  MemoryStatus WritableSpan(uint64_t address, size_t size, uint8_t** out, size_t* n);
  MemoryStatus ReadableSpan(uint64_t address, size_t size, const uint8_t** out, size_t* n);
  uint32_t pages_read() const { return pages_read_; }

  // Unknown bytes (unknown_bytes.h), tracked where the guest is partial (Guest::Partial): each
  // byte of a page the guest does not wholly hold carries why it is unknown (0: known). Loads
  // gather the kinds of the bytes they read; stores are remembered until the instruction's
  // outputs are known (the union of its inputs), then given that kind.
  bool tracking() const { return tracking_; }
  // The kinds of the bytes loads read since the last call.
  uint8_t TakeReadUnknown() {
    const uint8_t u = read_unknown_;
    read_unknown_ = 0;
    return u;
  }
  // The bytes stored since the last call take `unknown` (0: known from now on).
  void ApplyWriteUnknown(uint8_t unknown);
  // The kinds of [address, address + size): for a jump target or a faulting operand, checked
  // before the instruction runs. Pages are read as a load would read them.
  uint8_t UnknownAt(uint64_t address, size_t size);
  // A store went to a page that was stable (code or read-only data): cached decodes of stable
  // code must be checked against this window's bytes from now on.
  bool wrote_stable_page() const { return wrote_stable_; }

 private:
  static constexpr uint64_t kPageMask = Guest::kPageSize - 1;
  // memcpy with the sizes spelled out, so the compiler moves them inline.
  static void CopySmall(void* to, const void* from, size_t size) {
    switch (size) {
      case 1:
        std::memcpy(to, from, 1);
        break;
      case 2:
        std::memcpy(to, from, 2);
        break;
      case 4:
        std::memcpy(to, from, 4);
        break;
      case 8:
        std::memcpy(to, from, 8);
        break;
      default:
        std::memcpy(to, from, size);
        break;
    }
  }
  MemoryStatus ReadSlow(uint64_t address, void* out, size_t size);
  MemoryStatus WriteSlow(uint64_t address, const void* in, size_t size);
  struct Page {
    const uint8_t* bytes = nullptr;  // the window's copy, or the stable cache's
    uint8_t* own = nullptr;          // the window's copy once it has one
    bool stable = false;
    bool written = false;
    uint8_t* unknown = nullptr;  // tracking: a kind per byte, or null when all are known
  };
  MemoryStatus Get(uint64_t page, Page** out);
  void Stored(uint64_t address, size_t n);
  MemoryStatus MakeWritable(uint64_t address, Page* page);
  uint8_t* NewBuffer();

  Guest* guest_ = nullptr;
  StablePages& stable_;
  uint32_t max_pages_;
  EmulatorStats* stats_;
  uint32_t pages_read_ = 0;
  bool wrote_stable_ = false;
  uint64_t last_page_ = ~0ull;
  Page* last_ = nullptr;
  std::unordered_map<uint64_t, Page> pages_;
  bool tracking_ = false;
  uint8_t read_unknown_ = 0;
  std::vector<std::pair<uint64_t, uint64_t>> stored_;  // [lo, hi) since ApplyWriteUnknown
  std::vector<std::unique_ptr<PageBytes>> buffers_;    // the first used_ belong to this window
  size_t used_ = 0;
};

}  // namespace pathprof::emulator
