#include "pathprof/core/pbs.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "varint.h"

namespace pathprof {
namespace {

constexpr char kMagic[4] = {'P', 'B', 'S', 0x1a};
constexpr uint8_t kTypeBatch = 1;
constexpr uint8_t kTypeImage = 2;
constexpr uint8_t kTypeMeta = 3;
constexpr uint8_t kTypeEnd = 0xff;
// A record larger than this is taken as corruption rather than allocated.
constexpr uint64_t kMaxPayload = 1ull << 31;

constexpr uint8_t kFlagGap = 1, kFlagWindow = 2;
constexpr uint8_t kEvTaken = 1 << 3, kEvMispredicted = 1 << 4, kEvHasCycles = 1 << 5,
                  kEvHasInstructions = 1 << 6;

void PutString(std::vector<uint8_t>& out, const std::string& s) {
  PutVarint(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

uint32_t Crc(uint8_t type, const std::vector<uint8_t>& len_bytes, const uint8_t* payload,
             size_t n) {
  uLong crc = crc32(0L, Z_NULL, 0);
  crc = crc32(crc, &type, 1);
  crc = crc32(crc, len_bytes.data(), static_cast<uInt>(len_bytes.size()));
  // zlib's length argument is 32-bit; payloads are bounded by kMaxPayload.
  crc = crc32(crc, payload, static_cast<uInt>(n));
  return static_cast<uint32_t>(crc);
}

// Decodes one payload; `base` is the file offset of the payload for error messages.
class PayloadParser {
 public:
  PayloadParser(const std::vector<uint8_t>& p, const std::string& name, uint64_t base)
      : p_(p), name_(name), base_(base) {}

  Status Fail(const char* what) const {
    return Error(ErrorCode::kCorrupt, "pbs file " + name_ + ": " + what + " at offset " +
                                          std::to_string(base_ + pos_) +
                                          "; the file is damaged: re-record or re-synthesize it");
  }
  bool Varint(uint64_t* v) { return GetVarint(p_.data(), p_.size(), &pos_, v); }
  bool Byte(uint8_t* b) {
    if (pos_ >= p_.size()) return false;
    *b = p_[pos_++];
    return true;
  }
  bool String(std::string* s) {
    uint64_t n;
    if (!Varint(&n) || n > p_.size() - pos_) return false;
    s->assign(reinterpret_cast<const char*>(p_.data() + pos_), n);
    pos_ += n;
    return true;
  }
  size_t remaining() const { return p_.size() - pos_; }
  bool done() const { return pos_ == p_.size(); }

 private:
  const std::vector<uint8_t>& p_;
  const std::string& name_;
  uint64_t base_;
  size_t pos_ = 0;
};

Status ParseBatch(PayloadParser& in, BranchBatch* b) {
  uint64_t pid, tid, time, n;
  uint8_t flags;
  if (!in.Varint(&pid) || !in.Varint(&tid) || !in.Varint(&time) || !in.Byte(&flags) ||
      !in.Varint(&n))
    return in.Fail("bad batch header");
  if (pid > UINT32_MAX || tid > UINT32_MAX) return in.Fail("pid/tid out of range");
  // Each event takes at least 3 bytes: refuse counts the payload cannot hold before allocating.
  if (n > in.remaining() / 3) return in.Fail("event count larger than the record");
  b->pid = static_cast<uint32_t>(pid);
  b->tid = static_cast<uint32_t>(tid);
  b->time_ns = time;
  b->gap_before = flags & kFlagGap;
  b->window = flags & kFlagWindow;
  b->events.clear();
  b->events.reserve(n);
  uint64_t prev_to = 0;
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t dfrom, dto, cycles = 0, insns = 0;
    uint8_t bits;
    if (!in.Varint(&dfrom) || !in.Varint(&dto) || !in.Byte(&bits)) return in.Fail("bad event");
    if ((bits & 7) >= kBranchKindCount || (bits & 0x80)) return in.Fail("bad event kind bits");
    if ((bits & kEvHasCycles) && (!in.Varint(&cycles) || cycles > UINT32_MAX))
      return in.Fail("bad cycle count");
    if ((bits & kEvHasInstructions) && (!in.Varint(&insns) || insns > UINT16_MAX))
      return in.Fail("bad instruction count");
    BranchEvent e;
    e.from = prev_to + static_cast<uint64_t>(UnZigZag(dfrom));
    e.to = e.from + static_cast<uint64_t>(UnZigZag(dto));
    e.kind = static_cast<BranchKind>(bits & 7);
    e.taken = bits & kEvTaken;
    e.mispredicted = bits & kEvMispredicted;
    e.cycles = static_cast<uint32_t>(cycles);
    e.instructions = static_cast<uint16_t>(insns);
    b->events.push_back(e);
    prev_to = e.to;
  }
  if (!in.done()) return in.Fail("trailing bytes after batch events");
  return Status::Ok();
}

}  // namespace

// ---------------------------------------------------------------- writer

Result<PbsWriter> PbsWriter::Create(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f)
    return Error(ErrorCode::kIo, "cannot create pbs file " + path + ": " + std::strerror(errno));
  return OnStream(f, path);
}

Result<PbsWriter> PbsWriter::OnStream(std::FILE* f, std::string name) {
  uint8_t header[8];
  std::memcpy(header, kMagic, 4);
  header[4] = kPbsVersion & 0xff;
  header[5] = kPbsVersion >> 8;
  header[6] = header[7] = 0;
  if (std::fwrite(header, 1, sizeof header, f) != sizeof header) {
    std::fclose(f);
    return Error(ErrorCode::kIo, "cannot write pbs header to " + name);
  }
  return PbsWriter(f, std::move(name));
}

PbsWriter::PbsWriter(PbsWriter&& o) noexcept {
  *this = std::move(o);
}
PbsWriter& PbsWriter::operator=(PbsWriter&& o) noexcept {
  if (this != &o) {
    if (file_) std::fclose(file_);
    file_ = o.file_;
    o.file_ = nullptr;
    path_ = std::move(o.path_);
    records_ = o.records_;
    scratch_ = std::move(o.scratch_);
  }
  return *this;
}
PbsWriter::~PbsWriter() {
  if (file_) std::fclose(file_);  // not Close(): an unfinished file must read as truncated
}

Status PbsWriter::WriteRecord(uint8_t type, const std::vector<uint8_t>& payload) {
  if (!file_) return Error(ErrorCode::kInvalidArgument, "pbs writer for " + path_ + " is closed");
  if (payload.size() > kMaxPayload)
    return Error(ErrorCode::kInvalidArgument,
                 "pbs record too large for " + path_ + ": split the batch");
  std::vector<uint8_t> len;
  PutVarint(len, payload.size());
  uint32_t crc = Crc(type, len, payload.data(), payload.size());
  uint8_t crc_bytes[4] = {static_cast<uint8_t>(crc), static_cast<uint8_t>(crc >> 8),
                          static_cast<uint8_t>(crc >> 16), static_cast<uint8_t>(crc >> 24)};
  bool ok = std::fwrite(&type, 1, 1, file_) == 1 &&
            std::fwrite(len.data(), 1, len.size(), file_) == len.size() &&
            std::fwrite(payload.data(), 1, payload.size(), file_) == payload.size() &&
            std::fwrite(crc_bytes, 1, 4, file_) == 4;
  if (!ok) return Error(ErrorCode::kIo, "write failed on pbs file " + path_ + " (disk full?)");
  ++records_;
  return Status::Ok();
}

Status PbsWriter::Write(const BranchBatch& b) {
  auto& p = scratch_;
  p.clear();
  p.reserve(16 + b.events.size() * 5);
  PutVarint(p, b.pid);
  PutVarint(p, b.tid);
  PutVarint(p, b.time_ns);
  p.push_back((b.gap_before ? kFlagGap : 0) | (b.window ? kFlagWindow : 0));
  PutVarint(p, b.events.size());
  uint64_t prev_to = 0;
  for (const BranchEvent& e : b.events) {
    PutVarint(p, ZigZag(static_cast<int64_t>(e.from - prev_to)));
    PutVarint(p, ZigZag(static_cast<int64_t>(e.to - e.from)));
    uint8_t bits = static_cast<uint8_t>(e.kind) & 7;
    if (e.taken) bits |= kEvTaken;
    if (e.mispredicted) bits |= kEvMispredicted;
    if (e.cycles) bits |= kEvHasCycles;
    if (e.instructions) bits |= kEvHasInstructions;
    p.push_back(bits);
    if (e.cycles) PutVarint(p, e.cycles);
    if (e.instructions) PutVarint(p, e.instructions);
    prev_to = e.to;
  }
  return WriteRecord(kTypeBatch, p);
}

Status PbsWriter::Write(const ImageRecord& im) {
  auto& p = scratch_;
  p.clear();
  PutVarint(p, im.pid);
  PutVarint(p, im.start);
  PutVarint(p, im.end);
  PutVarint(p, im.file_offset);
  PutString(p, im.path);
  PutString(p, im.build_id);
  return WriteRecord(kTypeImage, p);
}

Status PbsWriter::Write(const MetaRecord& m) {
  auto& p = scratch_;
  p.clear();
  PutString(p, m.key);
  PutString(p, m.value);
  return WriteRecord(kTypeMeta, p);
}

Status PbsWriter::Close() {
  if (!file_) return Status::Ok();
  std::vector<uint8_t> p;
  PutVarint(p, records_);
  Status s = WriteRecord(kTypeEnd, p);
  int rc = std::fclose(file_);
  file_ = nullptr;
  if (s.ok() && rc != 0) return Error(ErrorCode::kIo, "closing pbs file " + path_ + " failed");
  return s;
}

// ---------------------------------------------------------------- reader

PbsReader::PbsReader(PbsReader&& o) noexcept {
  *this = std::move(o);
}
PbsReader& PbsReader::operator=(PbsReader&& o) noexcept {
  if (this != &o) {
    if (file_) std::fclose(file_);
    file_ = o.file_;
    o.file_ = nullptr;
    memory_ = std::move(o.memory_);
    memory_pos_ = o.memory_pos_;
    from_memory_ = o.from_memory_;
    name_ = std::move(o.name_);
    offset_ = o.offset_;
    file_size_ = o.file_size_;
    records_ = o.records_;
    ended_ = o.ended_;
    payload_ = std::move(o.payload_);
  }
  return *this;
}
PbsReader::~PbsReader() {
  if (file_) std::fclose(file_);
}

Status PbsReader::ReadExact(void* dst, size_t n, const char* what) {
  size_t got;
  if (from_memory_) {
    got = std::min(n, memory_.size() - memory_pos_);
    if (got) std::memcpy(dst, memory_.data() + memory_pos_, got);
    memory_pos_ += got;
  } else {
    got = std::fread(dst, 1, n, file_);
  }
  if (got != n)
    return Error(ErrorCode::kTruncated,
                 "pbs file " + name_ + " ends inside " + what + " at offset " +
                     std::to_string(offset_ + got) +
                     " (the writer did not finish: was the recording interrupted?)");
  offset_ += n;
  return Status::Ok();
}

Result<uint64_t> PbsReader::ReadVarint(const char* what) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    uint8_t b;
    PATHPROF_RETURN_IF_ERROR(ReadExact(&b, 1, what));
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
  return Error(ErrorCode::kCorrupt, "pbs file " + name_ + ": overlong varint in " + what +
                                        " at offset " + std::to_string(offset_));
}

