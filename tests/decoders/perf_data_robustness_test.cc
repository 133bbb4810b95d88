// Hostile input: the quipper crash corpus, every truncation of a valid file, and byte flips.
// Each must give records or a clear error naming the offset; ASan/UBSan watch for the rest.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "pathprof/decoders/perf_data_reader.h"

#include "common/corpus.h"

namespace pathprof::decoders {
namespace {

const std::string kCorpus = pathprof::testing::CorpusDir() + "/";

std::vector<uint8_t> Load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct Outcome {
  Status status;  // ok: parsed to a clean end
  uint64_t records = 0;
};

Outcome ReadBytes(std::span<const uint8_t> bytes) {
  Outcome o;
  auto reader = PerfDataReader::FromBytes(bytes, "input");
  if (!reader.ok()) {
    o.status = reader.status();
    return o;
  }
  PerfRecord rec;
  while (true) {
    Result<bool> more = reader->Next(&rec);
    if (!more.ok()) {
      o.status = more.status();
      // An error is sticky.
      Result<bool> again = reader->Next(&rec);
      EXPECT_FALSE(again.ok());
      break;
    }
    if (!*more) break;
    ++o.records;
  }
  EXPECT_EQ(reader->stats().records, o.records);
  return o;
}

TEST(PerfDataRobustness, QuipperCrashInputsGiveCleanErrorsOrParses) {
  PATHPROF_SKIP_WITHOUT_CORPUS("fuzz/quipper");
  int files = 0, errors = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kCorpus + "fuzz/quipper")) {
    SCOPED_TRACE(entry.path().filename().string());
    std::vector<uint8_t> bytes = Load(entry.path());
    Outcome o = ReadBytes(bytes);
    ++files;
    if (!o.status.ok()) {
      ++errors;
      EXPECT_FALSE(o.status.message().empty());
      EXPECT_NE(o.status.code(), ErrorCode::kInternal);
    }
  }
  EXPECT_EQ(files, 28);
  EXPECT_GT(errors, 0);
}

TEST(PerfDataRobustness, EveryTruncationOfAFileModeRecordingNamesTheOffset) {
  PATHPROF_SKIP_WITHOUT_CORPUS("lbr/quipper/perf.data.branch-4.14");
  std::vector<uint8_t> full = Load(kCorpus + "lbr/quipper/perf.data.branch-4.14");
  ASSERT_EQ(full.size(), 19036u);
  ASSERT_TRUE(ReadBytes(full).status.ok());
  // Every length through the header, attrs and first records, then every 7th (which still
  // lands inside every record, the feature table and each feature section).
  for (size_t len = 0; len < full.size(); len += (len < 1024 ? 1 : 7)) {
    Outcome o = ReadBytes(std::span(full).first(len));
    ASSERT_FALSE(o.status.ok()) << "a file cut at " << len << " bytes read as complete";
    EXPECT_TRUE(o.status.code() == ErrorCode::kTruncated || o.status.code() == ErrorCode::kCorrupt)
        << o.status.ToString();
    ASSERT_NE(o.status.message().find("offset "), std::string::npos) << o.status.ToString();
  }
}

TEST(PerfDataRobustness, TruncatedRecordNamesItsOwnOffset) {
  PATHPROF_SKIP_WITHOUT_CORPUS("lbr/quipper/perf.data.branch-4.14");
  std::vector<uint8_t> full = Load(kCorpus + "lbr/quipper/perf.data.branch-4.14");
  // Cut 5 bytes into the last data record.
  auto reader = PerfDataReader::FromBytes(full, "full");
  ASSERT_TRUE(reader.ok());
  const uint64_t data_end = reader->info().data_offset + reader->info().data_size;
  PerfRecord rec;
  uint64_t last_offset = 0;
  while (*reader->Next(&rec)) last_offset = rec.offset;
  Outcome o = ReadBytes(std::span(full).first(last_offset + 5));
  EXPECT_EQ(o.status.code(), ErrorCode::kTruncated);
  EXPECT_NE(o.status.message().find("at offset " + std::to_string(last_offset)), std::string::npos)
      << o.status.ToString();
  EXPECT_LT(last_offset, data_end);
}

