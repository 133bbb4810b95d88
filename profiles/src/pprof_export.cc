#include "pathprof/profiles/pprof_export.h"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "gzip.h"
#include "pprof/profile.pb.h"
#include "pprof_strings.h"

namespace pathprof::profiles::pprof {
namespace pb = ::perftools::profiles;

namespace {

constexpr size_t kMinStringBytes = 16;

// Keys are in string-table indices and ids, so equal keys mean equal pprof records.
using FunctionKey = std::tuple<int64_t, int64_t, int64_t, int64_t>;  // name, system, file, line
using MappingKey = std::tuple<uint64_t, uint64_t, uint64_t, int64_t, int64_t>;
using LineKey = std::vector<std::pair<uint64_t, int64_t>>;    // (function id, line) innermost first
using LocationKey = std::tuple<uint64_t, uint64_t, LineKey>;  // mapping id, address, lines

// Lets the string table be searched with a string_view, without building a std::string.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

uint64_t Mix(uint64_t h, uint64_t v) {
  // boost::hash_combine's mixing, widened to 64 bits.
  return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 12) + (h >> 4));
}

struct FunctionKeyHash {
  size_t operator()(const FunctionKey& k) const {
    const auto& [a, b, c, d] = k;
    return Mix(Mix(Mix(Mix(0, a), b), c), d);
  }
};

struct LocationKeyHash {
  size_t operator()(const LocationKey& k) const {
    uint64_t h = Mix(Mix(0, std::get<0>(k)), std::get<1>(k));
    for (const auto& [fn, line] : std::get<2>(k)) h = Mix(Mix(h, fn), line);
    return h;
  }
};

bool FrameIsEmpty(const Frame& f) {
  return f.function.empty() && f.system_name.empty() && f.file.empty();
}

}  // namespace

struct ProfileBuilder::Impl {
  ProfileOptions options;
  pb::Profile profile;
  std::unordered_map<std::string, int64_t, StringHash, std::equal_to<>> strings;
  // Most locations of a profile share a few mappings; remembers the last one looked up.
  Mapping last_mapping;
  uint64_t last_mapping_id = 0;
  std::unordered_map<FunctionKey, uint64_t, FunctionKeyHash> functions;
  std::map<MappingKey, uint64_t> mappings;
  std::unordered_map<LocationKey, uint64_t, LocationKeyHash> locations;
  std::vector<pb::Label> common_labels;
  ExportStats stats;

  int64_t Intern(std::string_view s) {
    if (IsClean(s, options.max_string_bytes)) {
      if (auto it = strings.find(s); it != strings.end()) return it->second;
      return strings.try_emplace(std::string(s), AppendString(s)).first->second;
    }
    CleanedString clean = CleanString(s, options.max_string_bytes);
    if (clean.sanitized) ++stats.strings_sanitized;
    if (clean.truncated) ++stats.strings_truncated;
    if (auto it = strings.find(clean.text); it != strings.end()) return it->second;
    const int64_t index = AppendString(clean.text);
    return strings.try_emplace(std::move(clean.text), index).first->second;
  }

  int64_t AppendString(std::string_view s) {
    profile.add_string_table(std::string(s));
    return profile.string_table_size() - 1;
  }

  uint64_t FunctionId(const Frame& f) {
    const int64_t name = Intern(f.function);
    const int64_t system = f.system_name.empty() ? name : Intern(f.system_name);
    const int64_t file = Intern(f.file);
    auto [it, inserted] =
        functions.try_emplace(FunctionKey{name, system, file, f.start_line}, functions.size() + 1);
    if (inserted) {
      pb::Function* fn = profile.add_function();
      fn->set_id(it->second);
      fn->set_name(name);
      fn->set_system_name(system);
      fn->set_filename(file);
      fn->set_start_line(f.start_line);
    }
    return it->second;
  }

  // 0 for an unknown mapping.
  uint64_t MappingId(const Mapping& m) {
    if (m.empty()) return 0;
    if (last_mapping_id != 0 && m.start == last_mapping.start && m.limit == last_mapping.limit &&
        m.offset == last_mapping.offset && m.file == last_mapping.file &&
        m.build_id == last_mapping.build_id) {
      return last_mapping_id;
    }
    last_mapping = m;
    last_mapping_id = MappingIdUncached(m);
    return last_mapping_id;
  }

