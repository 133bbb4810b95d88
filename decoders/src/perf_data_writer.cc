// The perf.data writer: header, one attr, records, and the ARCH/NRCPUS/CMDLINE features.
#include "perf_data_writer.h"

#include <cerrno>
#include <cstring>
#include <utility>

#include "perf_data_internal.h"

namespace pathprof::decoders {
namespace {

constexpr uint32_t kAttrSize = perf::kAttrSizeVer5;
constexpr uint64_t kAttrEntrySize = kAttrSize + 16;  // attr + ids section
constexpr uint64_t kSampleType = perf::kSampleIp | perf::kSampleTid | perf::kSampleTime |
                                 perf::kSamplePeriod | perf::kSampleBranchStack;

class Bytes {
 public:
  void U16(uint16_t v) { Put(&v, 2); }
  void U32(uint32_t v) { Put(&v, 4); }
  void U64(uint64_t v) { Put(&v, 8); }
  void Raw(const void* p, size_t n) { Put(p, n); }
  // NUL-terminated, padded with NULs to a multiple of 8.
  void PaddedString(std::string_view s) {
    Raw(s.data(), s.size());
    const size_t total = (s.size() + 1 + 7) & ~size_t{7};
    b_.resize(b_.size() + total - s.size(), 0);
  }
  void Append(const std::vector<uint8_t>& v) { b_.insert(b_.end(), v.begin(), v.end()); }
  std::vector<uint8_t>& vec() { return b_; }
  size_t size() const { return b_.size(); }

