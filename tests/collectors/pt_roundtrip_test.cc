// Intel PT synthesis and decoding against exact truth: a real program is traced exactly
// (ptrace single-step), its stream is encoded as the PT packets a CPU would write, and the PT
// decoder must give back the same stream, event for event.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <intel-pt.h>
#include <unistd.h>

#include <climits>
#include <map>

#include "pathprof/stepping/exact_tracer.h"
#include "pathprof/decoders/pt_decoder.h"
#include "pathprof/decoders/pt_synth.h"
#include "pathprof/decoders/x86_branch.h"

namespace pathprof {
namespace {

using decoders::PtBranchDecoder;
using decoders::PtImage;
using decoders::PtSectionCache;
using decoders::PtSynthTrace;

std::string Bin(const std::string& name) {
  char buf[PATH_MAX];
  std::string p = std::string(PATHPROF_BIN_DIR) + "/" + name;
  return realpath(p.c_str(), buf) ? std::string(buf) : p;
}

// Hosts that forbid ptrace (yama scope 3, seccomp) cannot run these tests: skip, saying why.
bool PtraceWorks() {
  static const bool works = [] {
    stepping::ExactTraceOptions o;
    o.argv = {Bin("example_loop_static")};
    o.max_steps = 1;
    auto r = stepping::TraceExact(o, stepping::ExactTraceSink{});
    return r.ok() || r.status().code() != ErrorCode::kPermission;
  }();
  return works;
}
#define SKIP_WITHOUT_PTRACE() \
  if (!PtraceWorks()) GTEST_SKIP() << "ptrace is not allowed on this host"

struct Fixture {
  PbsContents exact;
  std::map<uint32_t, std::vector<BranchEvent>> expected;  // per tid, first-of-segment normalized
  std::vector<PtSynthTrace> traces;
  std::shared_ptr<PtImage> image;
};

// Reads the instruction at `ip` from the file the program mapped there.
bool IsFarBranchAt(const std::vector<ImageRecord>& images, uint64_t ip) {
  for (const auto& img : images) {
    if (ip < img.start || ip >= img.end || img.path.empty() || img.path[0] != '/') continue;
    int fd = open(img.path.c_str(), O_RDONLY);
    uint8_t buf[16];
    ssize_t n = pread(fd, buf, sizeof buf, static_cast<off_t>(img.file_offset + (ip - img.start)));
    close(fd);
    decoders::X86Instruction insn;
    return n > 0 && decoders::DecodeX86Fast(buf, static_cast<size_t>(n), ip, &insn) &&
           insn.is_branch && insn.kind == BranchKind::kFarTransfer;
  }
  return false;
}

Fixture* Make(std::vector<std::string> argv) {
  {
    auto* f = new Fixture;
    stepping::ExactTraceOptions options;
    options.argv = std::move(argv);
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
    EXPECT_TRUE(stats.ok()) << stats.status().ToString();
    if (stats.ok()) {
      EXPECT_EQ(stats->unexpected_transfers, 0u);
      EXPECT_EQ(stats->decode_failures, 0u);
    }
    for (const auto& b : f->exact.batches) {
      auto& v = f->expected[b.tid];
      for (size_t i = 0; i < b.events.size(); ++i) {
        BranchEvent e = b.events[i];
        // PT enables at a segment's first branch: what ran before it in its block is unseen.
        if (i == 0 && b.gap_before) e.instructions = 1;
        v.push_back(e);
      }
    }
    decoders::PtSynthOptions synth;
    const auto& images = f->exact.images;
    synth.is_far_branch_instruction = [&images](uint64_t ip) { return IsFarBranchAt(images, ip); };
    auto traces = decoders::SynthesizePt(f->exact.batches, synth);
    EXPECT_TRUE(traces.ok()) << traces.status().ToString();
    if (traces.ok()) f->traces = std::move(*traces);
    auto cache = PtSectionCache::Create();
    EXPECT_TRUE(cache.ok());
    f->image = std::make_shared<PtImage>(*cache);
    f->image->AddImages(images);
    return f;
  }
}

const Fixture& Get() {
  static Fixture* f = Make({Bin("example_loop"), "100"});
  return *f;
}

struct Decoded {
  std::vector<BranchBatch> batches;
  decoders::PtDecodeStats stats;
};

Decoded Decode(const PtSynthTrace& t, std::span<const uint8_t> bytes,
               std::shared_ptr<PtImage> image = nullptr) {
  Decoded d;
  auto dec = PtBranchDecoder::Create(bytes, decoders::PtDecoderConfig{},
                                     image ? image : Get().image, t.pid, t.tid);
  EXPECT_TRUE(dec.ok()) << dec.status().ToString();
  if (!dec.ok()) return d;
  Status s = (*dec)->Decode([&](BranchBatch&& b) {
    d.batches.push_back(std::move(b));
    return Status::Ok();
  });
  EXPECT_TRUE(s.ok()) << s.ToString();
  d.stats = (*dec)->stats();
  return d;
}

std::vector<BranchEvent> Flatten(const std::vector<BranchBatch>& batches) {
  std::vector<BranchEvent> out;
  for (const auto& b : batches) out.insert(out.end(), b.events.begin(), b.events.end());
  return out;
}

TEST(PtRoundTrip, DecodedStreamEqualsTheExactStream) {
  SKIP_WITHOUT_PTRACE();
  const Fixture& f = Get();
  ASSERT_EQ(f.traces.size(), 1u);
  EXPECT_EQ(f.image->stats().skipped_no_file, 2u);  // [vdso] and [vsyscall]: no file
  const PtSynthTrace& t = f.traces[0];
  const auto& expected = f.expected.at(t.tid);
  ASSERT_GT(expected.size(), 10000u);
  Decoded d = Decode(t, t.bytes);
  EXPECT_EQ(d.stats.errors, 0u) << (d.stats.first_errors.empty() ? ""
                                                                 : d.stats.first_errors[0].reason);
  EXPECT_EQ(d.stats.walk_mismatches, 0u);
  EXPECT_EQ(d.stats.unresolved, 0u);
  std::vector<BranchEvent> got = Flatten(d.batches);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i], expected[i])
        << "event " << i << ": got " << std::hex << got[i].from << "->" << got[i].to << " kind "
        << BranchKindName(got[i].kind) << " taken " << got[i].taken << std::dec << " insns "
        << got[i].instructions << ", want " << std::hex << expected[i].from << "->"
        << expected[i].to << " kind " << BranchKindName(expected[i].kind) << std::dec << " insns "
        << expected[i].instructions;
  }
  // Every kind the program produced made it through (syscalls included).
  std::map<BranchKind, int> kinds;
  for (const auto& e : got) ++kinds[e.kind];
  EXPECT_GT(kinds[BranchKind::kFarTransfer], 0);
  EXPECT_GT(kinds[BranchKind::kReturn], 0);
  EXPECT_GT(kinds[BranchKind::kIndirectCall] + kinds[BranchKind::kIndirectJump], 0);
}

