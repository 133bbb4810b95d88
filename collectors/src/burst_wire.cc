#include "burst_wire.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace pathprof::collectors::wire {

bool WriteAll(int fd, const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (size > 0) {
    ssize_t n = write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool ReadAll(int fd, void* data, size_t size) {
  auto* p = static_cast<uint8_t*>(data);
  while (size > 0) {
    ssize_t n = read(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool Send(int fd, Type type, const void* payload, uint32_t size) {
  std::vector<uint8_t> buf(sizeof(Header) + size);
  Header h{type, size};
  std::memcpy(buf.data(), &h, sizeof h);
  if (size) std::memcpy(buf.data() + sizeof h, payload, size);
  return WriteAll(fd, buf.data(), buf.size());
}

bool SendWindow(int fd, const BranchBatch& batch) {
  WindowHeader wh{batch.pid, batch.tid, batch.time_ns, static_cast<uint32_t>(batch.events.size()),
                  0};
  std::vector<uint8_t> buf(sizeof wh + batch.events.size() * sizeof(BranchEvent));
  std::memcpy(buf.data(), &wh, sizeof wh);
  if (!batch.events.empty())
    std::memcpy(buf.data() + sizeof wh, batch.events.data(),
                batch.events.size() * sizeof(BranchEvent));
  return Send(fd, Type::kWindow, buf.data(), static_cast<uint32_t>(buf.size()));
}

bool Receive(int fd, Header* header, std::vector<uint8_t>* payload) {
  if (!ReadAll(fd, header, sizeof *header)) return false;
  payload->resize(header->size);
  return header->size == 0 || ReadAll(fd, payload->data(), header->size);
}

BranchBatch DecodeWindow(const std::vector<uint8_t>& payload) {
  BranchBatch b;
  WindowHeader wh{};
  if (payload.size() < sizeof wh) return b;
  std::memcpy(&wh, payload.data(), sizeof wh);
  b.pid = wh.pid;
  b.tid = wh.tid;
  b.time_ns = wh.time_ns;
  b.gap_before = true;
  b.window = true;
  size_t n = std::min<size_t>(wh.count, (payload.size() - sizeof wh) / sizeof(BranchEvent));
  b.events.resize(n);
  if (n) std::memcpy(b.events.data(), payload.data() + sizeof wh, n * sizeof(BranchEvent));
  return b;
}

}  // namespace pathprof::collectors::wire
