#include "pathprof/profiles/pprof_import.h"

#include <unordered_map>

#include "gzip.h"
#include "pprof/profile.pb.h"

namespace pathprof::profiles::pprof {
namespace pb = ::perftools::profiles;

namespace {

Status Bad(const std::string& what) {
  return Status(ErrorCode::kInvalidArgument,
                "pprof profile: " + what + " (is it a pprof profile.proto file?)");
}

// pprof ids are only required to be unique and non-zero (Go writes 1..N, other writers need
// not), so each table is indexed by id rather than by position.
template <typename Rows>
Result<std::unordered_map<uint64_t, size_t>> IndexById(const Rows& rows, const char* table) {
  std::unordered_map<uint64_t, size_t> index;
  index.reserve(static_cast<size_t>(rows.size()));
  for (int i = 0; i < rows.size(); ++i) {
    const uint64_t id = rows.Get(i).id();
    if (id == 0 || !index.emplace(id, static_cast<size_t>(i)).second)
      return Bad(std::string(table) + " id " + std::to_string(id) + " is zero or repeated");
  }
  return index;
}

class StringTable {
 public:
  explicit StringTable(const pb::Profile& p) : p_(p) {}
  Result<std::string> Get(int64_t index, const char* what) const {
    if (index < 0 || index >= p_.string_table_size())
      return Bad(std::string(what) + " names string " + std::to_string(index) + " of " +
                 std::to_string(p_.string_table_size()));
    return p_.string_table(static_cast<int>(index));
  }