  uint64_t MappingIdUncached(const Mapping& m) {
    const int64_t file = Intern(m.file);
    const int64_t build_id = Intern(m.build_id);
    auto [it, inserted] = mappings.try_emplace(
        MappingKey{m.start, m.limit, m.offset, file, build_id}, mappings.size() + 1);
    if (inserted) {
      pb::Mapping* pm = profile.add_mapping();
      pm->set_id(it->second);
      pm->set_memory_start(m.start);
      pm->set_memory_limit(m.limit);
      pm->set_file_offset(m.offset);
      pm->set_filename(file);
      pm->set_build_id(build_id);
    }
    return it->second;
  }

  uint64_t LocationId(const Location& loc) {
    const uint64_t mapping_id = MappingId(loc.mapping);
    LineKey lines;
    bool any_function = false, any_file = false, any_line = false;
    for (const Frame& f : loc.frames) {
      if (FrameIsEmpty(f)) continue;
      lines.emplace_back(FunctionId(f), f.line);
      any_function |= !f.function.empty() && !f.name_from_address;
      any_file |= !f.file.empty();
      any_line |= f.line != 0;
    }
    if (mapping_id != 0) {
      // Symbolized mappings say so, or pprof would try to symbolize them again from the binary.
      pb::Mapping* pm = profile.mutable_mapping(static_cast<int>(mapping_id - 1));
      if (any_function) pm->set_has_functions(true);
      if (any_file) pm->set_has_filenames(true);
      if (any_line) pm->set_has_line_numbers(true);
      if (lines.size() > 1) pm->set_has_inline_frames(true);
    }
    const size_t next_id = locations.size() + 1;
    auto [it, inserted] =
        locations.try_emplace(LocationKey{mapping_id, loc.address, lines}, next_id);
    if (inserted) {
      pb::Location* pl = profile.add_location();
      pl->set_id(it->second);
      pl->set_mapping_id(mapping_id);
      pl->set_address(loc.address);
      for (const auto& [function_id, line] : std::get<2>(it->first)) {
        pb::Line* l = pl->add_line();
        l->set_function_id(function_id);
        l->set_line(line);
      }
    }
    return it->second;
  }

  pb::Label StringLabelOf(const StringLabel& l) {
    pb::Label out;
    out.set_key(Intern(l.key));
    out.set_str(Intern(l.value));
    return out;
  }

  pb::Label NumLabelOf(const NumLabel& l) {
    pb::Label out;
    out.set_key(Intern(l.key));
    out.set_num(l.value);
    if (!l.unit.empty()) out.set_num_unit(Intern(l.unit));
    return out;
  }
};

ProfileBuilder::ProfileBuilder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ProfileBuilder::ProfileBuilder(ProfileBuilder&&) noexcept = default;
ProfileBuilder& ProfileBuilder::operator=(ProfileBuilder&&) noexcept = default;
ProfileBuilder::~ProfileBuilder() = default;

Result<ProfileBuilder> ProfileBuilder::Create(ProfileOptions options) {
  if (options.sample_types.empty()) {
    return Error(ErrorCode::kInvalidArgument,
                 "pprof export: no sample types; give at least one, e.g. {\"samples\", \"count\"}");
  }
  for (size_t i = 0; i < options.sample_types.size(); ++i) {
    const ValueType& t = options.sample_types[i];
    if (t.type.empty() || t.unit.empty()) {
      return Error(ErrorCode::kInvalidArgument,
                   "pprof export: sample type " + std::to_string(i) + " has an empty type or unit");
    }
  }
  if (!options.default_sample_type.empty()) {
    bool found = false;
    for (const ValueType& t : options.sample_types) found |= t.type == options.default_sample_type;
    if (!found) {
      return Error(ErrorCode::kInvalidArgument, "pprof export: default sample type '" +
                                                    options.default_sample_type +
                                                    "' is not one of the sample types");
    }
  }
  for (const StringLabel& l : options.common_labels) {
    if (l.key.empty())
      return Error(ErrorCode::kInvalidArgument, "pprof export: common label with an empty key");
  }
  for (const NumLabel& l : options.common_num_labels) {
    if (l.key.empty())
      return Error(ErrorCode::kInvalidArgument,
                   "pprof export: common numeric label with an empty key");
  }
  if (options.max_string_bytes < kMinStringBytes) {
    return Error(ErrorCode::kInvalidArgument,
                 "pprof export: max_string_bytes " + std::to_string(options.max_string_bytes) +
                     " is below the minimum of " + std::to_string(kMinStringBytes));
  }

  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  Impl& b = *impl;
  const ProfileOptions& o = b.options;
  b.Intern("");  // pprof requires string_table[0] == ""
  for (const ValueType& t : o.sample_types) {
    pb::ValueType* vt = b.profile.add_sample_type();
    vt->set_type(b.Intern(t.type));
    vt->set_unit(b.Intern(t.unit));
  }
  if (!o.period_type.type.empty() || !o.period_type.unit.empty()) {
    b.profile.mutable_period_type()->set_type(b.Intern(o.period_type.type));
    b.profile.mutable_period_type()->set_unit(b.Intern(o.period_type.unit));
  }
  b.profile.set_period(o.period);
  b.profile.set_time_nanos(o.time_nanos);
  b.profile.set_duration_nanos(o.duration_nanos);
  if (!o.default_sample_type.empty()) {
    b.profile.set_default_sample_type(b.Intern(o.default_sample_type));
  }
  for (const std::string& c : o.comments) b.profile.add_comment(b.Intern(c));
  for (const StringLabel& l : o.common_labels) b.common_labels.push_back(b.StringLabelOf(l));
  for (const NumLabel& l : o.common_num_labels) b.common_labels.push_back(b.NumLabelOf(l));
  return ProfileBuilder(std::move(impl));
}