TEST(PerfDataRobustness, PipeModeTruncationsEndAtARecordOrNameTheOffset) {
  PATHPROF_SKIP_WITHOUT_CORPUS("pt/quipper/perf.data.piped.intel_pt-4.14");
  std::vector<uint8_t> full = Load(kCorpus + "pt/quipper/perf.data.piped.intel_pt-4.14");
  Outcome whole = ReadBytes(full);
  ASSERT_TRUE(whole.status.ok());
  // Record boundaries: a pipe cut exactly there is a shorter, valid stream.
  std::vector<uint64_t> boundaries;
  {
    auto reader = PerfDataReader::FromBytes(full, "pipe");
    ASSERT_TRUE(reader.ok());
    PerfRecord rec;
    while (*reader->Next(&rec)) boundaries.push_back(rec.offset);
  }
  for (size_t len = 0; len < full.size(); len += (len < 2048 ? 1 : 389)) {
    Outcome o = ReadBytes(std::span(full).first(len));
    const bool at_boundary = std::binary_search(boundaries.begin(), boundaries.end(), len);
    if (at_boundary && len >= 16) {
      EXPECT_TRUE(o.status.ok()) << len << ": " << o.status.ToString();
    } else {
      ASSERT_FALSE(o.status.ok()) << len;
      ASSERT_NE(o.status.message().find("offset "), std::string::npos) << o.status.ToString();
    }
  }
}

TEST(PerfDataRobustness, RandomByteFlipsNeverCrash) {
  PATHPROF_SKIP_WITHOUT_CORPUS("lbr/quipper/perf.data.branch-4.14");
  std::vector<uint8_t> full = Load(kCorpus + "lbr/quipper/perf.data.branch-4.14");
  std::mt19937_64 rng(42);
  int clean = 0;
  for (int i = 0; i < 1500; ++i) {
    std::vector<uint8_t> bytes = full;
    const int flips = 1 + rng() % 8;
    for (int f = 0; f < flips; ++f) {
      // Bias towards the header and the first records, where sizes and offsets live.
      const size_t pos = (rng() % 4 == 0) ? rng() % 256 : rng() % bytes.size();
      bytes[pos] ^= static_cast<uint8_t>(1u << (rng() % 8));
    }
    Outcome o = ReadBytes(bytes);
    if (o.status.ok()) ++clean;
  }
  EXPECT_GT(clean, 0);  // some flips hit payload bytes only
}

TEST(PerfDataRobustness, BigEndianAndForeignFilesAreRefusedClearly) {
  std::vector<uint8_t> be = {'2', 'E', 'L', 'I', 'F', 'R', 'E', 'P', 0, 0, 0, 0, 0, 0, 0, 104};
  Outcome o = ReadBytes(be);
  EXPECT_EQ(o.status.code(), ErrorCode::kUnsupported);
  EXPECT_NE(o.status.message().find("big-endian"), std::string::npos);

  std::vector<uint8_t> elf = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  o = ReadBytes(elf);
  EXPECT_EQ(o.status.code(), ErrorCode::kCorrupt);
  EXPECT_NE(o.status.message().find("not a perf.data file"), std::string::npos);

  o = ReadBytes({});
  EXPECT_EQ(o.status.code(), ErrorCode::kTruncated);

  auto missing = PerfDataReader::Open("/nonexistent/perf.data");
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace pathprof::decoders

namespace pathprof::decoders {
namespace {

// Many attrs all pointing at one big id section must not multiply it in memory.
TEST(PerfDataRobustness, SharedIdSectionsAreBoundedByTheFileSize) {
  const uint64_t kAttrs = 2000, kEntry = 64 + 16;
  const uint64_t attrs_off = 104, ids_off = attrs_off + kAttrs * kEntry, ids_size = 64 * 1024;
  std::vector<uint8_t> f(ids_off + ids_size, 0);
  auto put = [&](size_t off, uint64_t v) { std::memcpy(f.data() + off, &v, 8); };
  put(0, perf::kMagicPerfile2);
  put(8, 104);
  put(16, kEntry);
  put(24, attrs_off);
  put(32, kAttrs * kEntry);
  put(40, f.size());  // data: empty, at the end
  put(48, 0);
  for (uint64_t i = 0; i < kAttrs; ++i) {
    const size_t e = attrs_off + i * kEntry;
    f[e + 4] = 64;  // attr.size
    put(e + 64, ids_off);
    put(e + 72, ids_size);
  }
  auto reader = PerfDataReader::FromBytes(f, "shared-ids");
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().code(), ErrorCode::kCorrupt);
  EXPECT_NE(reader.status().message().find("offset "), std::string::npos);
}

}  // namespace
}  // namespace pathprof::decoders
