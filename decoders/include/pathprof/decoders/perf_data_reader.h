// A streaming reader of perf.data, in file mode and in pipe mode.
//
//   auto reader = PerfDataReader::Open("perf.data");
//   if (!reader.ok()) ...;
//   if (reader->info().arch != "x86_64") refuse x86 decoding;
//   PerfRecord rec;
//   while (true) {
//     Result<bool> more = reader->Next(&rec);
//     if (!more.ok()) { report more.status(); break; }   // names the offset
//     if (!*more) break;                                   // end of data
//     if (auto* s = std::get_if<PerfSample>(&rec.body)) ...
//   }
//
// Any byte sequence gives records or a Status naming the offset: every size read from the input
// is checked against the bytes that remain before anything is allocated or skipped.
// Big-endian files are refused with kUnsupported.
#pragma once

#include <bitset>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "pathprof/core/input_file.h"
#include "pathprof/core/status.h"
#include "pathprof/decoders/perf_data_records.h"

namespace pathprof::decoders {

// What the header, the attrs and the feature sections say (in pipe mode, filled in from the
// synthesized records at the start of the stream, which Open reads ahead).
struct PerfDataInfo {
  bool pipe_mode = false;
  std::vector<PerfAttr> attrs;
  std::bitset<perf::kFeatureBits> features;  // file mode: adds_features; pipe: features seen
  std::string arch;                          // uname -m of the recording host, e.g. "x86_64"
  std::string hostname;
  std::string os_release;
  std::string perf_version;
  std::string cpu_desc;
  std::string cpuid;  // e.g. "GenuineIntel,6,78,3"
  std::vector<std::string> cmdline;
  uint32_t nr_cpus_available = 0;
  uint32_t nr_cpus_online = 0;
  std::vector<PerfBuildId> build_ids;
  // From the leading synthesized records of the data (read ahead by Open).
  std::optional<PerfAuxtraceInfo> auxtrace_info;
  std::optional<PerfTimeConv> time_conv;
  uint64_t data_offset = 0;
  uint64_t data_size = 0;
};

struct PerfDataStats {
  uint64_t records = 0;
  std::map<uint32_t, uint64_t> records_by_type;
  uint64_t unknown_records = 0;    // types this reader does not know (skipped by size)
  uint64_t undecoded_records = 0;  // known types kept as PerfOtherRecord (READ, COMPRESSED, ...)
  uint64_t samples = 0;
  uint64_t branch_entries = 0;
  uint64_t lost_events = 0;         // sum of LOST.lost
  uint64_t lost_samples = 0;        // sum of LOST_SAMPLES.lost
  uint64_t samples_unknown_id = 0;  // samples whose id matched no attr (parsed with attrs[0])
  uint64_t auxtrace_bytes = 0;
};

class PerfDataReader {
 public:
  // Maps a regular file (read-only) or reads a pipe/FIFO ("-": stdin) up to limits, and reads
  // its header, attrs and features. Devices and other non-files are refused.
  static Result<PerfDataReader> Open(const std::string& path, const InputLimits& limits = {});
  // Reads from memory the caller keeps alive for the reader's lifetime; `name` is for messages.
  static Result<PerfDataReader> FromBytes(std::span<const uint8_t> bytes, std::string name);

  PerfDataReader(PerfDataReader&&) noexcept;
  PerfDataReader& operator=(PerfDataReader&&) noexcept;
  ~PerfDataReader();

  // Decodes the next record into *out. True: a record; false: the data ended cleanly.
  // An error names the offset; after one, Next keeps returning it.
  // Passing the same PerfRecord again reuses its vectors.
  Result<bool> Next(PerfRecord* out);

  const PerfDataInfo& info() const;
  const std::string& arch() const { return info().arch; }
  const PerfDataStats& stats() const;
  // The attr a sample or sample id belongs to (attrs[0] when there is only one).
  const PerfEventAttr& attr(size_t index) const;

  // Fails with kUnsupported unless the recording host was x86-64 (or did not say).
  Status RequireX86_64() const;

 private:
  struct Impl;
  explicit PerfDataReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pathprof::decoders
