// The live Intel PT source, without a PMU: PT packets synthesized from an exact trace of a real
// program are written into a fake AUX area, with MMAP2 / ITRACE_START / AUX sideband records in
// the fake ring, and PtSource (the code path the live event feeds) must decode exactly what the
// PT decoder gives for the same bytes, and split at a truncated AUX record with a gap.
#include "pathprof/collectors/pt_source.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <intel-pt.h>

#include <algorithm>
#include <climits>

#include "live_source_test_util.h"
#include "pathprof/stepping/exact_tracer.h"
#include "pathprof/decoders/perf_data_format.h"
#include "pathprof/decoders/pt_decoder.h"
#include "pathprof/decoders/pt_synth.h"

namespace pathprof::collectors {
namespace {

std::string Bin(const std::string& name) {
  char buf[PATH_MAX];
  std::string p = std::string(PATHPROF_BIN_DIR) + "/" + name;
  return realpath(p.c_str(), buf) ? std::string(buf) : p;
}

struct Fixture {
  Status status;
  PbsContents exact;
  decoders::PtSynthTrace trace;  // the main thread's
};

const Fixture& Get() {
  static const Fixture* f = [] {
    auto* f = new Fixture;
    stepping::ExactTraceOptions options;
    options.argv = {Bin("example_loop"), "100"};
    stepping::ExactTraceSink sink;
    sink.on_batch = [&](const BranchBatch& b) {
      f->exact.batches.push_back(b);
      return Status::Ok();
    };
    sink.on_image = [&](const ImageRecord& r) {
      f->exact.images.push_back(r);
      return Status::Ok();
    };
    auto stats = stepping::TraceExact(options, sink);
    if (!stats.ok()) {
      f->status = stats.status();
      return f;
    }
    auto traces = decoders::SynthesizePt(f->exact.batches);
    if (!traces.ok()) {
      f->status = traces.status();
      return f;
    }
    f->trace = (*traces)[0];
    return f;
  }();
  return *f;
}

// The attr of the sideband records: what PtAttr sets (TID, TIME, CPU, IDENTIFIER trailers).
decoders::PerfEventAttr SidebandAttr() {
  decoders::PerfEventAttr a;
  a.type = 8;
  a.size = 120;
  a.sample_type = decoders::perf::kSampleTid | decoders::perf::kSampleTime |
                  decoders::perf::kSampleCpu | decoders::perf::kSampleIdentifier;
  a.flags = 1ull << decoders::perf::kAttrSampleIdAll;
  return a;
}

class RecordBuilder {
 public:
  explicit RecordBuilder(uint32_t type) { U32(type).U32(0); }
  RecordBuilder& U32(uint32_t v) { return Put(&v, 4); }
  RecordBuilder& U64(uint64_t v) { return Put(&v, 8); }
  RecordBuilder& Str(const std::string& s) {
    Put(s.data(), s.size());
    bytes_.resize(bytes_.size() + 8 - s.size() % 8, 0);  // NUL-terminated, 8-byte padded
    return *this;
  }
  std::vector<uint8_t> Done(uint32_t pid, uint32_t tid) {
    U32(pid).U32(tid).U64(0).U32(0).U32(0).U64(0);  // sample_id_all: tid, time, cpu, identifier
    const uint16_t size = uint16_t(bytes_.size());
    std::memcpy(bytes_.data() + 6, &size, 2);
    return bytes_;
  }

