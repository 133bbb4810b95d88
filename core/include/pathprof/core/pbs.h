// The `.pbs` branch-stream file: how recorded and synthesized streams are stored for tests,
// replays and benchmarks.
//
// Layout (all integers little-endian or LEB128 varints):
//   header   "PBS\x1a" u16 version(=1) u16 reserved
//   record*  u8 type, varint payload_length, payload, u32 crc32(type, length, payload)
//   end      a record of type kEnd whose payload is varint(number of records before it)
// A batch payload: varint pid, tid, time_ns, u8 flags(gap_before, window), varint n, then n
// events, each: zigzag-varint(from - previous to), zigzag-varint(to - from), u8 bits
// (kind:3 taken:1 mispredicted:1 has_cycles:1 has_instructions:1), [varint cycles],
// [varint instructions]. Branches are near each other, so deltas keep most events at 3-5 bytes.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "pathprof/core/branch.h"
#include "pathprof/core/status.h"

namespace pathprof {

// A file mapped into a traced process, so a replay can symbolize and decode addresses.
struct ImageRecord {
  uint32_t pid = 0;
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t file_offset = 0;
  std::string path;
  std::string build_id;  // raw bytes, may be empty

  bool operator==(const ImageRecord&) const = default;
};

// Free-form provenance: workload name, seed, command line, tool version.
struct MetaRecord {
  std::string key;
  std::string value;

  bool operator==(const MetaRecord&) const = default;
};

using PbsRecord = std::variant<BranchBatch, ImageRecord, MetaRecord>;

inline constexpr uint16_t kPbsVersion = 1;

class PbsWriter {
 public:
  static Result<PbsWriter> Create(const std::string& path);
  // Writes to `f` (a file or an open_memstream), which it owns from now on: closed by Close(),
  // by the destructor, or here when the header cannot be written. `name` is for messages.
  static Result<PbsWriter> OnStream(std::FILE* f, std::string name);
  PbsWriter(PbsWriter&&) noexcept;
  PbsWriter& operator=(PbsWriter&&) noexcept;
  ~PbsWriter();

  Status Write(const BranchBatch& batch);
  Status Write(const ImageRecord& image);
  Status Write(const MetaRecord& meta);
  // Writes the end record and closes the file. A file without it reads as truncated.
  Status Close();

  uint64_t records_written() const { return records_; }

 private:
  PbsWriter(std::FILE* f, std::string path) : file_(f), path_(std::move(path)) {}
  Status WriteRecord(uint8_t type, const std::vector<uint8_t>& payload);

  std::FILE* file_ = nullptr;
  std::string path_;
  uint64_t records_ = 0;
  std::vector<uint8_t> scratch_;
};

// Reads records in order from a file or from memory. Any byte sequence yields records or a
// Status naming the offset where it stopped making sense; it never crashes.
class PbsReader {
 public:
  static Result<PbsReader> Open(const std::string& path);
  static Result<PbsReader> FromBytes(std::vector<uint8_t> bytes, std::string name = "<memory>");
  PbsReader(PbsReader&&) noexcept;
  PbsReader& operator=(PbsReader&&) noexcept;
  ~PbsReader();

  // True and fills *out with the next record; false at a clean end (after the end record).
  Result<bool> Next(PbsRecord* out);

  const std::string& name() const { return name_; }
  uint64_t offset() const { return offset_; }

 private:
  PbsReader() = default;
  Status ReadExact(void* dst, size_t n, const char* what);
  Result<uint64_t> ReadVarint(const char* what);
  uint64_t RemainingBytes() const;

  std::FILE* file_ = nullptr;
  std::vector<uint8_t> memory_;
  size_t memory_pos_ = 0;
  bool from_memory_ = false;
  std::string name_;
  uint64_t offset_ = 0;
  uint64_t file_size_ = 0;
  uint64_t records_ = 0;
  bool ended_ = false;
  std::vector<uint8_t> payload_;
};

// Convenience for tests and tools: every batch (and optionally image/meta records) in a file.
struct PbsContents {
  std::vector<BranchBatch> batches;
  std::vector<ImageRecord> images;
  std::vector<MetaRecord> meta;
  uint64_t branch_count() const;
};
Result<PbsContents> ReadPbsFile(const std::string& path);
Result<PbsContents> ReadPbs(PbsReader* reader);  // every record left in reader
Status WritePbsFile(const std::string& path, const PbsContents& contents);
// The bytes WritePbsFile would write (continuous mode archives a window's branches this way).
Result<std::string> PbsBytes(const PbsContents& contents);

}  // namespace pathprof
