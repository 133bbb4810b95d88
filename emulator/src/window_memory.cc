#include "window_memory.h"

#include <algorithm>
#include <cstring>

namespace pathprof::emulator {

const PageBytes* StablePages::Add(uint64_t page, const PageBytes& bytes, EmulatorStats* stats) {
  if (pages_.size() >= max_pages_) {
    pages_.clear();
    ++stats->stable_drops;
  }
  auto copy = std::make_unique<PageBytes>(bytes);
  const PageBytes* p = copy.get();
  pages_[page] = std::move(copy);
  return p;
}

void WindowMemory::Begin(Guest& guest) {
  guest_ = &guest;
  pages_.clear();
  used_ = 0;
  pages_read_ = 0;
  wrote_stable_ = false;
  last_page_ = ~0ull;
  last_ = nullptr;
  tracking_ = guest.Partial();
  read_unknown_ = 0;
  stored_.clear();
}

uint8_t* WindowMemory::NewBuffer() {
  if (used_ == buffers_.size()) buffers_.push_back(std::make_unique<PageBytes>());
  return buffers_[used_++]->data();
}

MemoryStatus WindowMemory::Get(uint64_t page, Page** out) {
  if (page == last_page_) {
    *out = last_;
    return MemoryStatus::kOk;
  }
  auto it = pages_.find(page);
  if (it == pages_.end()) {
    if (pages_.size() >= max_pages_) return MemoryStatus::kPageLimit;
    Page p;
    if (const PageBytes* s = stable_.Find(page)) {
      ++stats_->stable_hits;
      p.bytes = s->data();
      p.stable = true;
    } else {
      uint8_t* buf = NewBuffer();
      bool stable = false;
      if (!guest_->ReadPage(page, buf, &stable)) {
        --used_;
        return MemoryStatus::kUnreadable;
      }
      if (tracking_ && !guest_->ReadableKnown(page)) {
        --used_;
        return MemoryStatus::kProtectionUnknown;
      }
      ++pages_read_;
      ++stats_->pages_read;
      if (tracking_) {
        uint8_t* unknown = NewBuffer();
        std::memset(unknown, 0, Guest::kPageSize);
        if (guest_->UnheldBytes(page, unknown)) {
          for (size_t i = 0; i < Guest::kPageSize; ++i) unknown[i] = unknown[i] ? kUnheldMemory : 0;
          p.unknown = unknown;
          stable = false;  // its bytes are this snapshot's, not the image's
        } else {
          --used_;
        }
      }
      if (stable) {
        PageBytes copy;
        std::memcpy(copy.data(), buf, copy.size());
        p.bytes = stable_.Add(page, copy, stats_)->data();
        p.stable = true;
        --used_;
      } else {
        p.bytes = buf;
        p.own = buf;
      }
    }
    it = pages_.emplace(page, p).first;
  }
  last_page_ = page;
  last_ = &it->second;
  *out = last_;
  return MemoryStatus::kOk;
}

MemoryStatus WindowMemory::MakeWritable(uint64_t address, Page* page) {
  if (page->written) return MemoryStatus::kOk;
  if (!guest_->WritableKnown(address & ~kPageMask)) return MemoryStatus::kProtectionUnknown;
  if (!guest_->PageWritable(address & ~kPageMask)) return MemoryStatus::kReadOnly;
  if (!page->own) {  // a stable page: the window writes to its own copy
    wrote_stable_ = true;
    uint8_t* buf = NewBuffer();
    std::memcpy(buf, page->bytes, Guest::kPageSize);
    page->own = buf;
    page->bytes = buf;
  }
  page->written = true;
  return MemoryStatus::kOk;
}

MemoryStatus WindowMemory::ReadSlow(uint64_t address, void* out, size_t size) {
  auto* dst = static_cast<uint8_t*>(out);
  while (size > 0) {
    Page* p = nullptr;
    const MemoryStatus st = Get(address & ~kPageMask, &p);
    if (st != MemoryStatus::kOk) return st;
    const size_t offset = address & kPageMask;
    const size_t n = std::min(size, Guest::kPageSize - offset);
    std::memcpy(dst, p->bytes + offset, n);
    if (p->unknown != nullptr)
      for (size_t i = 0; i < n; ++i) read_unknown_ |= p->unknown[offset + i];
    dst += n;
    address += n;
    size -= n;
  }
  return MemoryStatus::kOk;
}

// A store to a page the target may not write (read-only text or data) faults on the CPU: the
// window ends there (kReadOnly), the overlay unchanged.
MemoryStatus WindowMemory::WriteSlow(uint64_t address, const void* in, size_t size) {
  const auto* src = static_cast<const uint8_t*>(in);
  while (size > 0) {
    Page* p = nullptr;
    const MemoryStatus st = Get(address & ~kPageMask, &p);
    if (st != MemoryStatus::kOk) return st;
    if (const MemoryStatus w = MakeWritable(address, p); w != MemoryStatus::kOk) return w;
    const size_t offset = address & kPageMask;
    const size_t n = std::min(size, Guest::kPageSize - offset);
    std::memcpy(p->own + offset, src, n);
    if (tracking_) Stored(address, n);
    src += n;
    address += n;
    size -= n;
  }
  return MemoryStatus::kOk;
}

// Consecutive stores (a rep movs, stos, one element at a time) extend one range.
void WindowMemory::Stored(uint64_t address, size_t n) {
  if (!stored_.empty()) {
    auto& last = stored_.back();
    if (address == last.second) return void(last.second = address + n);
    if (address + n == last.first) return void(last.first = address);
  }
  stored_.emplace_back(address, address + n);
}

void WindowMemory::ApplyWriteUnknown(uint8_t unknown) {
  for (auto [lo, hi] : stored_) {
    while (lo < hi) {
      const uint64_t page = lo & ~kPageMask;
      const size_t offset = lo & kPageMask;
      const size_t n = std::min<uint64_t>(hi - lo, Guest::kPageSize - offset);
      auto it = pages_.find(page);  // present: the store went there
      if (it != pages_.end()) {
        Page& p = it->second;
        if (p.unknown == nullptr && unknown != 0) {
          p.unknown = NewBuffer();
          std::memset(p.unknown, 0, Guest::kPageSize);
        }
        if (p.unknown != nullptr) std::memset(p.unknown + offset, unknown, n);
      }
      lo += n;
    }
  }
  stored_.clear();
}

uint8_t WindowMemory::UnknownAt(uint64_t address, size_t size) {
  uint8_t u = 0;
  while (size > 0) {
    Page* p = nullptr;
    if (Get(address & ~kPageMask, &p) != MemoryStatus::kOk) return u;  // the load itself ends it
    const size_t offset = address & kPageMask;
    const size_t n = std::min(size, Guest::kPageSize - offset);
    if (p->unknown != nullptr)
      for (size_t i = 0; i < n; ++i) u |= p->unknown[offset + i];
    address += n;
    size -= n;
  }
  return u;
}

MemoryStatus WindowMemory::WritableSpan(uint64_t address, size_t size, uint8_t** out, size_t* n) {
  Page* p = nullptr;
  if (const MemoryStatus st = Get(address & ~kPageMask, &p); st != MemoryStatus::kOk) return st;
  if (const MemoryStatus w = MakeWritable(address, p); w != MemoryStatus::kOk) return w;
  const size_t offset = address & kPageMask;
  *out = p->own + offset;
  *n = std::min(size, Guest::kPageSize - offset);
  // Tracking: the whole span counts as stored (rep movs/stos copy element by element then,
  // integer_strings.cc, so no caller stores less than it asked for).
  if (tracking_) Stored(address, *n);
  return MemoryStatus::kOk;
}

MemoryStatus WindowMemory::ReadableSpan(uint64_t address, size_t size, const uint8_t** out,
                                        size_t* n) {
  Page* p = nullptr;
  if (const MemoryStatus st = Get(address & ~kPageMask, &p); st != MemoryStatus::kOk) return st;
  const size_t offset = address & kPageMask;
  *out = p->bytes + offset;
  *n = std::min(size, Guest::kPageSize - offset);
  if (p->unknown != nullptr)
    for (size_t i = 0; i < *n; ++i) read_unknown_ |= p->unknown[offset + i];
  return MemoryStatus::kOk;
}

MemoryStatus WindowMemory::Fetch(uint64_t address, uint8_t* out, size_t size, size_t* got,
                                 bool* stable, bool* written) {
  *got = 0;
  *stable = true;
  *written = false;
  while (size > 0) {
    Page* p = nullptr;
    const MemoryStatus st = Get(address & ~kPageMask, &p);
    if (st != MemoryStatus::kOk) return *got > 0 ? MemoryStatus::kOk : st;
    *stable = *stable && p->stable && !p->written;
    *written = *written || p->written;
    const size_t offset = address & kPageMask;
    const size_t n = std::min(size, Guest::kPageSize - offset);
    std::memcpy(out + *got, p->bytes + offset, n);
    *got += n;
    address += n;
    size -= n;
  }
  return MemoryStatus::kOk;
}

}  // namespace pathprof::emulator