 private:
  RecordBuilder& Put(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
    return *this;
  }
  std::vector<uint8_t> bytes_;
};

void WriteSideband(testing::FakePerfMmap& mmap, const Fixture& f) {
  for (const ImageRecord& img : f.exact.images) {
    if (img.path.empty() || img.path[0] != '/') continue;
    auto r = RecordBuilder(PERF_RECORD_MMAP2)
                 .U32(img.pid)
                 .U32(img.pid)
                 .U64(img.start)
                 .U64(img.end - img.start)
                 .U64(img.file_offset)
                 .U32(0)
                 .U32(0)
                 .U64(0)
                 .U64(0)
                 .U32(PROT_READ | PROT_EXEC)
                 .U32(MAP_PRIVATE)
                 .Str(img.path)
                 .Done(img.pid, img.pid);
    ASSERT_TRUE(mmap.WriteRecord(r));
  }
  ASSERT_TRUE(mmap.WriteRecord(RecordBuilder(PERF_RECORD_ITRACE_START)
                                   .U32(f.trace.pid)
                                   .U32(f.trace.tid)
                                   .Done(f.trace.pid, f.trace.tid)));
}

void WriteAuxRecord(testing::FakePerfMmap& mmap, uint64_t offset, uint64_t size, uint64_t flags) {
  ASSERT_TRUE(
      mmap.WriteRecord(RecordBuilder(PERF_RECORD_AUX).U64(offset).U64(size).U64(flags).Done(0, 0)));
}

// What the PT decoder gives for `bytes` with the image the exact trace saw.
std::vector<BranchBatch> DecodeDirectly(std::span<const uint8_t> bytes) {
  const Fixture& f = Get();
  auto cache = decoders::PtSectionCache::Create();
  EXPECT_TRUE(cache.ok());
  auto image = std::make_shared<decoders::PtImage>(*cache);
  image->AddImages(f.exact.images);
  std::vector<BranchBatch> out;
  auto dec = decoders::PtBranchDecoder::Create(bytes, {}, image, f.trace.pid, f.trace.tid);
  EXPECT_TRUE(dec.ok());
  if (!dec.ok()) return out;
  EXPECT_TRUE((*dec)
                  ->Decode([&](BranchBatch&& b) {
                    out.push_back(std::move(b));
                    return Status::Ok();
                  })
                  .ok());
  return out;
}

size_t AuxSizeFor(size_t n) {
  size_t s = 4096;
  while (s < n) s *= 2;
  return s;
}

std::vector<BranchEvent> Flatten(const std::vector<BranchBatch>& batches) {
  std::vector<BranchEvent> out;
  for (const auto& b : batches) out.insert(out.end(), b.events.begin(), b.events.end());
  return out;
}

void ExpectSameEvents(const std::vector<BranchEvent>& got, const std::vector<BranchEvent>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(got[i].from == want[i].from && got[i].to == want[i].to &&
                got[i].kind == want[i].kind && got[i].taken == want[i].taken &&
                got[i].instructions == want[i].instructions)
        << "event " << i;
  }
}

#define SKIP_WITHOUT_TRACE()                                   \
  do {                                                         \
    if (Get().status.code() == ErrorCode::kPermission)         \
      GTEST_SKIP() << "ptrace is not allowed here";            \
    ASSERT_TRUE(Get().status.ok()) << Get().status.ToString(); \
  } while (0)

TEST(PtSource, AuxBytesAndSidebandDecodeToWhatTheDecoderGives) {
  SKIP_WITHOUT_TRACE();
  const Fixture& f = Get();
  const std::vector<uint8_t>& bytes = f.trace.bytes;
  ASSERT_GT(bytes.size(), 8192u);
  const std::vector<BranchEvent> want = Flatten(DecodeDirectly(bytes));
  ASSERT_GT(want.size(), 1000u);

  testing::FakePerfMmap mmap(64 * 1024, AuxSizeFor(bytes.size()));
  std::vector<BranchBatch> got;
  PtSourceOptions options;
  options.seed_from_proc_maps = false;
  options.decode_chunk_bytes = SIZE_MAX;  // one piece: the same bytes the direct decode saw
  auto source = PtSource::OverRing(&mmap.ring(), SidebandAttr(), options,
                                   [&](const BranchBatch& b) { got.push_back(b); });
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  WriteSideband(mmap, f);
  const uint64_t at = mmap.WriteAux(bytes);
  WriteAuxRecord(mmap, at, bytes.size(), 0);
  (*source)->Poll();
  EXPECT_TRUE(got.empty()) << "nothing is decoded before a chunk is complete";
  (*source)->Flush();

  ExpectSameEvents(Flatten(got), want);
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got[0].tid, f.trace.tid) << "the thread comes from ITRACE_START";
  const LiveSourceCounters c = (*source)->counters();
  EXPECT_EQ(c.events, want.size());
  EXPECT_EQ(c.windows, got.size());
  EXPECT_EQ(c.records, f.exact.images.size() + 2 -
                           size_t(std::count_if(f.exact.images.begin(), f.exact.images.end(),
                                                [](const ImageRecord& i) {
                                                  return i.path.empty() || i.path[0] != '/';
                                                })));
  EXPECT_TRUE(c.decode_errors.empty());
  EXPECT_FALSE(c.drops.contains("pt_aux_truncated"));
}

