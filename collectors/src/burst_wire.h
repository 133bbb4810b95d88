// The pipe protocol between the burst tracer process and the collector that forked it: framed
// messages {type, size, payload}. Both ends are the same binary (fork without exec), so POD
// structs travel as bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pathprof/collectors/ptrace_bursts.h"

namespace pathprof::collectors::wire {

enum class Type : uint32_t { kReady = 1, kError = 2, kWindow = 3, kStats = 4, kNote = 5 };

struct Header {
  Type type;
  uint32_t size;
};

struct WindowHeader {
  uint32_t pid;
  uint32_t tid;
  uint64_t time_ns;
  uint32_t count;
  uint32_t reserved;
};

// Writes the whole buffer, retrying on EINTR and short writes. False when the reader is gone.
bool WriteAll(int fd, const void* data, size_t size);
// Reads exactly size bytes. False on EOF or error.
bool ReadAll(int fd, void* data, size_t size);

bool Send(int fd, Type type, const void* payload, uint32_t size);
bool SendWindow(int fd, const BranchBatch& batch);
// Reads one message; false at EOF.
bool Receive(int fd, Header* header, std::vector<uint8_t>* payload);
BranchBatch DecodeWindow(const std::vector<uint8_t>& payload);

}  // namespace pathprof::collectors::wire
