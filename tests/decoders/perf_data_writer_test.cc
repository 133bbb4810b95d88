// The perf.data writer and the LBR sample synthesizer: hand-computed samples, a round trip
// through our reader, and the real `perf script` reading the file.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "pathprof/decoders/perf_data_reader.h"
#include "perf_data_writer.h"

#include "common/run_command.h"

namespace pathprof::decoders {
namespace {

BranchEvent Taken(uint64_t from, uint64_t to, uint32_t cycles = 0, bool mispredicted = false) {
  BranchEvent e;
  e.from = from;
  e.to = to;
  e.kind = BranchKind::kConditional;
  e.cycles = cycles;
  e.mispredicted = mispredicted;
  return e;
}

// Branch i goes from 0x401000 + 0x20*i to 0x401010 + 0x20*i.
BranchEvent Nth(int i) {
  return Taken(0x401000 + 0x20 * i, 0x401010 + 0x20 * i, i, i % 3 == 0);
}

std::vector<uint64_t> Froms(const PerfLbrSample& s) {
  std::vector<uint64_t> v;
  for (const auto& e : s.branches) v.push_back(e.from);
  return v;
}

TEST(LbrSampleSynthesizer, SamplesEveryPeriodTakenBranchesNewestFirst) {
  LbrSampleSynthesizer synth({.entries = 4, .period = 3});
  BranchBatch batch;
  batch.pid = batch.tid = 7;
  batch.time_ns = 100;
  for (int i = 1; i <= 10; ++i) batch.events.push_back(Nth(i));
  BranchEvent not_taken = Nth(99);
  not_taken.taken = false;
  batch.events.insert(batch.events.begin() + 2, not_taken);  // ignored: not a taken branch
  std::vector<PerfLbrSample> out;
  synth.Add(batch, &out);
  ASSERT_EQ(out.size(), 3u);  // after taken branches 3, 6 and 9
  EXPECT_EQ(Froms(out[0]), (std::vector<uint64_t>{Nth(3).from, Nth(2).from, Nth(1).from}));
  EXPECT_EQ(Froms(out[1]),
            (std::vector<uint64_t>{Nth(6).from, Nth(5).from, Nth(4).from, Nth(3).from}));
  EXPECT_EQ(Froms(out[2]),
            (std::vector<uint64_t>{Nth(9).from, Nth(8).from, Nth(7).from, Nth(6).from}));
  EXPECT_EQ(out[2].ip, Nth(9).to);
  EXPECT_EQ(out[2].period, 3u);
  EXPECT_EQ(out[2].tid, 7u);
  // Flags: branch 9 was mispredicted (9 % 3 == 0) with 9 cycles; branch 8 predicted.
  EXPECT_TRUE(out[2].branches[0].mispredicted());
  EXPECT_FALSE(out[2].branches[0].predicted());
  EXPECT_EQ(out[2].branches[0].cycles(), 9);
  EXPECT_FALSE(out[2].branches[1].mispredicted());
  EXPECT_TRUE(out[2].branches[1].predicted());
  EXPECT_EQ(synth.taken_branches(), 10u);

  // The counter carries on (branch 10 was 1 of 3); a gap clears the history.
  BranchBatch next;
  next.pid = next.tid = 7;
  next.gap_before = true;
  next.events = {Nth(20), Nth(21), Nth(22)};
  out.clear();
  synth.Add(next, &out);
  ASSERT_EQ(out.size(), 1u);  // at branch 21: 10, 20, 21
  EXPECT_EQ(Froms(out[0]), (std::vector<uint64_t>{Nth(21).from, Nth(20).from}));
}

TEST(LbrSampleSynthesizer, ThreadsCountSeparately) {
  LbrSampleSynthesizer synth({.entries = 8, .period = 2});
  std::vector<PerfLbrSample> out;
  for (uint32_t tid : {1u, 2u, 1u}) {
    BranchBatch b;
    b.pid = 1;
    b.tid = tid;
    b.gap_before = false;
    b.events = {Nth(static_cast<int>(tid))};
    synth.Add(b, &out);
  }
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].tid, 1u);
  EXPECT_EQ(Froms(out[0]), (std::vector<uint64_t>{Nth(1).from, Nth(1).from}));
}

PbsContents ExamplePbs() {
  PbsContents pbs;
  ImageRecord img;
  img.pid = 4242;
  img.start = 0x400000;
  img.end = 0x402000;
  img.file_offset = 0;
  img.path = "/usr/bin/example";
  img.build_id = std::string(
      "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10"
      "\x11\x12\x13\x14",
      20);
  pbs.images.push_back(img);
  BranchBatch b;
  b.pid = 4242;
  b.tid = 4243;
  b.time_ns = 5000;
  for (int i = 0; i < 100; ++i) b.events.push_back(Nth(i % 50));
  pbs.batches.push_back(b);
  return pbs;
}

