// Test helpers for the live perf sources: a fake perf mmap area (metadata page, data ring, AUX
// area) written the way the kernel writes it, and the raw records of a perf.data file.
#pragma once

#include <linux/perf_event.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include "pathprof/collectors/perf_ring.h"

namespace pathprof::collectors::testing {

class FakePerfMmap {
 public:
  FakePerfMmap(size_t data_size, size_t aux_size)
      : data_size_(data_size),
        aux_size_(aux_size),
        words_((4096 + data_size) / 8),
        aux_(aux_size),
        ring_(words_.data(), data_size, aux_size ? aux_.data() : nullptr, aux_size) {
    page()->data_offset = 4096;
    page()->data_size = data_size;
  }
  perf_event_mmap_page* page() { return reinterpret_cast<perf_event_mmap_page*>(words_.data()); }
  PerfRing& ring() { return ring_; }

  // False when the record does not fit in the free space (the reader must drain first).
  bool WriteRecord(std::span<const uint8_t> record) {
    const uint64_t head = page()->data_head;
    if (head + record.size() - page()->data_tail > data_size_) return false;
    uint8_t* data = reinterpret_cast<uint8_t*>(words_.data()) + 4096;
    for (size_t i = 0; i < record.size(); ++i) data[(head + i) % data_size_] = record[i];
    page()->data_head = head + record.size();
    return true;
  }
  // Appends trace bytes to the AUX area; returns the offset they were written at.
  uint64_t WriteAux(std::span<const uint8_t> bytes) {
    const uint64_t head = page()->aux_head;
    for (size_t i = 0; i < bytes.size(); ++i) aux_[(head + i) % aux_size_] = bytes[i];
    page()->aux_head = head + bytes.size();
    return head;
  }

 private:
  size_t data_size_;
  size_t aux_size_;
  std::vector<uint64_t> words_;  // 8-byte aligned, as the kernel's pages are
  std::vector<uint8_t> aux_;
  PerfRing ring_;
};

inline std::vector<uint8_t> ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

}  // namespace pathprof::collectors::testing
