// Hand-built pipe-mode streams whose every byte is known: each sample_type field after a
// variable-length one (READ group, CALLCHAIN, RAW, BRANCH_STACK with hw_idx, REGS, STACK_USER)
// must land exactly, the attr must be picked by sample id, and sample_id_all trailers decoded.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "pathprof/decoders/perf_data_reader.h"

namespace pathprof::decoders {
namespace {

using namespace perf;  // NOLINT: the format's constants

class Stream {
 public:
  Stream& U8(uint8_t v) { return Put(&v, 1); }
  Stream& U16(uint16_t v) { return Put(&v, 2); }
  Stream& U32(uint32_t v) { return Put(&v, 4); }
  Stream& U64(uint64_t v) { return Put(&v, 8); }
  Stream& Raw(const std::vector<uint8_t>& v) { return Put(v.data(), v.size()); }
  // Starts a record; End fills in its size.
  Stream& Begin(uint32_t type, uint16_t misc = 0) {
    start_ = b_.size();
    return U32(type).U16(misc).U16(0);
  }
  Stream& End() {
    const uint16_t size = static_cast<uint16_t>(b_.size() - start_);
    std::memcpy(b_.data() + start_ + 6, &size, 2);
    return *this;
  }
  std::vector<uint8_t>& bytes() { return b_; }

