// The live LBR source, without a PMU: the records of an LBR perf.data synthesized from an exact
// trace of a real program go through a fake perf ring into LbrSource (the code path the live
// event feeds), and the source must hand out exactly the windows the file replay gives.
#include "pathprof/collectors/lbr_source.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <climits>
#include <filesystem>

#include "live_source_test_util.h"
#include "pathprof/decoders/lbr_replay.h"
#include "pathprof/decoders/perf_data_reader.h"
#include "pathprof/decoders/perf_ring_record.h"
#include "pathprof/stepping/exact_tracer.h"
#include "perf_data_writer.h"

namespace pathprof::collectors {
namespace {

std::string Bin(const std::string& name) {
  char buf[PATH_MAX];
  std::string p = std::string(PATHPROF_BIN_DIR) + "/" + name;
  return realpath(p.c_str(), buf) ? std::string(buf) : p;
}

Result<PbsContents> TraceLoop() {
  PbsContents pbs;
  stepping::ExactTraceOptions options;
  options.argv = {Bin("example_loop")};
  stepping::ExactTraceSink sink;
  sink.on_batch = [&](const BranchBatch& b) {
    pbs.batches.push_back(b);
    return Status::Ok();
  };
  sink.on_image = [&](const ImageRecord& r) {
    pbs.images.push_back(r);
    return Status::Ok();
  };
  auto stats = stepping::TraceExact(options, sink);
  if (!stats.ok()) return stats.status();
  return pbs;
}

void ExpectSameBatches(const std::vector<BranchBatch>& got, const std::vector<BranchBatch>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].tid, want[i].tid) << "batch " << i;
    EXPECT_EQ(got[i].gap_before, want[i].gap_before) << "batch " << i;
    ASSERT_EQ(got[i].events.size(), want[i].events.size()) << "batch " << i;
    for (size_t k = 0; k < got[i].events.size(); ++k) {
      const BranchEvent& a = got[i].events[k];
      const BranchEvent& b = want[i].events[k];
      EXPECT_TRUE(a.from == b.from && a.to == b.to && a.kind == b.kind && a.taken == b.taken &&
                  a.instructions == b.instructions)
          << "batch " << i << " event " << k;
    }
  }
}

TEST(LbrSource, RingRecordsOfASynthesizedRecordingGiveTheReplaysWindows) {
  auto pbs = TraceLoop();
  if (!pbs.ok() && pbs.status().code() == ErrorCode::kPermission)
    GTEST_SKIP() << "ptrace is not allowed here: " << pbs.status().ToString();
  ASSERT_TRUE(pbs.ok()) << pbs.status().ToString();
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("pathprof-lbr-source-" + std::to_string(::getpid()) + ".data"))
                               .string();
  decoders::LbrSynthOptions lbr;
  lbr.entries = 32;
  lbr.period = 97;
  ASSERT_TRUE(decoders::WriteLbrPerfData(path, *pbs, lbr).ok());

  std::vector<BranchBatch> want;
  decoders::LbrReplayOptions replay_options;
  replay_options.images.use_debuginfod = false;
  auto replay = decoders::ReplayLbr(path, replay_options, [&](std::vector<BranchBatch>& bs) {
    for (BranchBatch& b : bs) want.push_back(b);
  });
  ASSERT_TRUE(replay.ok()) << replay.status().ToString();
  ASSERT_GT(want.size(), 10u);

  // The same records, one by one, through a 64 KiB fake ring that is drained when full.
  auto reader = decoders::PerfDataReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  const std::vector<uint8_t> file = testing::ReadFileBytes(path);
  testing::FakePerfMmap mmap(64 * 1024, 0);
  LbrSourceOptions options;
  options.seed_from_proc_maps = false;  // the MMAP2 records name every image
  options.images.use_debuginfod = false;
  std::vector<BranchBatch> got;
  auto source = LbrSource::OverRing(&mmap.ring(), reader->attr(0), options,
                                    [&](const BranchBatch& b) { got.push_back(b); });
  // Re-serializing the attr keeps every field but its size (the newest ABI size is written):
  // the live source parses the bytes it opened the event with.
  decoders::PerfEventAttr round =
      decoders::ParsePerfEventAttrBytes(decoders::PerfEventAttrBytes(reader->attr(0)));
  EXPECT_EQ(round.size, 120u);
  round.size = reader->attr(0).size;
  EXPECT_EQ(round, reader->attr(0));
  decoders::PerfRecord rec;
  uint64_t records = 0;
  while (true) {
    auto more = reader->Next(&rec);
    ASSERT_TRUE(more.ok()) << more.status().ToString();
    if (!*more) break;
    if (rec.type >= 64) continue;  // user-space records (perf's own) never appear in a ring
    std::span<const uint8_t> bytes(file.data() + rec.offset, rec.size);
    if (!mmap.WriteRecord(bytes)) {
      source->Poll();
      ASSERT_TRUE(mmap.WriteRecord(bytes));
    }
    ++records;
  }
  source->Poll();
  std::filesystem::remove(path);

  ExpectSameBatches(got, want);
  const LiveSourceCounters c = source->counters();
  EXPECT_EQ(c.records, records);
  EXPECT_EQ(c.windows, want.size());
  EXPECT_TRUE(c.decode_errors.empty());
  EXPECT_EQ(source->lbr_stats().samples, replay->lbr.samples);
  EXPECT_EQ(source->lbr_stats().events, replay->lbr.events);
  // Every loss the replay counted is in the source's counters under its reason.
  EXPECT_EQ(c.drops.contains("lbr_entry_not_a_branch") ? c.drops.at("lbr_entry_not_a_branch") : 0,
            replay->lbr.entries_dropped[size_t(decoders::LbrEntryDrop::kNotABranch)]);
}

TEST(LbrSource, LostRecordsAndGarbageAreCountedByReason) {
  testing::FakePerfMmap mmap(4096, 0);
  decoders::PerfEventAttr attr = decoders::ParsePerfEventAttrBytes(LbrAttr(PerfLbrConfig{}).bytes);
  LbrSourceOptions options;
  options.seed_from_proc_maps = false;
  auto source = LbrSource::OverRing(&mmap.ring(), attr, options, {});
  // PERF_RECORD_LOST: id, lost, then the sample_id_all trailer (TID, TIME, CPU for LbrAttr).
  std::vector<uint8_t> lost(8 + 16 + 24, 0);
  const perf_event_header h{PERF_RECORD_LOST, 0, uint16_t(lost.size())};
  std::memcpy(lost.data(), &h, sizeof h);
  const uint64_t n = 7;
  std::memcpy(lost.data() + 16, &n, 8);
  // A sample too short for its sample_type.
  std::vector<uint8_t> short_sample(16, 0);
  const perf_event_header hs{PERF_RECORD_SAMPLE, 0, 16};
  std::memcpy(short_sample.data(), &hs, sizeof hs);
  ASSERT_TRUE(mmap.WriteRecord(lost));
  ASSERT_TRUE(mmap.WriteRecord(short_sample));
  source->Poll();
  const LiveSourceCounters c = source->counters();
  EXPECT_EQ(c.drops.at("perf_lost_records"), 7u);
  EXPECT_EQ(c.decode_errors.at("perf_record_unparsable"), 1u);
  EXPECT_EQ(c.windows, 0u);
}

}  // namespace
}  // namespace pathprof::collectors
