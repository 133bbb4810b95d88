// pprof export: builds a profile in pprof's profile.proto format (gzip-compressed, as
// `go tool pprof`, Pyroscope and Parca read it) from plain structs. The builder owns the
// deduplication pprof requires (strings, functions, locations, mappings each stored once and
// referenced by 1-based id); callers only describe samples.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pathprof/core/status.h"

namespace pathprof::profiles::pprof {

// A loaded object (executable or library) a location's address lies in. All-default means "not
// known"; such locations get no mapping.
struct Mapping {
  uint64_t start = 0;
  uint64_t limit = 0;
  uint64_t offset = 0;
  std::string file;
  std::string build_id;

  bool empty() const {
    return start == 0 && limit == 0 && offset == 0 && file.empty() && build_id.empty();
  }
};

// One function at a location. A location with inlined calls has several frames.
struct Frame {
  std::string function;
  std::string system_name;  // mangled name; empty: same as `function`
  std::string file;
  int64_t line = 0;
  int64_t start_line = 0;
  // A name made from the address (`image+0xSTART`, an unstripped binary has a real one): it
  // does not mark the mapping as having functions, so a symbolizer holding the unstripped file
  // or its debug info (pprof -symbolize, Parca, Pyroscope) still resolves it by address.
  bool name_from_address = false;
};

struct Location {
  uint64_t address = 0;
  Mapping mapping;
  // Innermost (the inlined callee) first, the function the code was inlined into last, as pprof
  // orders a location's lines. Empty: an address pprof can only show as hex.
  std::vector<Frame> frames;
};

struct StringLabel {
  std::string key;
  std::string value;
};

struct NumLabel {
  std::string key;
  int64_t value = 0;
  std::string unit;  // e.g. "bytes"; empty: none
};

struct Sample {
  std::vector<Location> stack;  // leaf first
  std::vector<int64_t> values;  // one per sample type, in the profile's order
  std::vector<StringLabel> labels;
  std::vector<NumLabel> num_labels;
};

struct ValueType {
  std::string type;  // e.g. "cpu", "samples", "path_count"
  std::string unit;  // e.g. "nanoseconds", "count"
};

struct ProfileOptions {
  std::vector<ValueType> sample_types;  // at least one
  ValueType period_type;                // e.g. {"cpu", "nanoseconds"}
  int64_t period = 0;                   // e.g. 10'000'000 for 100 Hz
  int64_t time_nanos = 0;               // collection start, ns since the Unix epoch
  int64_t duration_nanos = 0;
  std::string default_sample_type;  // empty: pprof shows the last sample type
  std::vector<std::string> comments;
  // Attached to every sample: pprof has no profile-wide labels, and this is how -tagfocus and a
  // fleet store's series labels (host, unit, cgroup, executable, build-id) see them.
  std::vector<StringLabel> common_labels;
  std::vector<NumLabel> common_num_labels;
  // Longer strings are cut (at a UTF-8 boundary) so a pathological symbol cannot blow up the
  // profile; bytes that are not UTF-8 (proto3 strings must be) become '?'.
  size_t max_string_bytes = 4096;
};

// What the builder changed or left out; nothing is dropped without being counted here.
struct ExportStats {
  uint64_t samples_added = 0;
  uint64_t samples_rejected = 0;      // AddSample returned an error
  uint64_t zero_samples_skipped = 0;  // every value 0: carries no weight
  uint64_t empty_stacks = 0;          // kept under the kEmptyStackFunction frame
  uint64_t strings_truncated = 0;
  uint64_t strings_sanitized = 0;  // had bytes that are not UTF-8
};

// The frame an empty stack's weight is charged to, so totals stay right.
inline constexpr const char* kEmptyStackFunction = "[empty stack]";

class ProfileBuilder {
 public:
  // Fails if there is no sample type, or a type or unit is empty.
  static Result<ProfileBuilder> Create(ProfileOptions options);
  ProfileBuilder(ProfileBuilder&&) noexcept;
  ProfileBuilder& operator=(ProfileBuilder&&) noexcept;
  ~ProfileBuilder();

  // Errors (the builder stays usable, the sample is not added): value count differs from the
  // sample type count, a label with an empty key.
  Status AddSample(const Sample& sample);

  const ExportStats& stats() const;
  size_t sample_count() const;

  // The serialized profile.proto message, uncompressed / gzip-compressed (what pprof reads).
  // kResourceExhausted when the message would exceed protobuf's 2 GiB limit.
  Result<std::string> SerializeUncompressed() const;
  Result<std::string> SerializeGzip() const;

 private:
  struct Impl;
  explicit ProfileBuilder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Writes bytes to `path` (e.g. the output of SerializeGzip), replacing it.
Status WriteProfileFile(const std::string& path, const std::string& bytes);

}  // namespace pathprof::profiles::pprof