// The offset of the first TIP packet at or after `from`, per libipt's packet decoder. A TIP is
// where the decoder asks for an indirect branch's target, so damage there is met as a bad
// packet; damage to a TNT's first byte would be met as an unexpected packet kind instead
// (pte_bad_query), which depends on what the trace happens to hold in its middle.
uint64_t TipPacketAfter(std::span<const uint8_t> bytes, uint64_t from) {
  pt_config cfg;
  pt_config_init(&cfg);
  cfg.begin = const_cast<uint8_t*>(bytes.data());
  cfg.end = const_cast<uint8_t*>(bytes.data() + bytes.size());
  pt_packet_decoder* dec = pt_pkt_alloc_decoder(&cfg);
  pt_pkt_sync_forward(dec);
  uint64_t off = 0;
  for (;;) {
    pt_pkt_get_offset(dec, &off);
    pt_packet p;
    if (pt_pkt_next(dec, &p, sizeof p) < 0) break;
    if (off >= from && p.type == ppt_tip) break;
  }
  pt_pkt_free_decoder(dec);
  return off;
}

TEST(PtRoundTrip, CorruptByteIsCountedThenDecodingResumesAtTheNextPsb) {
  SKIP_WITHOUT_PTRACE();
  const Fixture& f = Get();
  ASSERT_EQ(f.traces.size(), 1u);
  const PtSynthTrace& t = f.traces[0];
  const auto& expected = f.expected.at(t.tid);
  std::vector<uint8_t> bytes = t.bytes;
  const uint64_t at = TipPacketAfter(bytes, bytes.size() / 2);
  ASSERT_LT(at, bytes.size());
  ASSERT_EQ(bytes[at] & 0x1f, 0x0d) << "a TIP opcode";
  bytes[at] = 0xad;  // a TIP with the reserved IP compression 5: not a valid packet
  Decoded d = Decode(t, bytes);
  ASSERT_EQ(d.stats.errors, 1u);
  EXPECT_EQ(d.stats.first_errors[0].offset, at);
  EXPECT_EQ(d.stats.first_errors[0].code, pte_bad_packet);
  EXPECT_EQ(d.stats.syncs, 2u);  // the start, and the PSB after the damage
  // Two segments: a prefix of the truth, a gap, then exactly the truth's tail.
  ASSERT_EQ(d.batches.empty(), false);
  std::vector<BranchEvent> first, second;
  bool after_gap = false;
  for (size_t i = 0; i < d.batches.size(); ++i) {
    if (i > 0 && d.batches[i].gap_before) after_gap = true;
    auto& dst = after_gap ? second : first;
    dst.insert(dst.end(), d.batches[i].events.begin(), d.batches[i].events.end());
  }
  ASSERT_FALSE(second.empty());
  ASSERT_LE(first.size() + second.size(), expected.size());
  EXPECT_TRUE(std::equal(first.begin(), first.end(), expected.begin()));
  EXPECT_TRUE(std::equal(second.rbegin(), second.rend(), expected.rbegin()));
  // Only what lies between the damage and the next PSB (4 KiB apart) is lost.
  EXPECT_GT(first.size() + second.size(), expected.size() - 3000);
}

