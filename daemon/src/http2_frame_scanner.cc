#include "pathprof/daemon/http2_frame_scanner.h"

#include <algorithm>
#include <cstring>

namespace pathprof::daemon {
namespace {
constexpr char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
}  // namespace

Http2FrameScanner::Result Http2FrameScanner::Feed(
    const char* data, size_t n, const std::function<bool(const Http2FrameHeader&)>& on_frame) {
  size_t at = 0;
  while (at < n) {
    if (preface_left_ > 0) {
      const size_t take = std::min(preface_left_, n - at);
      if (std::memcmp(data + at, kPreface + (24 - preface_left_), take) != 0)
        return Result::kBadPreface;
      preface_left_ -= take;
      at += take;
      offset_ += take;
    } else if (payload_left_ > 0) {
      const size_t take = static_cast<size_t>(std::min<uint64_t>(payload_left_, n - at));
      payload_left_ -= take;
      at += take;
      offset_ += take;
    } else {
      const size_t take = std::min(sizeof header_ - header_have_, n - at);
      std::memcpy(header_ + header_have_, data + at, take);
      header_have_ += take;
      at += take;
      offset_ += take;
      if (header_have_ < sizeof header_) continue;
      header_have_ = 0;
      Http2FrameHeader h;
      h.length = (uint32_t{header_[0]} << 16) | (uint32_t{header_[1]} << 8) | header_[2];
      h.type = header_[3];
      h.flags = header_[4];
      h.stream = ((uint32_t{header_[5]} << 24) | (uint32_t{header_[6]} << 16) |
                  (uint32_t{header_[7]} << 8) | header_[8]) &
                 0x7fffffffu;
      h.end_offset = offset_ + h.length;
      payload_left_ = h.length;
      if (!on_frame(h)) return Result::kStopped;
    }
  }
  return Result::kMore;
}

}  // namespace pathprof::daemon