Result<PbsReader> PbsReader::Open(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f)
    return Error(ErrorCode::kNotFound,
                 "cannot open pbs file " + path + ": " + std::strerror(errno));
  PbsReader r;
  r.file_ = f;
  r.name_ = path;
  if (std::fseek(f, 0, SEEK_END) == 0) {
    long size = std::ftell(f);
    r.file_size_ = size > 0 ? static_cast<uint64_t>(size) : 0;
    std::rewind(f);
  }
  uint8_t header[8];
  PATHPROF_RETURN_IF_ERROR(r.ReadExact(header, sizeof header, "the file header"));
  if (std::memcmp(header, kMagic, 4) != 0)
    return Error(ErrorCode::kCorrupt, path + " is not a pbs file (bad magic at offset 0)");
  uint16_t version = header[4] | (header[5] << 8);
  if (version != kPbsVersion)
    return Error(ErrorCode::kUnsupported, "pbs file " + path + " has version " +
                                              std::to_string(version) + "; this build reads " +
                                              std::to_string(kPbsVersion));
  return r;
}

Result<PbsReader> PbsReader::FromBytes(std::vector<uint8_t> bytes, std::string name) {
  PbsReader r;
  r.from_memory_ = true;
  r.memory_ = std::move(bytes);
  r.name_ = std::move(name);
  uint8_t header[8];
  PATHPROF_RETURN_IF_ERROR(r.ReadExact(header, sizeof header, "the file header"));
  if (std::memcmp(header, kMagic, 4) != 0)
    return Error(ErrorCode::kCorrupt, r.name_ + " is not a pbs file (bad magic at offset 0)");
  uint16_t version = header[4] | (header[5] << 8);
  if (version != kPbsVersion)
    return Error(ErrorCode::kUnsupported,
                 "pbs file " + r.name_ + " has version " + std::to_string(version));
  return r;
}

