// The PT decoder on a real Intel PT recording (quipper's perf.data of `echo`, kernel 4.14):
// the settings come from the attr and AUXTRACE_INFO, the packet layer decodes cleanly, and
// instruction-flow decoding without the traced binaries fails clearly instead of crashing.
#include <gtest/gtest.h>
#include <intel-pt.h>

#include <string>
#include <vector>

#include "pathprof/decoders/perf_data_reader.h"
#include "pathprof/decoders/pt_config.h"
#include "pathprof/decoders/pt_decoder.h"

#include "common/corpus.h"

namespace pathprof::decoders {
namespace {

constexpr char kRecording[] = "pt/quipper/perf.data.intel_pt-4.14";

struct Recording {
  PerfDataInfo info;
  std::vector<std::vector<uint8_t>> buffers;
  std::vector<uint32_t> tids;
};

// Callers skip first (PATHPROF_SKIP_WITHOUT_CORPUS(kRecording)): a skip here would end only Load.
Recording Load() {
  Recording r;
  auto reader = PerfDataReader::Open(pathprof::testing::CorpusPath(kRecording));
  EXPECT_TRUE(reader.ok()) << reader.status().ToString();
  if (!reader.ok()) return r;
  PerfRecord rec;
  for (;;) {
    auto more = reader->Next(&rec);
    EXPECT_TRUE(more.ok()) << more.status().ToString();
    if (!more.ok() || !*more) break;
    if (auto* a = std::get_if<PerfAuxtrace>(&rec.body)) {
      r.buffers.emplace_back(a->data.begin(), a->data.end());
      r.tids.push_back(a->tid);
    }
  }
  r.info = reader->info();
  return r;
}

TEST(PtQuipper, ConfigComesFromTheAttrAndAuxtraceInfo) {
  PATHPROF_SKIP_WITHOUT_CORPUS(kRecording);
  Recording r = Load();
  auto c = PtConfigFromPerf(r.info);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->cpu_family, 6);
  EXPECT_EQ(c->cpu_model, 78);
  EXPECT_EQ(c->cpu_stepping, 3);
  EXPECT_EQ(c->cpuid_0x15_eax, 2u);
  EXPECT_EQ(c->cpuid_0x15_ebx, 100u);
  EXPECT_EQ(c->nominal_freq, 12);
  EXPECT_EQ(c->mtc_freq, 3);
}

TEST(PtQuipper, PacketLayerDecodesBothBuffersWithoutErrors) {
  PATHPROF_SKIP_WITHOUT_CORPUS(kRecording);
  Recording r = Load();
  auto c = PtConfigFromPerf(r.info);
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(r.buffers.size(), 2u);
  PtPacketStats a = CountPtPackets(r.buffers[0], *c);
  PtPacketStats b = CountPtPackets(r.buffers[1], *c);
  EXPECT_EQ(a.packets, 9106u);
  EXPECT_EQ(b.packets, 75987u);
  EXPECT_EQ(a.errors, 0u);
  EXPECT_EQ(b.errors, 0u);
  EXPECT_EQ(a.pads, 874u);
  EXPECT_EQ(b.pads, 19142u);
  EXPECT_GT(a.packets_by_type[ppt_psb], 0u);
  EXPECT_GT(b.packets_by_type[ppt_tnt_8], 0u);
}

TEST(PtQuipper, InstructionFlowWithoutBinariesStopsWithNoImageError) {
  PATHPROF_SKIP_WITHOUT_CORPUS(kRecording);
  Recording r = Load();
  auto c = PtConfigFromPerf(r.info);
  ASSERT_TRUE(c.ok());
  auto cache = PtSectionCache::Create();
  ASSERT_TRUE(cache.ok());
  auto image = std::make_shared<PtImage>(*cache);  // the traced binaries are not in the corpus
  for (size_t i = 0; i < r.buffers.size(); ++i) {
    auto dec = PtBranchDecoder::Create(r.buffers[i], *c, image, 0, r.tids[i]);
    ASSERT_TRUE(dec.ok()) << dec.status().ToString();
    uint64_t events = 0;
    Status s = (*dec)->Decode([&](BranchBatch&& b) {
      events += b.events.size();
      return Status::Ok();
    });
    ASSERT_TRUE(s.ok()) << s.ToString();
    const PtDecodeStats& st = (*dec)->stats();
    // Only asynchronous transfers (FUP+TIP: interrupts) decode without an image.
    EXPECT_EQ(events, st.async_transfers);
    EXPECT_GT(st.syncs, 0u);
    ASSERT_GT(st.errors, 0u);
    EXPECT_EQ(st.errors_by_code.at(pte_nomap), st.errors) << "every failure is a missing image";
    EXPECT_NE(st.first_errors[0].reason.find("no image for address 0x"), std::string::npos)
        << st.first_errors[0].reason;
  }
}

}  // namespace
}  // namespace pathprof::decoders
