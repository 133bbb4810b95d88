// Reads one direction of an HTTP/2 connection as it passes through, frame header by frame
// header (RFC 9113 §4.1: 24-bit length, type, flags, 31-bit stream id), skipping payloads and
// keeping nothing but the header being read: bytes arrive in chunks of any size, a header may
// straddle two. Used by the HTTP/2 guard (http2_guard.h) to see the client's streams and its
// SETTINGS acknowledgement without decoding anything gRPC decodes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace pathprof::daemon {

struct Http2FrameHeader {
  static constexpr uint8_t kHeaders = 0x1, kSettings = 0x4;
  static constexpr uint8_t kAckFlag = 0x1;
  uint32_t length = 0;
  uint8_t type = 0;
  uint8_t flags = 0;
  uint32_t stream = 0;
  // Where the frame ends, in bytes from the start of the direction (preface included).
  uint64_t end_offset = 0;
};

class Http2FrameScanner {
 public:
  enum class Result { kMore, kStopped, kBadPreface };
  // The client's direction starts with the 24-byte connection preface; the server's does not.
  explicit Http2FrameScanner(bool client_preface) : preface_left_(client_preface ? 24 : 0) {}
  // Reads `n` more bytes. `on_frame` sees each complete frame header (before its payload
  // arrives) and returns false to stop: Feed then returns kStopped and reads nothing more.
  // kBadPreface: the client's first bytes are not the HTTP/2 preface.
  Result Feed(const char* data, size_t n,
              const std::function<bool(const Http2FrameHeader&)>& on_frame);

 private:
  size_t preface_left_;
  uint64_t offset_ = 0;        // bytes read so far
  uint64_t payload_left_ = 0;  // of the current frame, still to skip
  unsigned char header_[9];
  size_t header_have_ = 0;
};

}  // namespace pathprof::daemon
