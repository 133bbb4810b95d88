// The perf.data reader against LBR recordings made by others on real machines
// (../shared/corpus/lbr, facts from the corpus README and the quipper .pb_text dumps).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "pathprof/decoders/perf_data_reader.h"

#include "common/corpus.h"
#include "common/run_command.h"

namespace pathprof::decoders {
namespace {

const std::string kCorpus = pathprof::testing::CorpusDir() + "/";

struct Summary {
  uint64_t samples = 0;
  uint64_t branches = 0;
  uint64_t mmap = 0;
  uint64_t mmap2 = 0;
  uint64_t samples_with_callchain = 0;
  std::vector<size_t> stack_sizes;
  std::vector<PerfMmap> maps;
  std::vector<PerfSample> branch_samples;  // only kept when asked
};

Summary ReadAll(const std::string& file, bool keep_samples = false) {
  Summary s;
  auto reader = PerfDataReader::Open(kCorpus + file);
  EXPECT_TRUE(reader.ok()) << reader.status().ToString();
  if (!reader.ok()) return s;
  PerfRecord rec;
  while (true) {
    Result<bool> more = reader->Next(&rec);
    EXPECT_TRUE(more.ok()) << more.status().ToString();
    if (!more.ok() || !*more) break;
    if (auto* sample = std::get_if<PerfSample>(&rec.body)) {
      ++s.samples;
      s.branches += sample->branches.size();
      if (!sample->callchain.empty()) ++s.samples_with_callchain;
      s.stack_sizes.push_back(sample->branches.size());
      if (keep_samples && (sample->sample_type & perf::kSampleBranchStack)) {
        s.branch_samples.push_back(*sample);
      }
    } else if (auto* m = std::get_if<PerfMmap>(&rec.body)) {
      (m->is_mmap2 ? s.mmap2 : s.mmap)++;
      s.maps.push_back(*m);
    }
  }
  EXPECT_EQ(reader->stats().samples, s.samples);
  EXPECT_EQ(reader->stats().branch_entries, s.branches);
  EXPECT_EQ(reader->stats().unknown_records, 0u);
  return s;
}

TEST(PerfDataLbrCorpus, PropellerSampleHas3740SamplesOf32Entries) {
  PATHPROF_SKIP_WITHOUT_CORPUS("lbr/autofdo/propeller_sample_1.perfdata1");
  auto reader = PerfDataReader::Open(kCorpus + "lbr/autofdo/propeller_sample_1.perfdata1");
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_EQ(reader->arch(), "x86_64");
  EXPECT_TRUE(reader->RequireX86_64().ok());
  ASSERT_EQ(reader->info().attrs.size(), 1u);
  EXPECT_TRUE(reader->info().attrs[0].attr.sample_type & perf::kSampleBranchStack);

  Summary s = ReadAll("lbr/autofdo/propeller_sample_1.perfdata1");
  EXPECT_EQ(s.samples, 3740u);
  EXPECT_EQ(s.branches, 119424u);
  // 3,732 full stacks of 32; 8 samples carry an empty stack (perf script agrees).
  std::map<size_t, int> sizes;
  for (size_t n : s.stack_sizes) ++sizes[n];
  EXPECT_EQ(sizes, (std::map<size_t, int>{{0, 8}, {32, 3732}}));
  EXPECT_EQ(s.mmap, 0u);
  ASSERT_EQ(s.mmap2, 4u);
  // The sample binary's code mapping, as `perf script --show-mmap-events` prints it:
  // 5595/5595: [0x5629ec742000(0x1000) @ 0 00:6a 2006825049 1625258238]: r-xp
  // .../propeller_sample_1.bin.gen
  const PerfMmap& m = s.maps[0];
  EXPECT_EQ(m.pid, 5595u);
  EXPECT_EQ(m.tid, 5595u);
  EXPECT_EQ(m.start, 0x5629ec742000u);
  EXPECT_EQ(m.len, 0x1000u);
  EXPECT_EQ(m.pgoff, 0u);
  EXPECT_EQ(m.maj, 0u);
  EXPECT_EQ(m.min, 0x6au);
  EXPECT_EQ(m.ino, 2006825049u);
  EXPECT_EQ(m.ino_generation, 1625258238u);
  EXPECT_EQ(m.prot, 5u);  // PROT_READ | PROT_EXEC
  EXPECT_TRUE(m.build_id.empty());
  EXPECT_TRUE(m.filename.ends_with("autofdo/testdata/propeller_sample_1.bin.gen")) << m.filename;
  EXPECT_EQ(s.maps[3].filename, "/usr/grte/v4/lib64/libc-2.19.so");
  EXPECT_EQ(s.maps[3].len, 0x1ac000u);
}

TEST(PerfDataLbrCorpus, AutofdoTestLbrHas9232SamplesOf16EntriesWithOldMmap) {
  PATHPROF_SKIP_WITHOUT_CORPUS("lbr/autofdo/test.lbr");
  Summary s = ReadAll("lbr/autofdo/test.lbr");
  EXPECT_EQ(s.samples, 9232u);
  EXPECT_EQ(s.branches, 147712u);
  EXPECT_GT(s.mmap, 0u);
  EXPECT_EQ(s.mmap2, 0u);
}

}  // namespace
}  // namespace pathprof::decoders