 private:
  void Put(const void* p, size_t n) {
    const auto* c = static_cast<const uint8_t*>(p);
    b_.insert(b_.end(), c, c + n);
  }
  std::vector<uint8_t> b_;
};

// Starts a record; FinishRecord fills in the size.
Bytes StartRecord(uint32_t type, uint16_t misc) {
  Bytes b;
  b.U32(type);
  b.U16(misc);
  b.U16(0);
  return b;
}

Status FinishRecord(Bytes& b, const char* what) {
  if (b.size() > 0xffff) {
    return Error(ErrorCode::kInvalidArgument, std::string("perf.data writer: ") + what +
                                                  " record of " + std::to_string(b.size()) +
                                                  " bytes exceeds the 65,535-byte record limit");
  }
  const uint16_t size = static_cast<uint16_t>(b.size());
  std::memcpy(b.vec().data() + 6, &size, 2);
  return Status::Ok();
}

void SampleIdTrailer(Bytes& b, uint32_t pid, uint32_t tid, uint64_t time) {
  b.U32(pid);
  b.U32(tid);
  b.U64(time);
}

void HeaderString(Bytes& b, std::string_view s) {
  const uint32_t len = static_cast<uint32_t>((s.size() + 1 + 7) & ~size_t{7});
  b.U32(len);
  b.PaddedString(s);
}

}  // namespace

PerfDataWriter::PerfDataWriter(std::FILE* f, std::string path, PerfDataWriterOptions options)
    : file_(f), path_(std::move(path)), options_(std::move(options)) {}

PerfDataWriter::PerfDataWriter(PerfDataWriter&& o) noexcept
    : file_(std::exchange(o.file_, nullptr)),
      path_(std::move(o.path_)),
      options_(std::move(o.options_)),
      data_offset_(o.data_offset_),
      data_size_(o.data_size_),
      samples_(o.samples_),
      build_ids_(std::move(o.build_ids_)) {}

PerfDataWriter& PerfDataWriter::operator=(PerfDataWriter&& o) noexcept {
  if (this != &o) {
    if (file_ != nullptr) std::fclose(file_);
    file_ = std::exchange(o.file_, nullptr);
    path_ = std::move(o.path_);
    options_ = std::move(o.options_);
    data_offset_ = o.data_offset_;
    data_size_ = o.data_size_;
    samples_ = o.samples_;
    build_ids_ = std::move(o.build_ids_);
  }
  return *this;
}

PerfDataWriter::~PerfDataWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

Result<PerfDataWriter> PerfDataWriter::Create(const std::string& path,
                                              PerfDataWriterOptions options) {
  std::FILE* f = std::fopen(path.c_str(), "w+b");
  if (f == nullptr) {
    return Error(ErrorCode::kIo,
                 "perf.data writer: cannot create " + path + ": " + std::strerror(errno));
  }
  PerfDataWriter w(f, path, std::move(options));
  // Header (rewritten by Close), then the attr entry and its one id; data follows.
  Bytes head;
  head.vec().resize(perf::kFileHeaderSize, 0);
  PerfEventAttr attr;
  attr.type = 0;    // PERF_TYPE_HARDWARE
  attr.config = 0;  // PERF_COUNT_HW_CPU_CYCLES
  attr.sample_period = w.options_.sample_period;
  attr.sample_type = kSampleType;
  attr.flags = (1ull << perf::kAttrDisabled) | (1ull << perf::kAttrInherit) |
               (1ull << perf::kAttrExcludeKernel) | (1ull << perf::kAttrExcludeHv) |
               (1ull << perf::kAttrMmap) | (1ull << perf::kAttrComm) |
               (1ull << perf::kAttrEnableOnExec) | (1ull << perf::kAttrTask) |
               (1ull << perf::kAttrSampleIdAll) | (1ull << perf::kAttrMmap2) |
               (1ull << perf::kAttrCommExec);
  attr.branch_sample_type = perf::kBranchAny | perf::kBranchUser;
  head.Append(perf_internal::SerializeAttr(attr, kAttrSize));
  const uint64_t ids_offset = perf::kFileHeaderSize + kAttrEntrySize;
  head.U64(ids_offset);
  head.U64(8);
  head.U64(w.options_.sample_id);
  w.data_offset_ = head.size();
  PATHPROF_RETURN_IF_ERROR(w.WriteAt(0, head.vec()));
  return w;
}

Status PerfDataWriter::WriteAt(uint64_t offset, const std::vector<uint8_t>& bytes) {
  if (file_ == nullptr) {
    return Error(ErrorCode::kInvalidArgument, "perf.data writer: " + path_ + " is closed");
  }
  if (std::fseek(file_, static_cast<long>(offset), SEEK_SET) != 0 ||
      std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size()) {
    return Error(ErrorCode::kIo,
                 "perf.data writer: write to " + path_ + " failed: " + std::strerror(errno));
  }
  return Status::Ok();
}

Status PerfDataWriter::Append(const std::vector<uint8_t>& record) {
  PATHPROF_RETURN_IF_ERROR(WriteAt(data_offset_ + data_size_, record));
  data_size_ += record.size();
  return Status::Ok();
}

Status PerfDataWriter::WriteComm(uint32_t pid, uint32_t tid, std::string_view comm, uint64_t time) {
  Bytes b = StartRecord(perf::kRecordComm, perf::kMiscUser);
  b.U32(pid);
  b.U32(tid);
  b.PaddedString(comm.substr(0, 15));  // TASK_COMM_LEN
  SampleIdTrailer(b, pid, tid, time);
  PATHPROF_RETURN_IF_ERROR(FinishRecord(b, "COMM"));
  return Append(b.vec());
}

Status PerfDataWriter::WriteMmap2(const PerfImage& m) {
  if (m.build_id.size() > 20) {
    return Error(ErrorCode::kInvalidArgument,
                 "perf.data writer: build-id of " + m.path + " is longer than 20 bytes");
  }
  const bool with_id = !m.build_id.empty();
  Bytes b = StartRecord(perf::kRecordMmap2,
                        perf::kMiscUser | (with_id ? perf::kMiscMmapBuildId : uint16_t{0}));
  b.U32(m.pid);
  b.U32(m.tid);
  b.U64(m.start);
  b.U64(m.len);
  b.U64(m.pgoff);
  if (with_id) {
    uint8_t id[24] = {};
    id[0] = static_cast<uint8_t>(m.build_id.size());
    std::memcpy(id + 4, m.build_id.data(), m.build_id.size());
    b.Raw(id, sizeof id);
  } else {
    b.U32(0);  // maj
    b.U32(0);  // min
    b.U64(0);  // ino
    b.U64(0);  // ino_generation
  }
  b.U32(m.prot);
  b.U32(m.flags);
  b.PaddedString(m.path);
  if (with_id) build_ids_.emplace(m.path, m.build_id);
  SampleIdTrailer(b, m.pid, m.tid, m.time);
  PATHPROF_RETURN_IF_ERROR(FinishRecord(b, "MMAP2"));
  return Append(b.vec());
}

Status PerfDataWriter::WriteSample(const PerfLbrSample& s) {
  if (s.branches.size() > kMaxLbrEntriesPerRecord) {
    return Error(ErrorCode::kInvalidArgument, "perf.data writer: a sample holds at most " +
                                                  std::to_string(kMaxLbrEntriesPerRecord) +
                                                  " branch entries, got " +
                                                  std::to_string(s.branches.size()));
  }
  Bytes b = StartRecord(perf::kRecordSample, perf::kMiscUser);
  b.U64(s.ip);
  b.U32(s.pid);
  b.U32(s.tid);
  b.U64(s.time);
  b.U64(s.period);
  b.U64(s.branches.size());
  for (const PerfBranchEntry& e : s.branches) {
    b.U64(e.from);
    b.U64(e.to);
    b.U64(e.flags);
  }
  PATHPROF_RETURN_IF_ERROR(FinishRecord(b, "SAMPLE"));
  PATHPROF_RETURN_IF_ERROR(Append(b.vec()));
  ++samples_;
  return Status::Ok();
}

Status PerfDataWriter::Close() {
  if (file_ == nullptr) {
    return Error(ErrorCode::kInvalidArgument, "perf.data writer: " + path_ + " is closed");
  }
  // Feature sections in bit order: a table of {offset, size}, then the contents. BUILD_ID
  // lists each image's build-id as `perf buildid-list` (and perf2bolt, through it) reads them.
  const int features[] = {perf::kFeatBuildId, perf::kFeatArch, perf::kFeatNrCpus,
                          perf::kFeatCmdline};
  std::vector<Bytes> contents(4);
  for (const auto& [path, id] : build_ids_) {
    const size_t name_len = (path.size() + 1 + 63) & ~size_t{63};  // perf's NAME_ALIGN
    contents[0].U32(0);                                            // header.type: unused
    contents[0].U16(perf::kMiscUser | 0x8000);  // PERF_RECORD_MISC_BUILD_ID_SIZE: size is set
    contents[0].U16(static_cast<uint16_t>(8 + 4 + 24 + name_len));
    contents[0].U32(static_cast<uint32_t>(-1));  // pid: the host machine
    uint8_t bid[24] = {};
    std::memcpy(bid, id.data(), id.size());
    bid[20] = static_cast<uint8_t>(id.size());
    contents[0].Raw(bid, sizeof bid);
    contents[0].Raw(path.data(), path.size());
    std::vector<uint8_t>& v = contents[0].vec();
    v.resize(v.size() + name_len - path.size(), 0);
  }
  HeaderString(contents[1], options_.arch);
  contents[2].U32(1);  // nr_cpus_available
  contents[2].U32(1);  // nr_cpus_online
  contents[3].U32(static_cast<uint32_t>(options_.cmdline.size()));
  for (const std::string& arg : options_.cmdline) HeaderString(contents[3], arg);
  const uint64_t table_offset = data_offset_ + data_size_;
  Bytes tail;
  uint64_t at = table_offset + 16 * std::size(features);
  for (auto& c : contents) {
    tail.U64(at);
    tail.U64(c.size());
    at += c.size();
  }
  for (auto& c : contents) tail.Append(c.vec());
  PATHPROF_RETURN_IF_ERROR(WriteAt(table_offset, tail.vec()));

  Bytes head;
  head.U64(perf::kMagicPerfile2);
  head.U64(perf::kFileHeaderSize);
  head.U64(kAttrEntrySize);
  head.U64(perf::kFileHeaderSize);  // attrs section
  head.U64(kAttrEntrySize);
  head.U64(data_offset_);  // data section
  head.U64(data_size_);
  head.U64(0);  // event_types section (unused since 2.6.x)
  head.U64(0);
  uint64_t bits = 0;
  for (int f : features) bits |= 1ull << f;
  head.U64(bits);
  head.U64(0);
  head.U64(0);
  head.U64(0);
  PATHPROF_RETURN_IF_ERROR(WriteAt(0, head.vec()));
  const bool ok = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!ok) {
    return Error(ErrorCode::kIo,
                 "perf.data writer: closing " + path_ + " failed: " + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace pathprof::decoders