 private:
  Stream& Put(const void* p, size_t n) {
    const auto* c = static_cast<const uint8_t*>(p);
    b_.insert(b_.end(), c, c + n);
    return *this;
  }
  std::vector<uint8_t> b_;
  size_t start_ = 0;
};

constexpr uint64_t kAllFields =
    kSampleIdentifier | kSampleIp | kSampleTid | kSampleTime | kSampleAddr | kSampleId |
    kSampleStreamId | kSampleCpu | kSamplePeriod | kSampleRead | kSampleCallchain | kSampleRaw |
    kSampleBranchStack | kSampleRegsUser | kSampleStackUser | kSampleWeight | kSampleDataSrc |
    kSampleTransaction | kSampleRegsIntr | kSamplePhysAddr | kSampleCgroup | kSampleDataPageSize |
    kSampleCodePageSize | kSampleAux;

std::vector<uint8_t> Attr(uint64_t branch_sample_type) {
  std::vector<uint8_t> a(kAttrSizeVer5, 0);
  auto put = [&](size_t off, auto v) { std::memcpy(a.data() + off, &v, sizeof v); };
  put(0, uint32_t{4});  // PERF_TYPE_RAW
  put(4, uint32_t{kAttrSizeVer5});
  put(24, kAllFields);
  put(32, uint64_t{kFormatGroup | kFormatId | kFormatLost | kFormatTotalTimeEnabled |
                   kFormatTotalTimeRunning});
  put(40, uint64_t{1} << kAttrSampleIdAll);
  put(72, branch_sample_type);
  put(80, uint64_t{0b1011});  // sample_regs_user: 3 registers
  put(88, uint32_t{64});      // sample_stack_user
  put(96, uint64_t{0b11});    // sample_regs_intr: 2 registers
  return a;
}

// A sample with every field; `hw_index` says whether its attr has BRANCH_HW_INDEX.
void AppendSample(Stream& s, uint64_t id, bool hw_index) {
  s.Begin(kRecordSample, kMiscUser);
  s.U64(id);                                               // IDENTIFIER
  s.U64(0x401000);                                         // IP
  s.U32(10).U32(11);                                       // TID
  s.U64(123456789);                                        // TIME
  s.U64(0xdada);                                           // ADDR
  s.U64(id);                                               // ID
  s.U64(77);                                               // STREAM_ID
  s.U32(3).U32(0);                                         // CPU
  s.U64(1000);                                             // PERIOD
  s.U64(2).U64(500).U64(400);                              // READ: nr, enabled, running
  s.U64(1).U64(100).U64(0);                                //   value, id, lost
  s.U64(2).U64(200).U64(5);                                //   value, id, lost
  s.U64(3).U64(0xa).U64(0xb).U64(0xc);                     // CALLCHAIN
  s.U32(12).Raw({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});  // RAW: 4 + 12 = 16
  s.U64(2);                                                // BRANCH_STACK nr
  if (hw_index) s.U64(7);                                  //   hw_idx
  s.U64(0x1000).U64(0x2000).U64(1 | (uint64_t{300} << 4) | (uint64_t{5} << 20));
  s.U64(0x3000).U64(0x4000).U64(2 | 4 | 8 | (uint64_t{2} << 24));
  s.U64(2).U64(0x11).U64(0x22).U64(0x33);                // REGS_USER: abi, 3 regs
  s.U64(16).Raw(std::vector<uint8_t>(16, 0xee)).U64(8);  // STACK_USER: size, data, dyn_size
  s.U64(42);                                             // WEIGHT
  s.U64(0xd5);                                           // DATA_SRC
  s.U64(0x7a);                                           // TRANSACTION
  s.U64(2).U64(0x44).U64(0x55);                          // REGS_INTR: abi, 2 regs
  s.U64(0xfeed000);                                      // PHYS_ADDR
  s.U64(9);                                              // CGROUP
  s.U64(4096);                                           // DATA_PAGE_SIZE
  s.U64(2 << 20);                                        // CODE_PAGE_SIZE
  s.U64(3).Raw({0xa1, 0xa2, 0xa3});                      // AUX
  s.End();
}

std::vector<uint8_t> BuildStream() {
  Stream s;
  s.U64(kMagicPerfile2).U64(kPipeHeaderSize);
  s.Begin(kRecordHeaderAttr).Raw(Attr(kBranchAny | kBranchHwIndex)).U64(100).U64(101).End();
  s.Begin(kRecordHeaderAttr).Raw(Attr(kBranchAny)).U64(200).End();
  s.Begin(kRecordHeaderFeature).U64(kFeatArch).U32(8).Raw({'x', '8', '6', '_', '6', '4', 0, 0});
  s.End();
  AppendSample(s, 200, false);
  AppendSample(s, 101, true);
  // MMAP with a sample_id_all trailer (TID, TIME, ID, STREAM_ID, CPU, IDENTIFIER).
  s.Begin(kRecordMmap, kMiscUser).U32(10).U32(11).U64(0x400000).U64(0x1000).U64(0);
  s.Raw({'/', 'b', 'i', 'n', '/', 'x', 0, 0});
  s.U32(10).U32(11).U64(555).U64(200).U64(77).U32(3).U32(0).U64(200).End();
  s.Begin(200).U64(0).End();  // a type nobody knows
  s.Begin(kRecordLostSamples).U64(17).U32(10).U32(11).U64(556).U64(100).U64(0).U32(0).U32(0);
  s.U64(100).End();
  s.Begin(kRecordFinishedRound).End();
  return s.bytes();
}

TEST(PerfDataSampleLayout, EveryFieldAfterEveryVariablePartLandsExactly) {
  std::vector<uint8_t> bytes = BuildStream();
  auto reader = PerfDataReader::FromBytes(bytes, "hand-built");
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_TRUE(reader->info().pipe_mode);
  EXPECT_EQ(reader->arch(), "x86_64");
  ASSERT_EQ(reader->info().attrs.size(), 2u);
  EXPECT_EQ(reader->info().attrs[0].ids, (std::vector<uint64_t>{100, 101}));

  std::vector<PerfSample> samples;
  std::vector<PerfRecord> others;
  PerfRecord rec;
  while (true) {
    Result<bool> more = reader->Next(&rec);
    ASSERT_TRUE(more.ok()) << more.status().ToString();
    if (!*more) break;
    if (auto* s = std::get_if<PerfSample>(&rec.body)) {
      samples.push_back(*s);
    } else {
      others.push_back(rec);
    }
  }
  ASSERT_EQ(samples.size(), 2u);
  for (const PerfSample& s : samples) {
    const bool hw = s.id == 101;
    SCOPED_TRACE(hw ? "attr with hw_idx" : "attr without hw_idx");
    EXPECT_EQ(s.attr_index, hw ? 0u : 1u);
    EXPECT_EQ(s.ip, 0x401000u);
    EXPECT_EQ(s.pid, 10u);
    EXPECT_EQ(s.tid, 11u);
    EXPECT_EQ(s.time, 123456789u);
    EXPECT_EQ(s.addr, 0xdadau);
    EXPECT_EQ(s.stream_id, 77u);
    EXPECT_EQ(s.cpu, 3u);
    EXPECT_EQ(s.period, 1000u);
    EXPECT_EQ(s.read_values.size(), 8u * 9u);
    EXPECT_EQ(s.callchain, (std::vector<uint64_t>{0xa, 0xb, 0xc}));
    ASSERT_EQ(s.raw.size(), 12u);
    EXPECT_EQ(s.raw[11], 12);
    EXPECT_EQ(s.has_branch_hw_index, hw);
    EXPECT_EQ(s.branch_hw_index, hw ? 7u : 0u);
    ASSERT_EQ(s.branches.size(), 2u);
    EXPECT_EQ(s.branches[0].from, 0x1000u);
    EXPECT_EQ(s.branches[0].to, 0x2000u);
    EXPECT_TRUE(s.branches[0].mispredicted());
    EXPECT_FALSE(s.branches[0].predicted());
    EXPECT_EQ(s.branches[0].cycles(), 300);
    EXPECT_EQ(s.branches[0].type(), 5);
    EXPECT_FALSE(s.branches[1].mispredicted());
    EXPECT_TRUE(s.branches[1].predicted());
    EXPECT_TRUE(s.branches[1].in_tx());
    EXPECT_TRUE(s.branches[1].abort());
    EXPECT_EQ(s.branches[1].spec(), 2);
    EXPECT_EQ(s.branches[1].cycles(), 0);
    EXPECT_EQ(s.regs_user_abi, 2u);
    EXPECT_EQ(s.regs_user, (std::vector<uint64_t>{0x11, 0x22, 0x33}));
    EXPECT_EQ(s.stack_user.size(), 16u);
    EXPECT_EQ(s.stack_user_dyn_size, 8u);
    EXPECT_EQ(s.weight, 42u);
    EXPECT_EQ(s.data_src, 0xd5u);
    EXPECT_EQ(s.transaction, 0x7au);
    EXPECT_EQ(s.regs_intr, (std::vector<uint64_t>{0x44, 0x55}));
    EXPECT_EQ(s.phys_addr, 0xfeed000u);
    EXPECT_EQ(s.cgroup, 9u);
    EXPECT_EQ(s.data_page_size, 4096u);
    EXPECT_EQ(s.code_page_size, uint64_t{2} << 20);
    ASSERT_EQ(s.aux.size(), 3u);
    EXPECT_EQ(s.aux[2], 0xa3);
  }

  // HEADER_ATTR x2, HEADER_FEATURE, MMAP, unknown, LOST_SAMPLES, FINISHED_ROUND.
  ASSERT_EQ(others.size(), 7u);
  const auto& mmap = std::get<PerfMmap>(others[3].body);
  EXPECT_FALSE(mmap.is_mmap2);
  EXPECT_EQ(mmap.filename, "/bin/x");
  EXPECT_EQ(mmap.start, 0x400000u);
  EXPECT_EQ(mmap.sample_id.time, 555u);
  EXPECT_EQ(mmap.sample_id.id, 200u);
  EXPECT_EQ(mmap.sample_id.stream_id, 77u);
  EXPECT_EQ(mmap.sample_id.cpu, 3u);
  EXPECT_EQ(others[4].type, 200u);
  EXPECT_FALSE(std::get<PerfOtherRecord>(others[4].body).known_type);
  EXPECT_EQ(std::get<PerfLostSamples>(others[5].body).lost, 17u);
  EXPECT_EQ(std::get<PerfLostSamples>(others[5].body).sample_id.time, 556u);
  EXPECT_TRUE(std::holds_alternative<PerfFinishedRound>(others[6].body));

  const PerfDataStats& st = reader->stats();
  EXPECT_EQ(st.records, 9u);
  EXPECT_EQ(st.samples, 2u);
  EXPECT_EQ(st.branch_entries, 4u);
  EXPECT_EQ(st.unknown_records, 1u);
  EXPECT_EQ(st.lost_samples, 17u);
  EXPECT_EQ(st.samples_unknown_id, 0u);
  EXPECT_EQ(st.records_by_type.at(kRecordHeaderAttr), 2u);
}

TEST(PerfDataSampleLayout, AFieldPastTheRecordEndIsAnErrorNamingTheOffset) {
  std::vector<uint8_t> bytes = BuildStream();
  // Shrink the first sample's header.size by 8: its AUX field no longer fits.
  auto reader = PerfDataReader::FromBytes(bytes, "shrunk");
  ASSERT_TRUE(reader.ok());
  PerfRecord rec;
  uint64_t sample_offset = 0;
  while (*reader->Next(&rec)) {
    if (rec.type == kRecordSample) {
      sample_offset = rec.offset;
      break;
    }
  }
  ASSERT_NE(sample_offset, 0u);
  uint16_t size = 0;
  std::memcpy(&size, bytes.data() + sample_offset + 6, 2);
  size -= 8;
  std::memcpy(bytes.data() + sample_offset + 6, &size, 2);
  auto broken = PerfDataReader::FromBytes(bytes, "shrunk");
  ASSERT_TRUE(broken.ok());
  Status err;
  while (true) {
    Result<bool> more = broken->Next(&rec);
    if (!more.ok()) {
      err = more.status();
      break;
    }
    ASSERT_TRUE(*more) << "the stream ended without noticing the short sample";
  }
  EXPECT_EQ(err.code(), ErrorCode::kCorrupt);
  EXPECT_NE(err.message().find("AUX"), std::string::npos) << err.message();
  // The offset named is inside this sample: where the field that did not fit starts.
  const size_t at = err.message().find("at offset ");
  ASSERT_NE(at, std::string::npos);
  const uint64_t offset = std::stoull(err.message().substr(at + 10));
  EXPECT_GT(offset, sample_offset);
  EXPECT_LT(offset, sample_offset + size);
}

TEST(PerfDataSampleLayout, UnknownSampleTypeBitsAreUnsupportedNotGuessed) {
  Stream s;
  s.U64(kMagicPerfile2).U64(kPipeHeaderSize);
  std::vector<uint8_t> attr = Attr(0);
  const uint64_t unknown = kAllFields | (uint64_t{1} << 40);
  std::memcpy(attr.data() + 24, &unknown, 8);
  s.Begin(kRecordHeaderAttr).Raw(attr).U64(1).End();
  s.Begin(kRecordSample).U64(1).End();
  auto reader = PerfDataReader::FromBytes(s.bytes(), "future");
  ASSERT_TRUE(reader.ok());
  PerfRecord rec;
  ASSERT_TRUE(*reader->Next(&rec));
  Result<bool> more = reader->Next(&rec);
  ASSERT_FALSE(more.ok());
  EXPECT_EQ(more.status().code(), ErrorCode::kUnsupported);
}

// The side-band records no corpus file holds, each with a trailer of TID | TIME only.
TEST(PerfDataSampleLayout, SideBandRecordsDecodeTheirFields) {
  Stream s;
  s.U64(kMagicPerfile2).U64(kPipeHeaderSize);
  std::vector<uint8_t> attr = Attr(0);
  const uint64_t tid_time = kSampleTid | kSampleTime;
  std::memcpy(attr.data() + 24, &tid_time, 8);
  s.Begin(kRecordHeaderAttr).Raw(attr).U64(1).End();
  auto trailer = [&](uint64_t time) { s.U32(1).U32(2).U64(time); };
  s.Begin(kRecordFork).U32(5).U32(4).U32(6).U32(4).U64(1000);
  trailer(1000);
  s.End();
  s.Begin(kRecordExit).U32(5).U32(4).U32(6).U32(4).U64(2000);
  trailer(2000);
  s.End();
  s.Begin(kRecordSwitch, kMiscSwitchOut | kMiscSwitchOutPreempt);
  trailer(3000);
  s.End();
  s.Begin(kRecordThrottle).U64(4000).U64(1).U64(9);
  trailer(4000);
  s.End();
  s.Begin(kRecordItraceStart).U32(5).U32(6);
  trailer(5000);
  s.End();
  s.Begin(kRecordLost).U64(1).U64(33);
  trailer(6000);
  s.End();
  s.Begin(kRecordAux).U64(0x100).U64(0x80).U64(1);
  trailer(7000);
  s.End();
  s.Begin(kRecordIdIndex).U64(2).U64(1).U64(0).U64(3).U64(6).U64(2).U64(0).U64(4).U64(7).End();
  s.Begin(kRecordTimeConv).U64(10).U64(20).U64(30).U64(40).U64(0xffff).U8(1).U8(0);
  s.Raw(std::vector<uint8_t>(6, 0)).End();
  s.Begin(kRecordAuxtraceInfo).U32(1).U32(0).U64(6).U64(31).End();
  s.Begin(kRecordAuxtrace).U64(5).U64(0).U64(0x77).U32(0).U32(6).U32(2).U32(0).End();
  s.Raw({0x02, 0x82, 0x02, 0x82, 0x00});  // the AUX bytes after the AUXTRACE record
  s.Begin(kRecordMmap2, kMiscUser | kMiscMmapBuildId).U32(5).U32(6).U64(0x1000).U64(0x2000);
  s.U64(0x3000).U8(3).U8(0).U16(0).Raw({0xab, 0xcd, 0xef}).Raw(std::vector<uint8_t>(17, 0));
  s.U32(5).U32(2).Raw({'/', 'l', 'i', 'b', 0, 0, 0, 0});
  trailer(8000);
  s.End();

  auto reader = PerfDataReader::FromBytes(s.bytes(), "side-band");
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  std::vector<PerfRecord> recs;
  PerfRecord rec;
  while (true) {
    Result<bool> more = reader->Next(&rec);
    ASSERT_TRUE(more.ok()) << more.status().ToString();
    if (!*more) break;
    recs.push_back(rec);
  }
  ASSERT_EQ(recs.size(), 13u);
  const auto& fork = std::get<PerfForkExit>(recs[1].body);
  EXPECT_FALSE(fork.is_exit);
  EXPECT_EQ(fork.pid, 5u);
  EXPECT_EQ(fork.ppid, 4u);
  EXPECT_EQ(fork.tid, 6u);
  EXPECT_EQ(fork.time, 1000u);
  EXPECT_EQ(fork.sample_id.tid, 2u);
  EXPECT_TRUE(std::get<PerfForkExit>(recs[2].body).is_exit);
  const auto& sw = std::get<PerfSwitch>(recs[3].body);
  EXPECT_FALSE(sw.cpu_wide);
  EXPECT_TRUE(sw.out);
  EXPECT_TRUE(sw.preempt);
  EXPECT_EQ(sw.sample_id.time, 3000u);
  EXPECT_EQ(std::get<PerfThrottle>(recs[4].body).stream_id, 9u);
  EXPECT_EQ(std::get<PerfItraceStart>(recs[5].body).tid, 6u);
  EXPECT_EQ(std::get<PerfLost>(recs[6].body).lost, 33u);
  EXPECT_EQ(std::get<PerfAux>(recs[7].body).aux_size, 0x80u);
  EXPECT_EQ(std::get<PerfAux>(recs[7].body).sample_id.time, 7000u);
  const auto& index = std::get<PerfIdIndex>(recs[8].body);
  ASSERT_EQ(index.entries.size(), 2u);
  EXPECT_EQ(index.entries[1].id, 2u);
  EXPECT_EQ(index.entries[1].cpu, 4u);
  EXPECT_EQ(index.entries[1].tid, 7u);
  const auto& tc = std::get<PerfTimeConv>(recs[9].body);
  EXPECT_TRUE(tc.has_cycles);
  EXPECT_EQ(tc.time_cycles, 40u);
  EXPECT_EQ(tc.time_mask, 0xffffu);
  EXPECT_TRUE(tc.cap_user_time_zero);
  EXPECT_FALSE(tc.cap_user_time_short);
  EXPECT_EQ(std::get<PerfAuxtraceInfo>(recs[10].body).priv, (std::vector<uint64_t>{6, 31}));
  const auto& aux = std::get<PerfAuxtrace>(recs[11].body);
  EXPECT_EQ(aux.reference, 0x77u);
  EXPECT_EQ(aux.tid, 6u);
  EXPECT_EQ(aux.cpu, 2u);
  ASSERT_EQ(aux.data.size(), 5u);
  EXPECT_EQ(aux.data[1], 0x82);
  const auto& mmap = std::get<PerfMmap>(recs[12].body);
  EXPECT_TRUE(mmap.is_mmap2);
  EXPECT_EQ(mmap.build_id, std::string("\xab\xcd\xef"));
  EXPECT_EQ(mmap.pgoff, 0x3000u);
  EXPECT_EQ(mmap.prot, 5u);
  EXPECT_EQ(mmap.flags, 2u);
  EXPECT_EQ(mmap.filename, "/lib");
  EXPECT_EQ(mmap.sample_id.time, 8000u);
  EXPECT_EQ(reader->stats().lost_events, 33u);
  EXPECT_EQ(reader->stats().auxtrace_bytes, 5u);
  EXPECT_EQ(reader->info().time_conv->time_mult, 20u);
}

}  // namespace
}  // namespace pathprof::decoders