TEST(PerfDataWriter, RoundTripsThroughTheReader) {
  const std::string path = ::testing::TempDir() + "/writer_roundtrip.perf.data";
  PbsContents pbs = ExamplePbs();
  const LbrSynthOptions lbr{.entries = 16, .period = 10};
  ASSERT_TRUE(WriteLbrPerfData(path, pbs, lbr).ok());

  std::vector<PerfLbrSample> want;
  LbrSampleSynthesizer synth(lbr);
  synth.Add(pbs.batches[0], &want);
  ASSERT_EQ(want.size(), 10u);

  auto reader = PerfDataReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  const PerfDataInfo& info = reader->info();
  EXPECT_EQ(info.arch, "x86_64");
  EXPECT_EQ(info.cmdline, (std::vector<std::string>{"pathprof", "synthesized-lbr"}));
  EXPECT_EQ(info.nr_cpus_online, 1u);
  ASSERT_EQ(info.attrs.size(), 1u);
  const PerfEventAttr& attr = info.attrs[0].attr;
  EXPECT_EQ(attr.sample_type, uint64_t{perf::kSampleIp | perf::kSampleTid | perf::kSampleTime |
                                       perf::kSamplePeriod | perf::kSampleBranchStack});
  EXPECT_EQ(attr.branch_sample_type, uint64_t{perf::kBranchAny | perf::kBranchUser});
  EXPECT_TRUE(attr.exclude_kernel());
  EXPECT_FALSE(attr.exclude_user());
  EXPECT_TRUE(attr.sample_id_all());
  EXPECT_EQ(attr.sample_period, 10u);
  EXPECT_EQ(attr.size, perf::kAttrSizeVer5);
  EXPECT_EQ(info.attrs[0].ids, (std::vector<uint64_t>{1}));

  std::vector<PerfLbrSample> got;
  int comms = 0, mmaps = 0;
  PerfRecord rec;
  while (true) {
    Result<bool> more = reader->Next(&rec);
    ASSERT_TRUE(more.ok()) << more.status().ToString();
    if (!*more) break;
    if (auto* s = std::get_if<PerfSample>(&rec.body)) {
      got.push_back({s->pid, s->tid, s->time, s->ip, s->period, s->branches});
    } else if (auto* c = std::get_if<PerfComm>(&rec.body)) {
      ++comms;
      EXPECT_EQ(c->comm, "pathprof-synth");
      EXPECT_EQ(c->tid, 4243u);
      EXPECT_EQ(c->sample_id.tid, 4243u);
    } else if (auto* m = std::get_if<PerfMmap>(&rec.body)) {
      ++mmaps;
      EXPECT_TRUE(m->is_mmap2);
      EXPECT_EQ(m->start, 0x400000u);
      EXPECT_EQ(m->len, 0x2000u);
      EXPECT_EQ(m->filename, "/usr/bin/example");
      EXPECT_EQ(m->build_id, pbs.images[0].build_id);
      EXPECT_EQ(m->prot, 5u);
    }
  }
  EXPECT_EQ(comms, 1);
  EXPECT_EQ(mmaps, 1);
  EXPECT_EQ(got, want);
  EXPECT_EQ(reader->stats().branch_entries, 10u + 9u * 16u);  // the first sample sees 10
}

std::string Capture(const std::string& cmd) {
  return pathprof::testing::RunCommand(cmd).out;
}

TEST(PerfDataWriter, PerfScriptReadsTheFileWithoutComplaint) {
  if (std::system("perf version >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "perf (Debian package linux-perf) is not installed; skipping";
  }
  const std::string path = ::testing::TempDir() + "/writer_perf_script.perf.data";
  PbsContents pbs = ExamplePbs();
  const LbrSynthOptions lbr{.entries = 8, .period = 25};
  ASSERT_TRUE(WriteLbrPerfData(path, pbs, lbr).ok());
  std::vector<PerfLbrSample> want;
  LbrSampleSynthesizer synth(lbr);
  synth.Add(pbs.batches[0], &want);
  ASSERT_EQ(want.size(), 4u);

  const std::string err_path = path + ".stderr";
  const std::string out = Capture("perf script -i " + path + " -F ip,brstack 2>" + err_path);
  const std::string err = Capture("cat " + err_path);
  EXPECT_EQ(err, "") << "perf script complained";
  // One line per sample: the ip, then FROM/TO/M-or-P/... per entry, newest first.
  std::istringstream lines(out);
  std::string line;
  size_t i = 0;
  while (std::getline(lines, line)) {
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    ASSERT_LT(i, want.size()) << line;
    std::istringstream words(line);
    std::string ip;
    words >> ip;
    EXPECT_EQ(std::stoull(ip, nullptr, 16), want[i].ip);
    std::string entry;
    size_t j = 0;
    while (words >> entry) {
      ASSERT_LT(j, want[i].branches.size()) << line;
      const PerfBranchEntry& e = want[i].branches[j];
      const size_t slash = entry.find('/');
      EXPECT_EQ(std::stoull(entry.substr(0, slash), nullptr, 16), e.from) << entry;
      EXPECT_EQ(std::stoull(entry.substr(slash + 1), nullptr, 16), e.to) << entry;
      EXPECT_NE(entry.find(e.mispredicted() ? "/M/" : "/P/"), std::string::npos) << entry;
      // FROM/TO/M|P/in_tx/abort/cycles/
      size_t cycles_at = slash;
      for (int k = 0; k < 4; ++k) cycles_at = entry.find('/', cycles_at + 1);
      EXPECT_EQ(std::stoul(entry.substr(cycles_at + 1)), e.cycles()) << entry;
      ++j;
    }
    EXPECT_EQ(j, want[i].branches.size());
    ++i;
  }
  EXPECT_EQ(i, want.size());
}

}  // namespace
}  // namespace pathprof::decoders
