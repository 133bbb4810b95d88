// The HTTP/2 guard's frame-header reader: headers are seen whatever the chunking (one byte at a
// time, a header split across reads, payloads skipped), and a client that does not start with
// the HTTP/2 preface is told apart.
#include "pathprof/daemon/http2_frame_scanner.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace pathprof::daemon {
namespace {

std::string Frame(uint8_t type, uint8_t flags, uint32_t stream, const std::string& payload) {
  std::string f;
  f += static_cast<char>(payload.size() >> 16);
  f += static_cast<char>(payload.size() >> 8);
  f += static_cast<char>(payload.size());
  f += static_cast<char>(type);
  f += static_cast<char>(flags);
  for (int shift : {24, 16, 8, 0}) f += static_cast<char>(stream >> shift);
  return f + payload;
}

const std::string kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

std::vector<Http2FrameHeader> Scan(const std::string& bytes, size_t chunk, bool preface,
                                   Http2FrameScanner::Result* last = nullptr) {
  Http2FrameScanner scanner(preface);
  std::vector<Http2FrameHeader> seen;
  Http2FrameScanner::Result r = Http2FrameScanner::Result::kMore;
  for (size_t at = 0; at < bytes.size() && r == Http2FrameScanner::Result::kMore; at += chunk)
    r = scanner.Feed(bytes.data() + at, std::min(chunk, bytes.size() - at),
                     [&](const Http2FrameHeader& h) {
                       seen.push_back(h);
                       return true;
                     });
  if (last != nullptr) *last = r;
  return seen;
}

TEST(Http2FrameScanner, SeesEveryHeaderWhateverTheChunks) {
  // SETTINGS with one setting, a HEADERS frame with a 300-byte block on stream 0x7fffffff (the
  // reserved bit set on the wire must be dropped), then the SETTINGS ACK.
  const std::string bytes = kPreface + Frame(4, 0, 0, std::string(6, '\x01')) +
                            Frame(1, 4, 0xffffffffu, std::string(300, 'h')) + Frame(4, 1, 0, "");
  for (size_t chunk : {size_t{1}, size_t{5}, size_t{9}, size_t{30}, bytes.size()}) {
    Http2FrameScanner::Result last;
    const auto seen = Scan(bytes, chunk, true, &last);
    EXPECT_EQ(last, Http2FrameScanner::Result::kMore);
    ASSERT_EQ(seen.size(), 3u) << "chunk " << chunk;
    EXPECT_EQ(seen[0].type, 4);
    EXPECT_EQ(seen[0].length, 6u);
    EXPECT_EQ(seen[0].end_offset, 24u + 9 + 6);
    EXPECT_EQ(seen[1].type, 1);
    EXPECT_EQ(seen[1].flags, 4);
    EXPECT_EQ(seen[1].stream, 0x7fffffffu);
    EXPECT_EQ(seen[1].length, 300u);
    EXPECT_EQ(seen[2].type, 4);
    EXPECT_EQ(seen[2].flags, 1);
    EXPECT_EQ(seen[2].end_offset, bytes.size());
  }
}

TEST(Http2FrameScanner, TheServersDirectionHasNoPreface) {
  const auto seen = Scan(Frame(4, 0, 0, std::string(18, '\0')) + Frame(8, 0, 0, "abcd"), 7, false);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].end_offset, 27u);
  EXPECT_EQ(seen[1].type, 8);
}

TEST(Http2FrameScanner, AnotherProtocolIsABadPreface) {
  Http2FrameScanner::Result last;
  EXPECT_TRUE(Scan("GET / HTTP/1.1\r\nHost: x\r\n\r\n", 3, true, &last).empty());
  EXPECT_EQ(last, Http2FrameScanner::Result::kBadPreface);
  // The last byte of the preface wrong: caught, even split across reads.
  Scan(kPreface.substr(0, 23) + "X" + Frame(4, 0, 0, ""), 10, true, &last);
  EXPECT_EQ(last, Http2FrameScanner::Result::kBadPreface);
}

TEST(Http2FrameScanner, StopsWhereTheCallerSaysAndReadsNoFurther) {
  Http2FrameScanner scanner(false);
  const std::string bytes = Frame(1, 4, 1, "x") + Frame(1, 4, 3, "y") + Frame(1, 4, 5, "z");
  int calls = 0;
  EXPECT_EQ(scanner.Feed(bytes.data(), bytes.size(),
                         [&](const Http2FrameHeader& h) { return ++calls, h.stream < 3; }),
            Http2FrameScanner::Result::kStopped);
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace pathprof::daemon
