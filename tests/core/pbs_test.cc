#include "pathprof/core/pbs.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <random>

namespace pathprof {
namespace {

std::string TempPath(const char* tag) {
  return ::testing::TempDir() + "pbs_" + tag + "_" + std::to_string(getpid()) + ".pbs";
}

std::vector<uint8_t> Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

PbsContents Sample() {
  PbsContents c;
  c.meta.push_back({"workload", "loops seed=7"});
  c.images.push_back({42, 0x400000, 0x401000, 0x1000, "/bin/true", std::string("\x01\xff\0z", 4)});
  BranchBatch b;
  b.pid = 42;
  b.tid = 43;
  b.time_ns = 123456789;
  b.gap_before = true;
  b.window = true;
  std::mt19937_64 rng(1);
  uint64_t pc = 0x401000;
  for (int i = 0; i < 1000; ++i) {
    BranchEvent e;
    e.from = pc + rng() % 64;
    e.kind = static_cast<BranchKind>(rng() % kBranchKindCount);
    e.taken = rng() & 1;
    e.to = e.taken ? e.from - 4096 + rng() % 8192 : e.from + 2;
    e.cycles = (i % 3) ? static_cast<uint32_t>(rng() % 500) : 0;
    e.instructions = static_cast<uint16_t>(rng() % 20);
    e.mispredicted = (rng() % 10) == 0;
    b.events.push_back(e);
    pc = e.to;
  }
  // Extreme addresses: deltas must wrap correctly across the whole 64-bit space.
  b.events.push_back({0xffffffffffffff00ull, 0x10, 7, 1, BranchKind::kFarTransfer, true, false});
  b.events.push_back({0x0, 0xffffffffffffffffull, 0, 0, BranchKind::kReturn, true, true});
  c.batches.push_back(b);
  BranchBatch empty;
  empty.pid = 42;
  empty.tid = 44;
  empty.gap_before = false;
  c.batches.push_back(empty);
  return c;
}

TEST(Pbs, RoundTripIsExact) {
  std::string path = TempPath("rt");
  PbsContents in = Sample();
  ASSERT_TRUE(WritePbsFile(path, in).ok());
  auto out = ReadPbsFile(path);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->meta, in.meta);
  EXPECT_EQ(out->images, in.images);
  ASSERT_EQ(out->batches.size(), 2u);
  EXPECT_EQ(out->batches[0], in.batches[0]);
  EXPECT_EQ(out->batches[1], in.batches[1]);
  EXPECT_EQ(out->branch_count(), 1002u);
  // Delta encoding: a thousand nearby branches must not take 24 bytes each.
  EXPECT_LT(Slurp(path).size(), 1002u * 10);
  std::remove(path.c_str());
}

// In memory (continuous mode's archive): the bytes the file gets, byte for byte.
TEST(Pbs, BytesInMemoryAreTheFilesBytes) {
  std::string path = TempPath("mem");
  PbsContents in = Sample();
  ASSERT_TRUE(WritePbsFile(path, in).ok());
  auto bytes = PbsBytes(in);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  const std::vector<uint8_t> file = Slurp(path);
  EXPECT_EQ(*bytes, std::string(file.begin(), file.end()));
  auto back = PbsReader::FromBytes(std::vector<uint8_t>(bytes->begin(), bytes->end()));
  ASSERT_TRUE(back.ok());
  auto out = ReadPbs(&*back);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->batches, in.batches);
  std::remove(path.c_str());
}

TEST(Pbs, EveryTruncationIsAnErrorNamingTheOffset) {
  std::string path = TempPath("trunc");
  ASSERT_TRUE(WritePbsFile(path, Sample()).ok());
  std::vector<uint8_t> bytes = Slurp(path);
  std::remove(path.c_str());
  for (size_t cut = 0; cut < bytes.size(); cut += (cut < 64 ? 1 : 97)) {
    std::vector<uint8_t> part(bytes.begin(), bytes.begin() + cut);
    auto r = PbsReader::FromBytes(part, "cut");
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find("offset"), std::string::npos);
      continue;
    }
    PbsRecord rec;
    Status last;
    while (true) {
      auto more = r->Next(&rec);
      if (!more.ok()) {
        last = more.status();
        break;
      }
      ASSERT_TRUE(*more) << "a truncated file must not read as complete (cut at " << cut << ")";
    }
    EXPECT_EQ(last.code(), ErrorCode::kTruncated) << cut << ": " << last.ToString();
    EXPECT_NE(last.message().find("offset"), std::string::npos);
  }
}

TEST(Pbs, FlippedBytesAreCaughtByTheChecksum) {
  std::string path = TempPath("flip");
  ASSERT_TRUE(WritePbsFile(path, Sample()).ok());
  std::vector<uint8_t> bytes = Slurp(path);
  std::remove(path.c_str());
  int errors = 0;
  for (size_t i = 8; i < bytes.size(); i += 13) {
    std::vector<uint8_t> bad = bytes;
    bad[i] ^= 0x5a;
    auto r = PbsReader::FromBytes(bad, "flip");
    ASSERT_TRUE(r.ok());
    PbsRecord rec;
    while (true) {
      auto more = r->Next(&rec);
      if (!more.ok()) {
        ++errors;
        break;
      }
      if (!*more) break;
    }
  }
  size_t flips = (bytes.size() - 8 + 12) / 13;
  EXPECT_EQ(static_cast<size_t>(errors), flips) << "every corruption must be reported";
}

TEST(Pbs, RejectsForeignFilesAndVersions) {
  auto r = PbsReader::FromBytes({'E', 'L', 'F', 0, 1, 0, 0, 0}, "x");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kCorrupt);
  auto v = PbsReader::FromBytes({'P', 'B', 'S', 0x1a, 9, 0, 0, 0}, "x");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), ErrorCode::kUnsupported);
  auto missing = PbsReader::Open("/nonexistent/file.pbs");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
}

TEST(Pbs, RandomBytesNeverCrash) {
  std::mt19937 rng(3);
  for (int iter = 0; iter < 2000; ++iter) {
    std::vector<uint8_t> bytes = {'P', 'B', 'S', 0x1a, 1, 0, 0, 0};
    size_t n = rng() % 64;
    for (size_t i = 0; i < n; ++i) bytes.push_back(static_cast<uint8_t>(rng()));
    auto r = PbsReader::FromBytes(bytes, "rand");
    ASSERT_TRUE(r.ok());
    PbsRecord rec;
    for (int k = 0; k < 100; ++k) {
      auto more = r->Next(&rec);
      if (!more.ok() || !*more) break;
    }
  }
}

}  // namespace
}  // namespace pathprof
