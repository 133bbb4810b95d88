#include "pathprof/collectors/perf_ring.h"

#include <cstring>

namespace pathprof::collectors {
namespace {

// The kernel publishes *_head with a release store and reads *_tail the same way; these are the
// acquire/release pairs the perf_event_mmap_page comments ask user space for.
uint64_t LoadAcquire(const __u64* p) {
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
void StoreRelease(__u64* p, uint64_t v) {
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
}

}  // namespace

PerfRing::PerfRing(void* base, size_t data_size, void* aux, size_t aux_size)
    : page_(static_cast<perf_event_mmap_page*>(base)),
      data_(static_cast<uint8_t*>(base) + (page_->data_offset ? page_->data_offset : 4096)),
      data_size_(data_size),
      aux_(static_cast<uint8_t*>(aux)),
      aux_size_(aux_size) {}

Status PerfRing::ReadRecords(const RecordSink& sink) {
  if (data_size_ == 0 || (data_size_ & (data_size_ - 1)))
    return Error(ErrorCode::kInvalidArgument, "perf ring data size must be a power of two");
  uint64_t head = LoadAcquire(&page_->data_head);
  uint64_t tail = page_->data_tail;
  const uint64_t mask = data_size_ - 1;
  while (tail + sizeof(perf_event_header) <= head) {
    perf_event_header h;
    for (size_t i = 0; i < sizeof h; ++i)
      reinterpret_cast<uint8_t*>(&h)[i] = data_[(tail + i) & mask];
    if (h.size > head - tail && h.size <= data_size_) break;  // not fully published yet
    if (h.size < sizeof h || h.size > data_size_) {
      // The kernel never writes this; if it happens the stream is unusable up to head.
      ++stats_.malformed;
      tail = head;
      break;
    }
    size_t offset = tail & mask;
    if (offset + h.size <= data_size_) {
      sink(std::span<const uint8_t>(data_ + offset, h.size));
    } else {  // the record wraps: hand out a contiguous copy
      scratch_.resize(h.size);
      size_t first = data_size_ - offset;
      std::memcpy(scratch_.data(), data_ + offset, first);
      std::memcpy(scratch_.data() + first, data_, h.size - first);
      sink(std::span<const uint8_t>(scratch_.data(), h.size));
    }
    ++stats_.records;
    stats_.bytes += h.size;
    tail += h.size;
  }
  StoreRelease(&page_->data_tail, tail);
  return Status::Ok();
}

Status PerfRing::ReadAux(const AuxSink& sink) {
  if (!aux_ || aux_size_ == 0) return Error(ErrorCode::kInvalidArgument, "no AUX area mapped");
  uint64_t head = LoadAcquire(&page_->aux_head);
  uint64_t tail = page_->aux_tail;
  if (head == tail) return Status::Ok();
  uint64_t n = head - tail;
  if (n > aux_size_) {
    // Overwritten before we read it (snapshot mode or a slow reader): keep the newest bytes.
    tail = head - aux_size_;
    n = aux_size_;
  }
  size_t offset = tail % aux_size_;
  size_t first = std::min<size_t>(n, aux_size_ - offset);
  sink(std::span<const uint8_t>(aux_ + offset, first), std::span<const uint8_t>(aux_, n - first));
  stats_.aux_bytes += n;
  StoreRelease(&page_->aux_tail, head);
  return Status::Ok();
}

}  // namespace pathprof::collectors