uint64_t PbsReader::RemainingBytes() const {
  if (from_memory_) return memory_.size() - memory_pos_;
  return file_size_ > offset_ ? file_size_ - offset_ : 0;
}

Result<bool> PbsReader::Next(PbsRecord* out) {
  if (ended_) return false;
  uint64_t record_offset = offset_;
  uint8_t type;
  PATHPROF_RETURN_IF_ERROR(ReadExact(&type, 1, "a record type"));
  PATHPROF_ASSIGN_OR_RETURN(auto len, ReadVarint("a record length"));
  // Never allocate more than the input can still hold: a corrupt length must not cost gigabytes.
  if (len <= kMaxPayload && len > RemainingBytes())
    return Error(ErrorCode::kTruncated, "pbs file " + name_ + " ends inside the record at offset " +
                                            std::to_string(record_offset) + " (it claims " +
                                            std::to_string(len) + " bytes, " +
                                            std::to_string(RemainingBytes()) + " remain)");
  if (len > kMaxPayload)
    return Error(ErrorCode::kCorrupt, "pbs file " + name_ + ": record at offset " +
                                          std::to_string(record_offset) + " claims " +
                                          std::to_string(len) + " bytes");
  std::vector<uint8_t> len_bytes;
  PutVarint(len_bytes, len);
  payload_.resize(len);
  uint64_t payload_offset = offset_;
  PATHPROF_RETURN_IF_ERROR(ReadExact(payload_.data(), payload_.size(), "a record payload"));
  uint8_t c[4];
  PATHPROF_RETURN_IF_ERROR(ReadExact(c, 4, "a record checksum"));
  uint32_t stored = c[0] | (c[1] << 8) | (c[2] << 16) | (static_cast<uint32_t>(c[3]) << 24);
  if (stored != Crc(type, len_bytes, payload_.data(), payload_.size()))
    return Error(ErrorCode::kCorrupt, "pbs file " + name_ +
                                          ": checksum mismatch in record at offset " +
                                          std::to_string(record_offset) + "; the file is damaged");
  PayloadParser in(payload_, name_, payload_offset);
  switch (type) {
    case kTypeBatch: {
      BranchBatch b;
      PATHPROF_RETURN_IF_ERROR(ParseBatch(in, &b));
      *out = std::move(b);
      break;
    }
    case kTypeImage: {
      ImageRecord im;
      uint64_t pid;
      if (!in.Varint(&pid) || pid > UINT32_MAX || !in.Varint(&im.start) || !in.Varint(&im.end) ||
          !in.Varint(&im.file_offset) || !in.String(&im.path) || !in.String(&im.build_id) ||
          !in.done())
        return in.Fail("bad image record");
      im.pid = static_cast<uint32_t>(pid);
      *out = std::move(im);
      break;
    }
    case kTypeMeta: {
      MetaRecord m;
      if (!in.String(&m.key) || !in.String(&m.value) || !in.done())
        return in.Fail("bad meta record");
      *out = std::move(m);
      break;
    }
    case kTypeEnd: {
      uint64_t count;
      if (!in.Varint(&count) || !in.done()) return in.Fail("bad end record");
      if (count != records_)
        return Error(ErrorCode::kCorrupt, "pbs file " + name_ + ": end record at offset " +
                                              std::to_string(record_offset) + " counts " +
                                              std::to_string(count) + " records, file has " +
                                              std::to_string(records_));
      ended_ = true;
      return false;
    }
    default:
      return Error(ErrorCode::kCorrupt, "pbs file " + name_ + ": unknown record type " +
                                            std::to_string(type) + " at offset " +
                                            std::to_string(record_offset));
  }
  ++records_;
  return true;
}

