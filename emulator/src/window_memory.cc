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
      ++pages_read_;
      ++stats_->pages_read;
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
    src += n;
    address += n;
    size -= n;
  }
  return MemoryStatus::kOk;
}

MemoryStatus WindowMemory::WritableSpan(uint64_t address, size_t size, uint8_t** out, size_t* n) {
  Page* p = nullptr;
  if (const MemoryStatus st = Get(address & ~kPageMask, &p); st != MemoryStatus::kOk) return st;
  if (const MemoryStatus w = MakeWritable(address, p); w != MemoryStatus::kOk) return w;
  const size_t offset = address & kPageMask;
  *out = p->own + offset;
  *n = std::min(size, Guest::kPageSize - offset);
  return MemoryStatus::kOk;
}

MemoryStatus WindowMemory::ReadableSpan(uint64_t address, size_t size, const uint8_t** out,
                                        size_t* n) {
  Page* p = nullptr;
  if (const MemoryStatus st = Get(address & ~kPageMask, &p); st != MemoryStatus::kOk) return st;
  const size_t offset = address & kPageMask;
  *out = p->bytes + offset;
  *n = std::min(size, Guest::kPageSize - offset);
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
