#include "pathprof/collectors/perf_ring.h"

#include <gtest/gtest.h>

#include <cstring>

namespace pathprof::collectors {
namespace {

// A fake mapping: one metadata page followed by a small data area, written as the kernel would.
struct FakeRing {
  static constexpr size_t kData = 256;
  alignas(4096) uint8_t bytes[4096 + kData] = {};
  perf_event_mmap_page* page() { return reinterpret_cast<perf_event_mmap_page*>(bytes); }
  uint8_t* data() { return bytes + 4096; }
  FakeRing() { page()->data_offset = 4096; }

  // Writes a record of `size` bytes whose payload bytes are `fill`, wrapping as needed.
  void Write(uint16_t size, uint8_t fill) {
    perf_event_header h{PERF_RECORD_SAMPLE, 0, size};
    uint64_t head = page()->data_head;
    for (size_t i = 0; i < size; ++i) {
      uint8_t b = i < sizeof h ? reinterpret_cast<uint8_t*>(&h)[i] : fill;
      data()[(head + i) % kData] = b;
    }
    page()->data_head = head + size;
  }
};

TEST(PerfRing, RecordsComeOutWholeAcrossTheWrap) {
  FakeRing ring;
  PerfRing reader(ring.bytes, FakeRing::kData);
  std::vector<std::pair<size_t, uint8_t>> seen;
  auto sink = [&](std::span<const uint8_t> r) {
    for (size_t i = sizeof(perf_event_header); i < r.size(); ++i)
      ASSERT_EQ(r[i], r.back()) << "payload bytes must be contiguous";
    seen.push_back({r.size(), r.back()});
  };
  // 3 x 96 bytes: the third starts at 192 and wraps at 256.
  for (uint8_t k = 1; k <= 3; ++k) {
    ring.Write(96, k);
    ASSERT_TRUE(reader.ReadRecords(sink).ok());
  }
  ring.Write(40, 9);
  ring.Write(24, 10);
  ASSERT_TRUE(reader.ReadRecords(sink).ok());
  ASSERT_EQ(seen.size(), 5u);
  EXPECT_EQ(seen[2], (std::pair<size_t, uint8_t>{96, 3}));
  EXPECT_EQ(seen[4], (std::pair<size_t, uint8_t>{24, 10}));
  EXPECT_EQ(ring.page()->data_tail, 96u * 3 + 40 + 24) << "tail must release the space read";
  EXPECT_EQ(reader.stats().records, 5u);
  EXPECT_EQ(reader.stats().malformed, 0u);
}

TEST(PerfRing, AHalfWrittenRecordWaitsAndABadSizeIsCounted) {
  FakeRing ring;
  PerfRing reader(ring.bytes, FakeRing::kData);
  int n = 0;
  ring.Write(64, 1);
  ring.page()->data_head -= 8;  // the kernel has not published the last 8 bytes yet
  ASSERT_TRUE(reader.ReadRecords([&](auto) { ++n; }).ok());
  EXPECT_EQ(n, 0);
  EXPECT_EQ(ring.page()->data_tail, 0u);
  ring.page()->data_head += 8;
  ASSERT_TRUE(reader.ReadRecords([&](auto) { ++n; }).ok());
  EXPECT_EQ(n, 1);
  ring.Write(8, 0);
  ring.data()[64 + 6] = 4;  // its size field now claims less than its own header: corrupt
  ASSERT_TRUE(reader.ReadRecords([&](auto) { ++n; }).ok());
  EXPECT_EQ(n, 1);
  EXPECT_EQ(reader.stats().malformed, 1u);
  EXPECT_EQ(ring.page()->data_tail, ring.page()->data_head);
}

TEST(PerfRing, AuxBytesInTwoSpansWhenTheyWrap) {
  FakeRing ring;
  uint8_t aux[64];
  for (int i = 0; i < 64; ++i) aux[i] = static_cast<uint8_t>(i);
  PerfRing reader(ring.bytes, FakeRing::kData, aux, sizeof aux);
  ring.page()->aux_tail = 50;
  ring.page()->aux_head = 70;  // 50..63 then 0..5
  std::vector<uint8_t> got;
  ASSERT_TRUE(reader
                  .ReadAux([&](auto a, auto b) {
                    got.insert(got.end(), a.begin(), a.end());
                    got.insert(got.end(), b.begin(), b.end());
                  })
                  .ok());
  ASSERT_EQ(got.size(), 20u);
  EXPECT_EQ(got.front(), 50);
  EXPECT_EQ(got[13], 63);
  EXPECT_EQ(got[14], 0);
  EXPECT_EQ(got.back(), 5);
  EXPECT_EQ(ring.page()->aux_tail, 70u);
}

}  // namespace
}  // namespace pathprof::collectors
