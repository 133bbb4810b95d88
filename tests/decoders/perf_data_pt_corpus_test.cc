// The perf.data reader on a real Intel PT recording, in file mode and in pipe mode
// (../shared/corpus/pt/quipper; facts from the corpus README and quipper's dump).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "pathprof/decoders/perf_data_reader.h"

#include "common/corpus.h"

namespace pathprof::decoders {
namespace {

const std::string kCorpus = pathprof::testing::CorpusPath("pt/quipper/");

struct PtTrace {
  std::vector<PerfAuxtrace> buffers;  // their `data` spans die with the reader: see `bytes`
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<uint8_t> aux_bytes;  // every AUXTRACE buffer, in file order
  PerfDataInfo info;
  PerfDataStats stats;
  uint64_t aux_records = 0;
  std::vector<PerfSwitch> switches;
};

PtTrace Read(const std::string& file) {
  PtTrace t;
  auto reader = PerfDataReader::Open(kCorpus + file);
  EXPECT_TRUE(reader.ok()) << reader.status().ToString();
  if (!reader.ok()) return t;
  PerfRecord rec;
  while (true) {
    Result<bool> more = reader->Next(&rec);
    EXPECT_TRUE(more.ok()) << more.status().ToString();
    if (!more.ok() || !*more) break;
    if (auto* a = std::get_if<PerfAuxtrace>(&rec.body)) {
      t.buffers.push_back(*a);
      t.bytes.emplace_back(a->data.begin(), a->data.end());
      t.aux_bytes.insert(t.aux_bytes.end(), a->data.begin(), a->data.end());
    }
    if (std::holds_alternative<PerfAux>(rec.body)) ++t.aux_records;
    if (auto* sw = std::get_if<PerfSwitch>(&rec.body)) t.switches.push_back(*sw);
  }
  t.info = reader->info();
  t.stats = reader->stats();
  return t;
}

// `recorded_host`: the features describe the recording host (perf inject rewrites them).
void ExpectIntelPtSettings(const PerfDataInfo& info, bool recorded_host = true) {
  ASSERT_TRUE(info.auxtrace_info.has_value());
  const PerfAuxtraceInfo& a = *info.auxtrace_info;
  EXPECT_EQ(a.type, 1u);  // PERF_AUXTRACE_INTEL_PT
  ASSERT_EQ(a.priv.size(), 17u);
  EXPECT_EQ(a.priv[0], 6u);           // the intel_pt PMU type, = attr.type
  EXPECT_EQ(a.priv[1], 31u);          // time_shift
  EXPECT_EQ(a.priv[2], 1789569706u);  // time_mult
  EXPECT_EQ(a.priv[5], 1u << 10);     // tsc bit in config
  EXPECT_EQ(a.priv[10], 1u << 9);     // mtc bit
  EXPECT_EQ(a.priv[11], 0xfu << 14);  // mtc_freq bits
  EXPECT_EQ(a.priv[12], 100u);        // tsc_ctc_ratio_n = CPUID.15H EBX
  EXPECT_EQ(a.priv[13], 2u);          // tsc_ctc_ratio_d = CPUID.15H EAX
  EXPECT_EQ(a.priv[15], 12u);         // max non-turbo ratio (nominal frequency)
  ASSERT_FALSE(info.attrs.empty());
  const PerfEventAttr& pt = info.attrs[0].attr;
  EXPECT_EQ(pt.type, 6u);
  EXPECT_EQ((pt.config & a.priv[11]) >> 14, 3u);  // mtc freq 3
  if (recorded_host) {
    EXPECT_EQ(info.cpuid, "GenuineIntel,6,78,3");
  }
  EXPECT_EQ(info.arch, "x86_64");
}

TEST(PerfDataPtCorpus, FileModeHasTwoAuxtraceBuffersAndThePtSettings) {
  PATHPROF_SKIP_WITHOUT_CORPUS("pt/quipper/perf.data.intel_pt-4.14");
  PtTrace t = Read("perf.data.intel_pt-4.14");
  EXPECT_FALSE(t.info.pipe_mode);
  ASSERT_EQ(t.buffers.size(), 2u);
  EXPECT_EQ(t.buffers[0].size, 12240u);
  EXPECT_EQ(t.buffers[0].cpu, 0u);
  EXPECT_EQ(t.buffers[0].tid, 3174u);
  EXPECT_EQ(t.buffers[0].reference, 808742885798u);
  EXPECT_EQ(t.buffers[1].size, 137728u);
  EXPECT_EQ(t.buffers[1].idx, 3u);
  EXPECT_EQ(t.buffers[1].cpu, 3u);
  EXPECT_EQ(t.stats.auxtrace_bytes, 12240u + 137728u);
  // Intel PT buffers start with a PSB packet: 02 82 repeated 8 times.
  ASSERT_EQ(t.bytes[0].size(), 12240u);
  for (int i = 0; i < 16; i += 2) {
    EXPECT_EQ(t.bytes[0][i], 0x02);
    EXPECT_EQ(t.bytes[0][i + 1], 0x82);
  }
  EXPECT_GT(t.aux_records, 0u);
  ExpectIntelPtSettings(t.info);
}

// The corpus's piped file is a second recording (tid 3587, other buffer sizes), not the file
// above in pipe form, despite the README; its own facts come from `perf report -D` and the
// byte walk: two buffers of 76,400 and 68,192 bytes, each starting with a PSB.
TEST(PerfDataPtCorpus, PipeModeRecordingParsesToItsLastByte) {
  PATHPROF_SKIP_WITHOUT_CORPUS("pt/quipper/perf.data.piped.intel_pt-4.14");
  PtTrace pipe = Read("perf.data.piped.intel_pt-4.14");
  EXPECT_TRUE(pipe.info.pipe_mode);
  ASSERT_EQ(pipe.buffers.size(), 2u);
  EXPECT_EQ(pipe.buffers[0].size, 76400u);
  EXPECT_EQ(pipe.buffers[0].tid, 3587u);
  EXPECT_EQ(pipe.buffers[1].size, 68192u);
  for (const auto& b : pipe.bytes) {
    ASSERT_GE(b.size(), 2u);
    EXPECT_EQ(b[0], 0x02);
    EXPECT_EQ(b[1], 0x82);
  }
  EXPECT_EQ(pipe.stats.unknown_records, 0u);
  EXPECT_EQ(pipe.stats.records_by_type[perf::kRecordHeaderAttr], 4u);
  EXPECT_EQ(pipe.stats.records_by_type[perf::kRecordHeaderFeature], 12u);
  EXPECT_EQ(pipe.info.attrs.size(), 4u);
  ASSERT_TRUE(pipe.info.auxtrace_info.has_value());
  EXPECT_EQ(pipe.info.auxtrace_info->type, 1u);
  EXPECT_EQ(pipe.info.arch, "x86_64");
  EXPECT_FALSE(pipe.info.cmdline.empty());
  // The first context switches, as `perf report -D` prints them:
  //   SWITCH_CPU_WIDE OUT next pid/tid 8/8, IN prev 0/0, OUT next 0/0
  ASSERT_GE(pipe.switches.size(), 3u);
  EXPECT_TRUE(pipe.switches[0].cpu_wide);
  EXPECT_TRUE(pipe.switches[0].out);
  EXPECT_EQ(pipe.switches[0].next_prev_tid, 8u);
  EXPECT_FALSE(pipe.switches[1].out);
  EXPECT_EQ(pipe.switches[1].next_prev_pid, 0u);
  EXPECT_TRUE(pipe.switches[2].out);
  EXPECT_EQ(pipe.switches[0].sample_id.time, 3314114093584u);
  EXPECT_EQ(pipe.switches[1].sample_id.time, 3314114095662u);
}

// The same trace in both forms: `perf inject -o -` rewrites the file-mode recording as a pipe.
TEST(PerfDataPtCorpus, PerfInjectPipeFormGivesByteIdenticalAuxData) {
  PATHPROF_SKIP_WITHOUT_CORPUS("pt/quipper/perf.data.intel_pt-4.14");
  if (std::system("perf version >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "perf (Debian package linux-perf) is not installed; skipping";
  }
  const std::string out = ::testing::TempDir() + "/pt_inject.pipe";
  const std::string cmd =
      "perf inject -i " + kCorpus + "perf.data.intel_pt-4.14 -o - > " + out + " 2>/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  PtTrace file = Read("perf.data.intel_pt-4.14");
  auto reader = PerfDataReader::Open(out);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_TRUE(reader->info().pipe_mode);
  std::vector<uint8_t> aux;
  std::vector<uint64_t> sizes;
  PerfRecord rec;
  while (true) {
    Result<bool> more = reader->Next(&rec);
    ASSERT_TRUE(more.ok()) << more.status().ToString();
    if (!*more) break;
    if (auto* a = std::get_if<PerfAuxtrace>(&rec.body)) {
      sizes.push_back(a->size);
      aux.insert(aux.end(), a->data.begin(), a->data.end());
    }
  }
  EXPECT_EQ(sizes, (std::vector<uint64_t>{12240, 137728}));
  EXPECT_TRUE(aux == file.aux_bytes);
  ExpectIntelPtSettings(reader->info(), /*recorded_host=*/false);
  EXPECT_EQ(reader->stats().samples, file.stats.samples);
}

}  // namespace
}  // namespace pathprof::decoders