TEST(PtSource, ATruncatedAuxRecordSplitsTheTraceWithAGap) {
  SKIP_WITHOUT_TRACE();
  const Fixture& f = Get();
  const std::vector<uint8_t>& bytes = f.trace.bytes;
  // Cut at a PSB near the middle, as the kernel's next buffer would restart.
  static constexpr uint8_t kPsb[16] = {2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82,
                                       2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82};
  auto psb = std::search(bytes.begin() + std::ptrdiff_t(bytes.size() / 2), bytes.end(),
                         std::begin(kPsb), std::end(kPsb));
  ASSERT_NE(psb, bytes.end());
  const size_t cut = size_t(psb - bytes.begin());
  std::vector<BranchBatch> first = DecodeDirectly(std::span(bytes).first(cut));
  std::vector<BranchBatch> second = DecodeDirectly(std::span(bytes).subspan(cut));
  ASSERT_FALSE(second.empty());

  testing::FakePerfMmap mmap(64 * 1024, AuxSizeFor(bytes.size()));
  std::vector<BranchBatch> got;
  PtSourceOptions options;
  options.seed_from_proc_maps = false;
  options.decode_chunk_bytes = SIZE_MAX;
  auto source = PtSource::OverRing(&mmap.ring(), SidebandAttr(), options,
                                   [&](const BranchBatch& b) { got.push_back(b); });
  ASSERT_TRUE(source.ok());
  WriteSideband(mmap, f);
  mmap.WriteAux(std::span(bytes).first(cut));
  WriteAuxRecord(mmap, 0, cut, 1);  // truncated: the buffer was full, trace was lost
  (*source)->Poll();
  ASSERT_EQ(got.size(), first.size()) << "the piece before the cut is decoded at once";
  mmap.WriteAux(std::span(bytes).subspan(cut));
  WriteAuxRecord(mmap, cut, bytes.size() - cut, 0);
  (*source)->Flush();

  std::vector<BranchEvent> want = Flatten(first);
  for (const BranchEvent& e : Flatten(second)) want.push_back(e);
  ExpectSameEvents(Flatten(got), want);
  ASSERT_GT(got.size(), first.size());
  EXPECT_TRUE(got[first.size()].gap_before) << "the batch after lost trace says so";
  EXPECT_EQ((*source)->counters().drops.at("pt_aux_truncated"), 1u);
}

// The offsets of every PSB in `bytes`, per libipt's packet decoder.
std::vector<size_t> PsbOffsets(std::span<const uint8_t> bytes) {
  std::vector<size_t> out;
  pt_config cfg;
  pt_config_init(&cfg);
  cfg.begin = const_cast<uint8_t*>(bytes.data());
  cfg.end = const_cast<uint8_t*>(bytes.data() + bytes.size());
  pt_packet_decoder* dec = pt_pkt_alloc_decoder(&cfg);
  if (pt_pkt_sync_forward(dec) >= 0) {
    for (;;) {
      uint64_t off = 0;
      pt_pkt_get_offset(dec, &off);
      pt_packet p;
      if (pt_pkt_next(dec, &p, sizeof p) < 0) break;
      if (p.type == ppt_psb) out.push_back(size_t(off));
    }
  }
  pt_pkt_free_decoder(dec);
  return out;
}

// A PtSource over a fake ring and AUX area holding the fixture's sideband, collecting batches.
struct FakeRingSource {
  FakeRingSource(size_t trace_bytes, size_t decode_chunk_bytes)
      : mmap(64 * 1024, AuxSizeFor(trace_bytes)) {
    PtSourceOptions options;
    options.seed_from_proc_maps = false;
    options.decode_chunk_bytes = decode_chunk_bytes;
    auto s = PtSource::OverRing(&mmap.ring(), SidebandAttr(), options,
                                [this](const BranchBatch& b) { got.push_back(b); });
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    if (s.ok()) source = std::move(*s);
    WriteSideband(mmap, Get());
  }
  // The AUX bytes at stream offset `at`, announced by their AUX record; then a poll. Returns
  // whether the poll handed over batches.
  bool Arrive(std::span<const uint8_t> bytes, size_t at) {
    mmap.WriteAux(bytes);
    WriteAuxRecord(mmap, at, bytes.size(), 0);
    const size_t before = got.size();
    source->Poll();
    return got.size() > before;
  }
  testing::FakePerfMmap mmap;
  std::vector<BranchBatch> got;
  std::unique_ptr<PtSource> source;
};

