// OTLP profiles Export client over gRPC. Message shapes and field numbers: our restatement of
// open-telemetry/opentelemetry-proto v1.11.0 (see fleet/proto/opentelemetry/).
#include "pathprof/fleet/otlp.h"

#include <grpcpp/grpcpp.h>

#include <cctype>
#include <charconv>
#include <random>
#include <string_view>

#include "grpc_channel.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.grpc.pb.h"
#include "otlp_dictionary.h"
#include "pathprof/profiles/pprof_import.h"

namespace pathprof::fleet {

namespace otlp = opentelemetry::proto::profiles::v1development;
namespace collector = opentelemetry::proto::collector::profiles::v1development;
namespace pp = profiles::pprof;

namespace {

// Every entry of an imported table took at least two bytes of the profile (a tag and a length),
// so with at most 512 MiB every dictionary index fits OTLP's int32.
constexpr size_t kMaxProfileBytes = size_t{512} << 20;

bool IsHex64(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// The window's labels as resource attributes (OpenTelemetry's names where it has one).
void AddResourceAttributes(const LabelSet& labels,
                           opentelemetry::proto::resource::v1::Resource* r) {
  auto add = [&](const std::string& key, const std::string& value) {
    if (value.empty()) return;
    auto* kv = r->add_attributes();
    kv->set_key(key);
    kv->mutable_value()->set_string_value(value);
  };
  for (const Label& label : labels) {
    if (label.name == kLabelHost) {
      add(kOtlpAttributeHost, label.value);
    } else if (label.name == kLabelUnit) {
      add(kOtlpAttributeUnit, label.value);
    } else if (label.name == kLabelCgroup) {
      add(kOtlpAttributeCgroup, label.value);
      add(kOtlpAttributeContainerId, ContainerIdFromCgroup(label.value));
    } else if (label.name == kLabelExecutable) {
      // The executable label is a path when the series knows one, else a command name.
      const size_t slash = label.value.rfind('/');
      if (slash != std::string::npos) add(kOtlpAttributeExecutablePath, label.value);
      add(kOtlpAttributeExecutableName,
          slash == std::string::npos ? label.value : label.value.substr(slash + 1));
    } else if (label.name == kLabelBuildId) {
      add(kOtlpAttributeBuildId, label.value);
    } else if (int64_t pid = 0;
               label.name == kLabelPid && !label.value.empty() &&
               std::from_chars(label.value.data(), label.value.data() + label.value.size(), pid)
                       .ptr == label.value.data() + label.value.size()) {
      // An int, as the semantic conventions type process.pid (and as samples carry it).
      auto* kv = r->add_attributes();
      kv->set_key(kOtlpAttributePid);
      kv->mutable_value()->set_int_value(pid);
    } else {
      add(label.name, label.value);
    }
  }
}

// A random profile id: 16 bytes, never all zero (the schema calls that invalid).
std::string NewProfileId() {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  std::string id(16, '\0');
  for (;;) {
    const uint64_t a = rng(), b = rng();
    for (int i = 0; i < 8; ++i) {
      id[i] = static_cast<char>(a >> (8 * i));
      id[8 + i] = static_cast<char>(b >> (8 * i));
    }
    if ((a | b) != 0) return id;
  }
}

}  // namespace

std::string ContainerIdFromCgroup(const std::string& cgroup) {
  std::string_view rest = cgroup;
  std::string found;
  // The innermost component that names a container wins (a container in a pod in a slice).
  while (!rest.empty()) {
    const size_t slash = rest.find('/');
    std::string_view part = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
    if (part.size() > 6 && part.substr(part.size() - 6) == ".scope") {
      part.remove_suffix(6);
      const size_t dash = part.rfind('-');
      if (dash != std::string_view::npos) part.remove_prefix(dash + 1);
    }
    if (IsHex64(part)) found = std::string(part);
  }
  return found;
}

Result<OtlpExportRequest> BuildOtlpRequest(const OtlpOptions& options,
                                           const ProfileWindow& window) {
  pp::ImportLimits limits;
  limits.max_uncompressed_bytes = kMaxProfileBytes;
  PATHPROF_ASSIGN_OR_RETURN(const pp::ImportedProfile profile,
                            pp::ImportProfile(window.pprof, limits));
  OtlpExportRequest request;
  OtlpDictionary dict(request.mutable_dictionary());
  otlp::ProfilesDictionary& tables = dict.tables();

  // pprof's tables map one to one onto OTLP's: pprof's row i is OTLP's i + 1.
  for (const pp::Mapping& m : profile.mappings) {
    otlp::Mapping* out = tables.add_mapping_table();
    out->set_memory_start(m.start);
    out->set_memory_limit(m.limit);
    out->set_file_offset(m.offset);
    out->set_filename_strindex(dict.String(m.file));
    if (!m.build_id.empty())
      out->add_attribute_indices(dict.StringAttribute(kOtlpAttributeBuildId, m.build_id));
  }
  for (const pp::ImportedFunction& f : profile.functions) {
    otlp::Function* out = tables.add_function_table();
    out->set_name_strindex(dict.String(f.name));
    out->set_system_name_strindex(dict.String(f.system_name));
    out->set_filename_strindex(dict.String(f.file));
    out->set_start_line(f.start_line);
  }
  for (const pp::ImportedLocation& l : profile.locations) {
    otlp::Location* out = tables.add_location_table();
    out->set_mapping_index(l.mapping ? static_cast<int32_t>(*l.mapping + 1) : 0);
    out->set_address(l.address);
    for (const pp::ImportedLine& line : l.lines) {
      otlp::Line* o = out->add_lines();
      o->set_function_index(static_cast<int32_t>(line.function + 1));
      o->set_line(line.line);
    }
  }

  auto* resource_profiles = request.add_resource_profiles();
  AddResourceAttributes(window.labels, resource_profiles->mutable_resource());
  auto* scope = resource_profiles->add_scope_profiles();
  scope->mutable_scope()->set_name("pathprof");
  scope->mutable_scope()->set_version(options.scope_version);

  // Each sample's stack and attributes, once for all the profiles it appears in.
  std::vector<int32_t> stack_of(profile.samples.size());
  std::vector<std::vector<int32_t>> attributes_of(profile.samples.size());
  for (size_t i = 0; i < profile.samples.size(); ++i) {
    const pp::ImportedSample& s = profile.samples[i];
    std::vector<int32_t> locations;
    locations.reserve(s.locations.size());
    for (size_t at : s.locations) locations.push_back(static_cast<int32_t>(at + 1));
    stack_of[i] = dict.Stack(locations);
    for (const pp::StringLabel& label : s.labels)
      attributes_of[i].push_back(dict.StringAttribute(label.key, label.value));
    for (const pp::NumLabel& label : s.num_labels)
      attributes_of[i].push_back(dict.IntAttribute(
          label.key == "pid" ? kOtlpAttributePid : label.key, label.value, label.unit));
  }

  const int64_t start = window.start_unix_nanos != 0 ? window.start_unix_nanos : profile.time_nanos;
  const int64_t duration = window.start_unix_nanos != 0
                               ? window.end_unix_nanos - window.start_unix_nanos
                               : profile.duration_nanos;
  for (size_t type = 0; type < profile.sample_types.size(); ++type) {
    otlp::Profile* out = scope->add_profiles();
    out->mutable_sample_type()->set_type_strindex(dict.String(profile.sample_types[type].type));
    out->mutable_sample_type()->set_unit_strindex(dict.String(profile.sample_types[type].unit));
    out->mutable_period_type()->set_type_strindex(dict.String(profile.period_type.type));
    out->mutable_period_type()->set_unit_strindex(dict.String(profile.period_type.unit));
    out->set_period(profile.period);
    out->set_time_unix_nano(static_cast<uint64_t>(start));
    out->set_duration_nano(static_cast<uint64_t>(std::max<int64_t>(0, duration)));
    out->set_profile_id(NewProfileId());
    if (type == 0 && options.include_pprof) {
      out->set_original_payload_format("pprof");
      out->set_original_payload(window.pprof);
    }
    // A pprof sample with several types is in each profile where its value is not zero (a
    // path-count sample carries no CPU samples, and the other way round).
    for (size_t i = 0; i < profile.samples.size(); ++i) {
      const int64_t value = profile.samples[i].values[type];
      if (value == 0) continue;
      otlp::Sample* sample = out->add_samples();
      sample->set_stack_index(stack_of[i]);
      sample->mutable_attribute_indices()->Add(attributes_of[i].begin(), attributes_of[i].end());
      sample->add_values(value);
    }
  }
  return request;
}

struct OtlpSink::Impl {
  OtlpOptions options;
  std::unique_ptr<collector::ProfilesService::Stub> stub;
};

OtlpSink::OtlpSink(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
OtlpSink::~OtlpSink() = default;

Result<std::unique_ptr<OtlpSink>> OtlpSink::Create(OtlpOptions options) {
  if (options.target.empty()) {
    return Error(ErrorCode::kInvalidArgument, "otlp target is empty: give host:port");
  }
  PATHPROF_ASSIGN_OR_RETURN(auto credentials,
                            MakeChannelCredentials("otlp", options.use_tls, options.tls));
  auto impl = std::make_unique<Impl>();
  impl->stub =
      collector::ProfilesService::NewStub(grpc::CreateChannel(options.target, credentials));
  impl->options = std::move(options);
  return std::unique_ptr<OtlpSink>(new OtlpSink(std::move(impl)));
}

SendOutcome OtlpSink::Send(const ProfileWindow& window) {
  auto request = BuildOtlpRequest(impl_->options, window);
  if (!request.ok()) {
    return {SendOutcome::Kind::kPermanent,
            "the window does not convert to OTLP: " + request.status().message()};
  }
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + impl_->options.timeout);
  AddCallMetadata(context, impl_->options.bearer_token, impl_->options.extra_metadata);
  collector::ExportProfilesServiceResponse response;
  const grpc::Status status = impl_->stub->Export(&context, *request, &response);
  const SendOutcome::Kind kind = ClassifyGrpcStatus(status.error_code());
  if (kind != SendOutcome::Kind::kOk) {
    return {kind, "Export failed: gRPC code " + std::to_string(status.error_code()) + ": " +
                      status.error_message()};
  }
  if (response.partial_success().rejected_profiles() > 0) {
    return {SendOutcome::Kind::kPermanent,
            "the receiver rejected " +
                std::to_string(response.partial_success().rejected_profiles()) + " of " +
                std::to_string(request->resource_profiles(0).scope_profiles(0).profiles_size()) +
                " profiles: " + response.partial_success().error_message()};
  }
  return SendOutcome::Ok();
}

std::string OtlpSink::Describe() const {
  return "otlp " + impl_->options.target;
}

}  // namespace pathprof::fleet