 private:
  const pb::Profile& p_;
};

Result<ValueType> ReadValueType(const StringTable& s, const pb::ValueType& v) {
  ValueType out;
  PATHPROF_ASSIGN_OR_RETURN(out.type, s.Get(v.type(), "a value type"));
  PATHPROF_ASSIGN_OR_RETURN(out.unit, s.Get(v.unit(), "a value type's unit"));
  return out;
}

Result<size_t> Resolve(const std::unordered_map<uint64_t, size_t>& index, uint64_t id,
                       const char* what) {
  auto it = index.find(id);
  if (it == index.end()) return Bad(std::string(what) + " " + std::to_string(id) + " not found");
  return it->second;
}

}  // namespace

std::vector<int64_t> ImportedProfile::Totals() const {
  std::vector<int64_t> totals(sample_types.size(), 0);
  for (const ImportedSample& s : samples)
    for (size_t i = 0; i < totals.size() && i < s.values.size(); ++i) totals[i] += s.values[i];
  return totals;
}

Result<ImportedProfile> ImportProfile(std::string_view bytes, const ImportLimits& limits) {
  std::string inflated;
  // A gzip stream starts 1f 8b (RFC 1952); pprof also reads uncompressed profiles.
  const bool gzipped = bytes.size() >= 2 && static_cast<uint8_t>(bytes[0]) == 0x1f &&
                       static_cast<uint8_t>(bytes[1]) == 0x8b;
  if (gzipped) {
    PATHPROF_ASSIGN_OR_RETURN(inflated, GzipDecompress(bytes, limits.max_uncompressed_bytes));
    bytes = inflated;
  } else if (bytes.size() > limits.max_uncompressed_bytes) {
    return Status(ErrorCode::kResourceExhausted,
                  "pprof profile: " + std::to_string(bytes.size()) + " bytes, more than the " +
                      std::to_string(limits.max_uncompressed_bytes) + " allowed");
  }
  pb::Profile p;
  if (!p.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return Bad("the protobuf message does not parse");
  if (p.string_table_size() == 0 || !p.string_table(0).empty())
    return Bad("string 0 must be present and empty");
  const StringTable strings(p);

  ImportedProfile out;
  for (const pb::ValueType& v : p.sample_type()) {
    PATHPROF_ASSIGN_OR_RETURN(ValueType t, ReadValueType(strings, v));
    out.sample_types.push_back(std::move(t));
  }
  if (out.sample_types.empty()) return Bad("no sample type");
  PATHPROF_ASSIGN_OR_RETURN(out.period_type, ReadValueType(strings, p.period_type()));
  out.period = p.period();
  out.time_nanos = p.time_nanos();
  out.duration_nanos = p.duration_nanos();
  for (int64_t c : p.comment()) {
    PATHPROF_ASSIGN_OR_RETURN(std::string comment, strings.Get(c, "a comment"));
    out.comments.push_back(std::move(comment));
  }

  PATHPROF_ASSIGN_OR_RETURN(auto mapping_index, IndexById(p.mapping(), "mapping"));
  for (const pb::Mapping& m : p.mapping()) {
    Mapping row;
    row.start = m.memory_start();
    row.limit = m.memory_limit();
    row.offset = m.file_offset();
    PATHPROF_ASSIGN_OR_RETURN(row.file, strings.Get(m.filename(), "a mapping's file"));
    PATHPROF_ASSIGN_OR_RETURN(row.build_id, strings.Get(m.build_id(), "a mapping's build id"));
    out.mappings.push_back(std::move(row));
  }
  PATHPROF_ASSIGN_OR_RETURN(auto function_index, IndexById(p.function(), "function"));
  for (const pb::Function& f : p.function()) {
    ImportedFunction row;
    PATHPROF_ASSIGN_OR_RETURN(row.name, strings.Get(f.name(), "a function's name"));
    PATHPROF_ASSIGN_OR_RETURN(row.system_name,
                              strings.Get(f.system_name(), "a function's system name"));
    PATHPROF_ASSIGN_OR_RETURN(row.file, strings.Get(f.filename(), "a function's file"));
    row.start_line = f.start_line();
    out.functions.push_back(std::move(row));
  }
  PATHPROF_ASSIGN_OR_RETURN(auto location_index, IndexById(p.location(), "location"));
  for (const pb::Location& l : p.location()) {
    ImportedLocation row;
    row.address = l.address();
    if (l.mapping_id() != 0) {
      PATHPROF_ASSIGN_OR_RETURN(row.mapping,
                                Resolve(mapping_index, l.mapping_id(), "a location's mapping"));
    }
    for (const pb::Line& line : l.line()) {
      PATHPROF_ASSIGN_OR_RETURN(size_t fn,
                                Resolve(function_index, line.function_id(), "a line's function"));
      row.lines.push_back({fn, line.line()});
    }
    out.locations.push_back(std::move(row));
  }
  out.samples.reserve(static_cast<size_t>(p.sample_size()));
  for (const pb::Sample& s : p.sample()) {
    if (static_cast<size_t>(s.value_size()) != out.sample_types.size())
      return Bad("a sample has " + std::to_string(s.value_size()) + " values for " +
                 std::to_string(out.sample_types.size()) + " sample types");
    ImportedSample row;
    row.values.assign(s.value().begin(), s.value().end());
    row.locations.reserve(static_cast<size_t>(s.location_id_size()));
    for (uint64_t id : s.location_id()) {
      PATHPROF_ASSIGN_OR_RETURN(size_t at, Resolve(location_index, id, "a sample's location"));
      row.locations.push_back(at);
    }
    for (const pb::Label& label : s.label()) {
      PATHPROF_ASSIGN_OR_RETURN(std::string key, strings.Get(label.key(), "a label's key"));
      // As pprof's own reader decides: a label with a string is a string label, any other a
      // number (so an empty string label reads back as the number 0).
      if (label.str() != 0) {
        PATHPROF_ASSIGN_OR_RETURN(std::string value, strings.Get(label.str(), "a label's value"));
        row.labels.push_back({std::move(key), std::move(value)});
      } else {
        PATHPROF_ASSIGN_OR_RETURN(std::string unit, strings.Get(label.num_unit(), "a unit"));
        row.num_labels.push_back({std::move(key), label.num(), std::move(unit)});
      }
    }
    out.samples.push_back(std::move(row));
  }
  return out;
}

}  // namespace pathprof::profiles::pprof