Status ProfileBuilder::AddSample(const Sample& sample) {
  Impl& b = *impl_;
  // Check everything before interning anything, so a rejected sample leaves no orphan records.
  if (sample.values.size() != b.options.sample_types.size()) {
    ++b.stats.samples_rejected;
    return Error(ErrorCode::kInvalidArgument,
                 "pprof export: sample has " + std::to_string(sample.values.size()) +
                     " values but the profile has " +
                     std::to_string(b.options.sample_types.size()) + " sample types");
  }
  for (const StringLabel& l : sample.labels) {
    if (l.key.empty()) {
      ++b.stats.samples_rejected;
      return Error(ErrorCode::kInvalidArgument, "pprof export: sample label with an empty key");
    }
  }
  for (const NumLabel& l : sample.num_labels) {
    if (l.key.empty()) {
      ++b.stats.samples_rejected;
      return Error(ErrorCode::kInvalidArgument,
                   "pprof export: sample numeric label with an empty key");
    }
  }
  bool all_zero = true;
  for (int64_t v : sample.values) all_zero &= v == 0;
  if (all_zero) {
    ++b.stats.zero_samples_skipped;
    return Status::Ok();
  }

  pb::Sample* ps = b.profile.add_sample();
  if (sample.stack.empty()) {
    ++b.stats.empty_stacks;
    Location empty;
    empty.frames.emplace_back();
    empty.frames.back().function = kEmptyStackFunction;
    ps->add_location_id(b.LocationId(empty));
  }
  for (const Location& loc : sample.stack) ps->add_location_id(b.LocationId(loc));
  for (int64_t v : sample.values) ps->add_value(v);
  for (const StringLabel& l : sample.labels) *ps->add_label() = b.StringLabelOf(l);
  for (const NumLabel& l : sample.num_labels) *ps->add_label() = b.NumLabelOf(l);
  for (const pb::Label& l : b.common_labels) *ps->add_label() = l;
  ++b.stats.samples_added;
  return Status::Ok();
}

const ExportStats& ProfileBuilder::stats() const {
  return impl_->stats;
}
size_t ProfileBuilder::sample_count() const {
  return static_cast<size_t>(impl_->profile.sample_size());
}

Result<std::string> ProfileBuilder::SerializeUncompressed() const {
  const size_t size = impl_->profile.ByteSizeLong();
  if (size > static_cast<size_t>(INT_MAX)) {
    return Error(ErrorCode::kResourceExhausted,
                 "pprof export: profile would be " + std::to_string(size) +
                     " bytes, over protobuf's 2 GiB message limit; export fewer samples "
                     "(lower top-k or depth) or split by time");
  }
  std::string out;
  if (!impl_->profile.SerializeToString(&out)) {
    return Error(ErrorCode::kInternal, "pprof export: protobuf serialization failed");
  }
  return out;
}

Result<std::string> ProfileBuilder::SerializeGzip() const {
  PATHPROF_ASSIGN_OR_RETURN(std::string raw, SerializeUncompressed());
  return GzipCompress(raw);
}

Status WriteProfileFile(const std::string& path, const std::string& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    return Error(ErrorCode::kIo,
                 "pprof export: cannot open " + path + " for writing: " + std::strerror(errno));
  }
  const size_t written = std::fwrite(bytes.data(), 1, bytes.size(), f);
  const int write_errno = errno;
  const bool closed = std::fclose(f) == 0;
  if (written != bytes.size() || !closed) {
    return Error(ErrorCode::kIo,
                 "pprof export: writing " + std::to_string(bytes.size()) + " bytes to " + path +
                     " failed: " + std::strerror(written != bytes.size() ? write_errno : errno));
  }
  return Status::Ok();
}

}  // namespace pathprof::profiles::pprof