namespace pathprof::decoders {
namespace {

// The few fields of quipper's text dump (PerfDataProto) that describe a sample's branch stack.
struct TextSample {
  uint64_t ip = 0, pid = 0, tid = 0, time = 0;
  bool has_hw_idx = false;
  uint64_t hw_idx = 0;
  struct Entry {
    uint64_t from = 0, to = 0, cycles = 0, type = 0, spec = 0;
    bool mispredicted = false, predicted = false, in_tx = false, abort = false;
  };
  std::vector<Entry> entries;
};

std::vector<TextSample> ParsePbText(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::vector<TextSample> out;
  std::string line;
  bool in_sample = false;
  auto value = [](const std::string& l) { return l.substr(l.find(':') + 2); };
  auto u64 = [&](const std::string& l) { return std::stoull(value(l)); };
  auto flag = [&](const std::string& l) { return value(l) == "true"; };
  auto key = [](const std::string& l, const char* k) {
    size_t i = l.find_first_not_of(' ');
    return l.compare(i, std::strlen(k), k) == 0;
  };
  while (std::getline(in, line)) {
    if (line == "  sample_event {") {
      in_sample = true;
      out.emplace_back();
      continue;
    }
    if (!in_sample) continue;
    if (line == "  }") {
      in_sample = false;
      continue;
    }
    TextSample& s = out.back();
    const size_t indent = line.find_first_not_of(' ');
    if (indent == 4) {
      if (key(line, "ip:")) s.ip = u64(line);
      if (key(line, "pid:")) s.pid = u64(line);
      if (key(line, "tid:")) s.tid = u64(line);
      if (key(line, "sample_time_ns:")) s.time = u64(line);
      if (key(line, "branch_stack_hw_idx:")) s.hw_idx = u64(line);
      if (key(line, "no_hw_idx:")) s.has_hw_idx = !flag(line);
      if (key(line, "branch_stack {")) s.entries.emplace_back();
    } else if (indent == 6 && !s.entries.empty()) {
      TextSample::Entry& e = s.entries.back();
      if (key(line, "from_ip:")) e.from = u64(line);
      if (key(line, "to_ip:")) e.to = u64(line);
      if (key(line, "mispredicted:")) e.mispredicted = flag(line);
      if (key(line, "predicted:")) e.predicted = flag(line);
      if (key(line, "in_transaction:")) e.in_tx = flag(line);
      if (key(line, "abort:")) e.abort = flag(line);
      if (key(line, "cycles:")) e.cycles = u64(line);
      if (key(line, "type:")) e.type = u64(line);
      if (key(line, "spec:")) e.spec = u64(line);
    }
  }
  return out;
}

// Compares every branch entry of every sample. quipper orders events by time, so both sides
// are stably sorted by time first.
void CompareWithPbText(const std::string& file, uint64_t* compared_entries) {
  std::vector<TextSample> want = ParsePbText(kCorpus + file + ".pb_text");
  Summary got_all = ReadAll(file, /*keep_samples=*/true);
  std::vector<PerfSample> got = got_all.branch_samples;
  std::erase_if(want, [](const TextSample& t) { return t.entries.empty(); });
  std::erase_if(got, [](const PerfSample& s) { return s.branches.empty(); });
  std::stable_sort(want.begin(), want.end(),
                   [](const TextSample& a, const TextSample& b) { return a.time < b.time; });
  std::stable_sort(got.begin(), got.end(),
                   [](const PerfSample& a, const PerfSample& b) { return a.time < b.time; });
  ASSERT_FALSE(want.empty());
  ASSERT_EQ(got.size(), want.size());
  *compared_entries = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE("sample " + std::to_string(i));
    EXPECT_EQ(got[i].ip, want[i].ip);
    EXPECT_EQ(got[i].pid, want[i].pid);
    EXPECT_EQ(got[i].tid, want[i].tid);
    EXPECT_EQ(got[i].time, want[i].time);
    EXPECT_EQ(got[i].has_branch_hw_index, want[i].has_hw_idx);
    EXPECT_EQ(got[i].branch_hw_index, want[i].hw_idx);
    ASSERT_EQ(got[i].branches.size(), want[i].entries.size());
    for (size_t j = 0; j < got[i].branches.size(); ++j) {
      SCOPED_TRACE("entry " + std::to_string(j));
      const PerfBranchEntry& g = got[i].branches[j];
      const TextSample::Entry& w = want[i].entries[j];
      EXPECT_EQ(g.from, w.from);
      EXPECT_EQ(g.to, w.to);
      EXPECT_EQ(g.mispredicted(), w.mispredicted);
      EXPECT_EQ(g.predicted(), w.predicted);
      EXPECT_EQ(g.in_tx(), w.in_tx);
      EXPECT_EQ(g.abort(), w.abort);
      EXPECT_EQ(g.cycles(), w.cycles);
      EXPECT_EQ(g.type(), w.type);
      EXPECT_EQ(g.spec(), w.spec);
      ++*compared_entries;
    }
  }
}

TEST(PerfDataLbrCorpus, Skylake414MatchesQuipperDumpEntryByEntry) {
  PATHPROF_SKIP_WITHOUT_CORPUS("lbr/quipper/perf.data.branch-4.14");
  PATHPROF_SKIP_WITHOUT_CORPUS("lbr/quipper/perf.data.branch-4.14.pb_text");
  uint64_t n = 0;
  CompareWithPbText("lbr/quipper/perf.data.branch-4.14", &n);
  EXPECT_EQ(n, 13u * 32u);
  Summary s = ReadAll("lbr/quipper/perf.data.branch-4.14");
  EXPECT_EQ(s.branches, 13u * 32u);
}

// The header features, as `perf report --header-only` and `perf buildid-list` print them.
TEST(PerfDataLbrCorpus, Skylake414HeaderFeaturesMatchPerf) {
  PATHPROF_SKIP_WITHOUT_CORPUS("lbr/quipper/perf.data.branch-4.14");
  auto reader = PerfDataReader::Open(kCorpus + "lbr/quipper/perf.data.branch-4.14");
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  const PerfDataInfo& info = reader->info();
  EXPECT_EQ(info.data_offset, 232u);
  EXPECT_EQ(info.data_size, 14352u);
  EXPECT_EQ(info.hostname, "localhost");
  EXPECT_EQ(info.os_release, "4.14.18");
  EXPECT_EQ(info.arch, "x86_64");
  EXPECT_EQ(info.nr_cpus_online, 4u);
  EXPECT_EQ(info.nr_cpus_available, 4u);
  EXPECT_EQ(info.cpu_desc, "Intel(R) Core(TM) m7-6Y75 CPU @ 1.20GHz");
  EXPECT_EQ(info.cpuid, "GenuineIntel,6,78,3");
  // One entry per argv string (perf's header printout joins them with spaces).
  EXPECT_EQ(info.cmdline, (std::vector<std::string>{"/usr/bin/perf", "record", "-b", "-o",
                                                    "/tmp/perf.data.branch-4.14", "--", "echo",
                                                    "Hello, World!"}));
  ASSERT_EQ(info.attrs.size(), 1u);
  EXPECT_EQ(info.attrs[0].attr.size, 112u);
  EXPECT_EQ(info.attrs[0].attr.precise_ip(), 3u);
  EXPECT_EQ(info.attrs[0].attr.branch_sample_type, uint64_t{perf::kBranchAny});
  ASSERT_EQ(info.build_ids.size(), 3u);
  auto hex = [](const std::string& raw) {
    std::string h;
    char buf[3];
    for (unsigned char c : raw) {
      std::snprintf(buf, sizeof buf, "%02x", c);
      h += buf;
    }
    return h;
  };
  EXPECT_EQ(hex(info.build_ids[1].build_id), "a3f83cd3799ef4149d3763cee54dd18b967b7ddb");
  EXPECT_EQ(info.build_ids[1].filename, "/lib64/ld-2.23.so");
  EXPECT_EQ(info.build_ids[2].filename, "[vdso]");
  // TIME_CONV, the first record (quipper's dump).
  ASSERT_TRUE(info.time_conv.has_value());
  EXPECT_EQ(info.time_conv->time_shift, 31u);
  EXPECT_EQ(info.time_conv->time_mult, 1789569706u);
  EXPECT_EQ(info.time_conv->time_zero, 18446744040838051763u);
}

TEST(PerfDataLbrCorpus, AmdSpeculationFlagsMatchQuipperDump) {
  PATHPROF_SKIP_WITHOUT_CORPUS("lbr/quipper/perf.data.branch_stack_spec");
  PATHPROF_SKIP_WITHOUT_CORPUS("lbr/quipper/perf.data.branch_stack_spec.pb_text");
  uint64_t n = 0;
  CompareWithPbText("lbr/quipper/perf.data.branch_stack_spec", &n);
  EXPECT_EQ(n, 128u);
}

TEST(PerfDataLbrCorpus, Aarch64HwIndexMatchesQuipperDumpAndIsRefusedForX86) {
  PATHPROF_SKIP_WITHOUT_CORPUS("lbr/quipper/perf.data.branch_stack_hw_index");
  PATHPROF_SKIP_WITHOUT_CORPUS("lbr/quipper/perf.data.branch_stack_hw_index.pb_text");
  uint64_t n = 0;
  CompareWithPbText("lbr/quipper/perf.data.branch_stack_hw_index", &n);
  EXPECT_EQ(n, 116u);
  auto reader = PerfDataReader::Open(kCorpus + "lbr/quipper/perf.data.branch_stack_hw_index");
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ(reader->arch(), "aarch64");
  Status x86 = reader->RequireX86_64();
  EXPECT_EQ(x86.code(), ErrorCode::kUnsupported);
  EXPECT_NE(x86.message().find("aarch64"), std::string::npos);
  ASSERT_EQ(reader->info().attrs.size(), 3u);
  EXPECT_TRUE(reader->info().attrs[2].attr.branch_hw_index());
}

TEST(PerfDataLbrCorpus, CallgraphAndBranch38Parses1856SamplesWithBoth) {
  PATHPROF_SKIP_WITHOUT_CORPUS("lbr/quipper/perf.data.callgraph_and_branch-3.8");
  Summary s = ReadAll("lbr/quipper/perf.data.callgraph_and_branch-3.8");
  EXPECT_EQ(s.samples, 1856u);
  EXPECT_EQ(s.samples_with_callchain, 1856u);
  EXPECT_EQ(s.branches, 1856u * 16u);  // `perf script -F brstack` prints 29,696 entries
}

// Runs a shell command and returns its stdout ("" when it cannot run).
std::string Capture(const std::string& cmd) {
  return pathprof::testing::RunCommand(cmd).out;
}

TEST(PerfDataLbrCorpus, BranchCountsAgreeWithPerfScript) {
  PATHPROF_SKIP_WITHOUT_CORPUS("lbr/quipper/perf.data.callgraph_and_branch-3.8");
  PATHPROF_SKIP_WITHOUT_CORPUS("lbr/autofdo/test.lbr");
  PATHPROF_SKIP_WITHOUT_CORPUS("lbr/quipper/perf.data.branch-4.14");
  if (std::system("perf version >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "perf (Debian package linux-perf) is not installed; skipping the comparison";
  }
  for (const char* file : {"lbr/quipper/perf.data.callgraph_and_branch-3.8", "lbr/autofdo/test.lbr",
                           "lbr/quipper/perf.data.branch-4.14"}) {
    SCOPED_TRACE(file);
    // Every brstack entry is one whitespace-separated field.
    std::string words =
        Capture("perf script -i " + kCorpus + file + " -F brstack 2>/dev/null | wc -w");
    ASSERT_FALSE(words.empty());
    Summary s = ReadAll(file);
    EXPECT_EQ(s.branches, std::stoull(words));
  }
}

}  // namespace
}  // namespace pathprof::decoders
