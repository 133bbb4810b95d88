// The PT decoders on hostile bytes: random buffers with sync points sprinkled in, decoded over a
// real image (this test's own code), must end with errors counted, never a crash or a hang.
#include <gtest/gtest.h>
#include <intel-pt.h>

#include <fstream>
#include <random>
#include <sstream>

#include "pathprof/core/procfs.h"
#include "pathprof/decoders/pt_decoder.h"

namespace pathprof::decoders {
namespace {

// This process's executable mappings, as the exact tracer would record them.
std::vector<ImageRecord> SelfImages() {
  std::vector<ImageRecord> out;
  auto maps = procfs::Procfs::Host().Read(getpid(), "maps");
  std::istringstream in(maps.ok() ? *maps : "");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string range, perms, offset, dev, inode, path;
    ls >> range >> perms >> offset >> dev >> inode >> path;
    if (perms.size() < 3 || perms[2] != 'x' || path.empty() || path[0] != '/') continue;
    ImageRecord r;
    r.start = std::stoull(range.substr(0, range.find('-')), nullptr, 16);
    r.end = std::stoull(range.substr(range.find('-') + 1), nullptr, 16);
    r.file_offset = std::stoull(offset, nullptr, 16);
    r.path = path;
    out.push_back(r);
  }
  return out;
}

std::vector<uint8_t> RandomTrace(std::mt19937_64& rng, uint64_t code_start) {
  std::vector<uint8_t> bytes(4096);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng());
  // A PSB, PSBEND, MODE.exec and TIP.PGE into real code every 512 bytes, so the decoder syncs
  // and walks real instructions before the noise derails it.
  static const uint8_t kPsb[16] = {0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
                                   0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82};
  for (size_t at = 0; at + 40 < bytes.size(); at += 512) {
    std::copy(kPsb, kPsb + 16, bytes.begin() + at);
    bytes[at + 16] = 0x02;
    bytes[at + 17] = 0x23;  // PSBEND
    bytes[at + 18] = 0x99;  // MODE.exec, 64-bit
    bytes[at + 19] = 0x01;
    bytes[at + 20] = 0x71;  // TIP.PGE, sign-extended 48-bit IP
    uint64_t ip = code_start + (rng() % 4096);
    for (int i = 0; i < 6; ++i) bytes[at + 21 + i] = static_cast<uint8_t>(ip >> (8 * i));
  }
  return bytes;
}

TEST(PtRobustness, RandomBytesGiveCountedErrorsNeverACrash) {
  auto cache = PtSectionCache::Create();
  ASSERT_TRUE(cache.ok());
  auto image = std::make_shared<PtImage>(*cache);
  auto images = SelfImages();
  ASSERT_FALSE(images.empty());
  image->AddImages(images);
  std::mt19937_64 rng(20261122);
  uint64_t errors = 0, syncs = 0, packets = 0;
  for (int round = 0; round < 200; ++round) {
    std::vector<uint8_t> bytes = RandomTrace(rng, images[0].start);
    auto dec = PtBranchDecoder::Create(bytes, PtDecoderConfig{}, image, 1, 1);
    ASSERT_TRUE(dec.ok());
    Status s = (*dec)->Decode([&](BranchBatch&& b) {
      EXPECT_LE(b.events.size(), PtDecodeOptions{}.batch_events);
      return Status::Ok();
    });
    ASSERT_TRUE(s.ok()) << s.ToString();
    errors += (*dec)->stats().errors;
    syncs += (*dec)->stats().syncs;
    PtPacketStats p = CountPtPackets(bytes, PtDecoderConfig{});
    packets += p.packets;
    for (const auto& e : (*dec)->stats().first_errors) EXPECT_LT(e.offset, bytes.size());
  }
  EXPECT_GT(syncs, 200u);
  EXPECT_GT(errors, 0u);
  EXPECT_GT(packets, 0u);
}

TEST(PtRobustness, EmptyAndTinyBuffersAreFine) {
  auto cache = PtSectionCache::Create();
  ASSERT_TRUE(cache.ok());
  auto image = std::make_shared<PtImage>(*cache);
  for (size_t n : {size_t{1}, size_t{2}, size_t{15}, size_t{16}}) {
    std::vector<uint8_t> bytes(n, 0x02);
    auto dec = PtBranchDecoder::Create(bytes, PtDecoderConfig{}, image, 1, 1);
    ASSERT_TRUE(dec.ok());
    uint64_t events = 0;
    ASSERT_TRUE((*dec)
                    ->Decode([&](BranchBatch&& b) {
                      events += b.events.size();
                      return Status::Ok();
                    })
                    .ok());
    EXPECT_EQ(events, 0u);
    EXPECT_EQ(CountPtPackets(bytes, PtDecoderConfig{}).packets, 0u);
  }
}

}  // namespace
}  // namespace pathprof::decoders
