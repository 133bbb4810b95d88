#include "page_prefetch.h"

#include <sys/uio.h>

#include <algorithm>
#include <bit>

namespace pathprof::stepping {
namespace {

constexpr uint64_t kPageSize = 4096;
constexpr int kMaxRetries = 4;  // pages that fail mid-call (unmapped since) are skipped this often

}  // namespace

void PagePrefetch::Begin(uint64_t rsp, const std::function<bool(uint64_t)>& readable) {
  pages_.clear();
  index_.clear();
  const uint64_t stack = rsp & ~(kPageSize - 1);
  if (readable(stack)) pages_.push_back(stack);
  for (const auto& [page, bits] : history_) {
    if (pages_.size() >= kMaxPages) break;
    if (std::popcount(bits) >= 2 && page != stack && readable(page)) pages_.push_back(page);
  }
  if (pages_.empty()) return;
  buffer_.resize(pages_.size() * kPageSize);
  // process_vm_readv stops at the first page it cannot read; the pages before it are good, the
  // failing one is dropped and the rest read again.
  size_t done = 0;
  for (int attempt = 0; done < pages_.size() && attempt <= kMaxRetries; ++attempt) {
    std::vector<iovec> local, remote;
    for (size_t i = done; i < pages_.size(); ++i) {
      local.push_back({buffer_.data() + i * kPageSize, kPageSize});
      remote.push_back({reinterpret_cast<void*>(pages_[i]), kPageSize});
    }
    ++calls_;
    const ssize_t n =
        process_vm_readv(pid_, local.data(), local.size(), remote.data(), remote.size(), 0);
    const size_t whole = n > 0 ? static_cast<size_t>(n) / kPageSize : 0;
    done += whole;
    if (done < pages_.size()) {
      // pages_[done] failed: drop it, keep the order of the others.
      pages_.erase(pages_.begin() + static_cast<long>(done));
      buffer_.erase(buffer_.begin() + static_cast<long>(done * kPageSize),
                    buffer_.begin() + static_cast<long>((done + 1) * kPageSize));
    }
  }
  pages_.resize(std::min(pages_.size(), done));
  for (size_t i = 0; i < pages_.size(); ++i) index_[pages_[i]] = i;
  prefetched_ += pages_.size();
}

const uint8_t* PagePrefetch::Take(uint64_t page) {
  const auto it = index_.find(page);
  if (it == index_.end()) return nullptr;
  ++taken_;
  Used(page);
  return buffer_.data() + it->second * kPageSize;
}

void PagePrefetch::Used(uint64_t page) {
  if (history_.size() >= kMaxTracked && !history_.count(page)) return;
  history_[page] |= 1;
}

void PagePrefetch::End() {
  for (auto it = history_.begin(); it != history_.end();) {
    it->second = static_cast<uint8_t>(it->second << 1);
    it = it->second == 0 ? history_.erase(it) : std::next(it);
  }
  pages_.clear();
  index_.clear();
}

void PagePrefetch::Reset() {
  history_.clear();
  pages_.clear();
  index_.clear();
}

}  // namespace pathprof::stepping
