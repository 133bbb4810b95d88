// pprof import: reads a profile.proto message (gzip-compressed or not) back into plain tables,
// the reverse of ProfileBuilder, so another stage can re-encode a window in a format of its own
// (fleet's OTLP export) without knowing pprof's ids. Every reference is checked: a profile that
// names a location, function or mapping it does not hold is an error, never a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pathprof/core/status.h"
#include "pathprof/profiles/pprof_export.h"

namespace pathprof::profiles::pprof {

struct ImportLimits {
  // The profile after gunzip: a small gzip file can inflate to gigabytes.
  size_t max_uncompressed_bytes = size_t{512} << 20;
};

struct ImportedFunction {
  std::string name;
  std::string system_name;
  std::string file;
  int64_t start_line = 0;
};

struct ImportedLine {
  size_t function = 0;  // index into ImportedProfile::functions
  int64_t line = 0;
};

struct ImportedLocation {
  std::optional<size_t> mapping;  // index into ImportedProfile::mappings; none: not known
  uint64_t address = 0;
  std::vector<ImportedLine> lines;  // innermost (the inlined callee) first, as pprof orders them
};

struct ImportedSample {
  std::vector<size_t> locations;  // indices into ImportedProfile::locations, leaf first
  std::vector<int64_t> values;    // one per sample type
  std::vector<StringLabel> labels;
  std::vector<NumLabel> num_labels;
};

// Each table in the profile's own order (pprof id N is index N-1).
struct ImportedProfile {
  std::vector<ValueType> sample_types;
  ValueType period_type;
  int64_t period = 0;
  int64_t time_nanos = 0;
  int64_t duration_nanos = 0;
  std::vector<Mapping> mappings;
  std::vector<ImportedFunction> functions;
  std::vector<ImportedLocation> locations;
  std::vector<ImportedSample> samples;
  std::vector<std::string> comments;

  // The sum of each sample type's values over every sample (what `go tool pprof -top` totals).
  std::vector<int64_t> Totals() const;
};

// kInvalidArgument naming what is wrong (not a profile, a gzip stream cut short, a sample whose
// value count is not the sample type count, an id or string index that resolves to nothing);
// kResourceExhausted past limits.max_uncompressed_bytes.
Result<ImportedProfile> ImportProfile(std::string_view bytes, const ImportLimits& limits = {});

}  // namespace pathprof::profiles::pprof
