// Messages between a process and its helper over a Unix stream socket: a header {type, size},
// the payload, and at most one descriptor passed with SCM_RIGHTS on a message. The protocols
// on top (collectors' emulator wire, pipeline's symbolizer wire) give the types their meaning
// and parse the payloads; this layer bounds what it reads (a payload above `max_payload` is a
// broken peer) and how long it waits.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace pathprof::stepping {

struct MessageHeader {
  uint32_t type;
  uint32_t size;
};

enum class ReceiveResult { kMessage, kTimeout, kEof, kBroken };

// Writes one message, with `fd` attached when >= 0. False when the peer is gone.
bool SendMessage(int sock, uint32_t type, const void* payload, uint32_t size, int fd = -1);
// Appends one framed message to `out`, sent later with SendAll (several messages, one write).
void AppendMessage(uint32_t type, const void* payload, uint32_t size, std::vector<uint8_t>* out);
// Writes `bytes` whole. False when the peer is gone.
bool SendAll(int sock, std::span<const uint8_t> bytes);

// Reads one message, waiting at most `timeout_ms` for it to begin and as long again for the
// rest (-1: no bound, for a helper whose parent is its only reason to exist). A descriptor that
// came with it lands in *fd (close-on-exec), -1 if none; any other is closed.
ReceiveResult ReceiveMessage(int sock, int timeout_ms, uint32_t max_payload, MessageHeader* header,
                             std::vector<uint8_t>* payload, int* fd);

// Reads messages from a socket that carries no descriptors, a large read at a time (a helper's
// parent reading a stream of answers: one read for many messages).
class MessageReader {
 public:
  MessageReader(int sock, uint32_t max_payload) : sock_(sock), max_payload_(max_payload) {}
  ReceiveResult Next(int timeout_ms, MessageHeader* header, std::vector<uint8_t>* payload);

 private:
  int sock_;
  uint32_t max_payload_;
  std::vector<uint8_t> buf_;
  size_t at_ = 0;
};

}  // namespace pathprof::stepping