uint64_t PbsContents::branch_count() const {
  uint64_t n = 0;
  for (const auto& b : batches) n += b.events.size();
  return n;
}

Result<PbsContents> ReadPbsFile(const std::string& path) {
  PATHPROF_ASSIGN_OR_RETURN(auto reader, PbsReader::Open(path));
  return ReadPbs(&reader);
}

Result<PbsContents> ReadPbs(PbsReader* reader) {
  PbsContents c;
  PbsRecord rec;
  while (true) {
    PATHPROF_ASSIGN_OR_RETURN(auto more, reader->Next(&rec));
    if (!more) break;
    if (auto* b = std::get_if<BranchBatch>(&rec))
      c.batches.push_back(std::move(*b));
    else if (auto* im = std::get_if<ImageRecord>(&rec))
      c.images.push_back(std::move(*im));
    else
      c.meta.push_back(std::move(std::get<MetaRecord>(rec)));
  }
  return c;
}

namespace {

Status WriteContents(PbsWriter& w, const PbsContents& c) {
  for (const auto& m : c.meta) PATHPROF_RETURN_IF_ERROR(w.Write(m));
  for (const auto& im : c.images) PATHPROF_RETURN_IF_ERROR(w.Write(im));
  for (const auto& b : c.batches) PATHPROF_RETURN_IF_ERROR(w.Write(b));
  return w.Close();
}

}  // namespace

Status WritePbsFile(const std::string& path, const PbsContents& c) {
  PATHPROF_ASSIGN_OR_RETURN(auto w, PbsWriter::Create(path));
  return WriteContents(w, c);
}

Result<std::string> PbsBytes(const PbsContents& c) {
  char* buffer = nullptr;
  size_t size = 0;
  std::FILE* f = open_memstream(&buffer, &size);
  if (!f) return Error(ErrorCode::kIo, std::string("open_memstream: ") + std::strerror(errno));
  Status written = [&]() -> Status {
    PATHPROF_ASSIGN_OR_RETURN(auto w, PbsWriter::OnStream(f, "<memory>"));
    return WriteContents(w, c);  // closes f, which makes buffer and size final
  }();
  std::string out = written.ok() && buffer != nullptr ? std::string(buffer, size) : std::string();
  std::free(buffer);
  if (!written.ok()) return written;
  return out;
}

}  // namespace pathprof