// Pieces decoded as they arrive add up to one decode of the whole trace: the same events, block
// lengths included, no gap inside, nothing unresolved or repeated at a piece boundary.
void ExpectOneContinuousStream(const std::vector<BranchBatch>& got, const LiveSourceCounters& c,
                               const std::vector<BranchEvent>& want) {
  ExpectSameEvents(Flatten(got), want);
  ASSERT_FALSE(got.empty());
  EXPECT_TRUE(got[0].gap_before);
  for (size_t i = 1; i < got.size(); ++i) EXPECT_FALSE(got[i].gap_before) << "batch " << i;
  EXPECT_TRUE(c.decode_errors.empty());
  EXPECT_FALSE(c.drops.contains("pt_unresolved_branch"));
  EXPECT_EQ(c.events, want.size());
}

TEST(PtSource, ChunkedPollsDecodeFromPsbToPsbAsOneStream) {
  SKIP_WITHOUT_TRACE();
  const std::vector<uint8_t>& bytes = Get().trace.bytes;
  const std::vector<BranchEvent> want = Flatten(DecodeDirectly(bytes));
  FakeRingSource s(bytes.size(), 2048);  // the trace has a PSB every 4 KiB
  ASSERT_TRUE(s.source);
  const size_t parts = 8, step = (bytes.size() + parts - 1) / parts;
  size_t polls_with_output = 0;
  for (size_t at = 0; at < bytes.size(); at += step)
    polls_with_output +=
        s.Arrive(std::span(bytes).subspan(at, std::min(step, bytes.size() - at)), at);
  s.source->Flush();
  EXPECT_GE(polls_with_output, 2u)
      << "pieces are decoded as the trace arrives; bytes " << bytes.size();
  ExpectOneContinuousStream(s.got, s.source->counters(), want);
}

// Every PSB of the trace as a piece boundary, each arriving with only its PSB+ after it (so the
// piece before it ends right there): whatever the code after a PSB is (a direct call that needs
// no packet, a conditional, a block's middle), the boundary neither repeats nor loses a branch.
TEST(PtSource, EveryPsbAsAPieceBoundaryGivesOneStream) {
  SKIP_WITHOUT_TRACE();
  const Fixture& f = Get();
  decoders::PtSynthOptions synth;
  synth.psb_period = 64;  // hundreds of boundaries, after every kind of branch
  auto traces = decoders::SynthesizePt(f.exact.batches, synth);
  ASSERT_TRUE(traces.ok()) << traces.status().ToString();
  const std::vector<uint8_t>& bytes = (*traces)[0].bytes;
  const std::vector<BranchEvent> want = Flatten(DecodeDirectly(bytes));
  ASSERT_EQ(want.size(), Flatten(DecodeDirectly(f.trace.bytes)).size());
  const std::vector<size_t> psbs = PsbOffsets(bytes);
  ASSERT_GT(psbs.size(), 200u);
  FakeRingSource s(bytes.size(), 1);
  ASSERT_TRUE(s.source);
  size_t written = 0, pieces = 0;
  for (size_t k = 1; k < psbs.size(); ++k) {
    const auto psb_end = decoders::PtPsbPlusEnd(bytes, psbs[k], {});
    ASSERT_TRUE(psb_end.has_value()) << "PSB at " << psbs[k];
    pieces += s.Arrive(std::span(bytes).subspan(written, *psb_end - written), written);
    written = *psb_end;
  }
  s.Arrive(std::span(bytes).subspan(written), written);
  s.source->Flush();
  EXPECT_GE(pieces, psbs.size() - 2) << "a piece per PSB";
  ExpectOneContinuousStream(s.got, s.source->counters(), want);
}

// A PSB+ that has not fully arrived is not cut at: the piece waits for the rest.
TEST(PtSource, APsbWhosePsbPlusIsIncompleteIsNotCutAt) {
  SKIP_WITHOUT_TRACE();
  const std::vector<uint8_t>& bytes = Get().trace.bytes;
  const std::vector<BranchEvent> want = Flatten(DecodeDirectly(bytes));
  const std::vector<size_t> psbs = PsbOffsets(bytes);
  ASSERT_GT(psbs.size(), 2u);
  FakeRingSource s(bytes.size(), 1);
  ASSERT_TRUE(s.source);
  const size_t cut = psbs[1] + 17;  // the PSB pattern and one byte of what follows it
  EXPECT_FALSE(s.Arrive(std::span(bytes).first(cut), 0))
      << "the only later PSB's PSB+ is incomplete";
  EXPECT_TRUE(s.Arrive(std::span(bytes).subspan(cut), cut));
  s.source->Flush();
  ExpectOneContinuousStream(s.got, s.source->counters(), want);
}

}  // namespace
}  // namespace pathprof::collectors