// Every thread's trace decodes to that thread's exact stream; signal handler entries survive.
void ExpectRoundTrip(const Fixture& f, size_t threads) {
  ASSERT_EQ(f.traces.size(), threads);
  for (const auto& t : f.traces) {
    Decoded d = Decode(t, t.bytes, f.image);
    EXPECT_EQ(d.stats.errors, 0u);
    EXPECT_EQ(d.stats.walk_mismatches, 0u);
    for (const auto& b : d.batches) EXPECT_EQ(b.tid, t.tid);
    EXPECT_EQ(Flatten(d.batches), f.expected.at(t.tid)) << "thread " << t.tid;
  }
}

TEST(PtRoundTrip, EachThreadDecodesToItsOwnExactStream) {
  SKIP_WITHOUT_PTRACE();
  std::unique_ptr<Fixture> f(Make({Bin("example_threads_static")}));
  ExpectRoundTrip(*f, 5);
}

TEST(PtRoundTrip, SignalHandlerEntriesSurviveAsAsyncTransfers) {
  SKIP_WITHOUT_PTRACE();
  std::unique_ptr<Fixture> f(Make({Bin("example_signals_static")}));
  ExpectRoundTrip(*f, 1);
  Decoded d = Decode(f->traces[0], f->traces[0].bytes, f->image);
  EXPECT_EQ(d.stats.async_transfers, 3u);
}

}  // namespace
}  // namespace pathprof
