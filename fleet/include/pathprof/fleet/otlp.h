// Pushes windows to an OpenTelemetry collector (or any OTLP profiles receiver) over gRPC:
// opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export, OTLP release
// v1.11.0 (schema: fleet/proto/opentelemetry/..., ours, wire-compatible with that release).
//
// A window's pprof is re-encoded, not wrapped: one OTLP Profile per pprof sample type, holding
// the samples with a value of that type; functions, locations, mappings, stacks, strings and
// attributes each once in the request's dictionary. The window's labels become the resource's
// attributes under OpenTelemetry's semantic-convention names (kOtlpAttribute* below).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb.h"
#include "pathprof/core/status.h"
#include "pathprof/fleet/push_queue.h"
#include "pathprof/fleet/pyroscope.h"  // TlsOptions
#include "pathprof/fleet/window.h"

namespace pathprof::fleet {

// The OTLP release whose profiles schema pathprof speaks (docs/fleet.md).
inline constexpr const char* kOtlpProtoVersion = "1.11.0";

// Resource attributes, from the window's labels. host, container id, executable and build id
// are OpenTelemetry semantic conventions; systemd units and cgroups have none, so they are
// pathprof's own. Other labels keep their names.
inline constexpr const char* kOtlpAttributeHost = "host.name";
inline constexpr const char* kOtlpAttributeContainerId = "container.id";
inline constexpr const char* kOtlpAttributeExecutablePath = "process.executable.path";
inline constexpr const char* kOtlpAttributeExecutableName = "process.executable.name";
inline constexpr const char* kOtlpAttributeBuildId = "process.executable.build_id.gnu";
inline constexpr const char* kOtlpAttributeUnit = "pathprof.systemd.unit";
inline constexpr const char* kOtlpAttributeCgroup = "pathprof.cgroup";
// A sample's process, from the pprof "pid" label; the resource's, from a window's "pid" label
// (kLabelPid: a one-process session's export).
inline constexpr const char* kOtlpAttributePid = "process.pid";

struct OtlpOptions {
  std::string target = "localhost:4317";  // host:port (the collector's OTLP gRPC port)
  bool use_tls = false;
  TlsOptions tls;            // with use_tls
  std::string bearer_token;  // sent as "authorization: Bearer <token>" metadata
  std::vector<std::pair<std::string, std::string>> extra_metadata;  // lowercase keys
  // Also send the window's pprof bytes as the first profile's original payload (format "pprof"),
  // for receivers that keep the source format; doubles what is sent.
  bool include_pprof = false;
  std::string scope_version;  // the instrumentation scope's version (pathprof's)
  std::chrono::milliseconds timeout{30'000};
};

using OtlpExportRequest =
    opentelemetry::proto::collector::profiles::v1development::ExportProfilesServiceRequest;

// The container id a cgroup path names, as docker, containerd, CRI-O and podman spell it (a path
// component of 64 hex digits, alone or as "docker-<id>.scope", "cri-containerd-<id>.scope",
// "crio-<id>.scope", "libpod-<id>.scope"); empty if none.
std::string ContainerIdFromCgroup(const std::string& cgroup);

// The request for one window. Fails with profiles::pprof::ImportProfile's error when the
// window's pprof does not read back.
Result<OtlpExportRequest> BuildOtlpRequest(const OtlpOptions& options, const ProfileWindow& window);

class OtlpSink : public Sink {
 public:
  // Fails on an empty target or unreadable TLS files.
  static Result<std::unique_ptr<OtlpSink>> Create(OtlpOptions options);
  ~OtlpSink() override;
  // A window that does not convert is refused for good (kPermanent), as is one the receiver
  // answers with partial_success.rejected_profiles > 0 (OTLP: such data must not be resent).
  SendOutcome Send(const ProfileWindow& window) override;
  std::string Describe() const override;

 private:
  struct Impl;
  explicit OtlpSink(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pathprof::fleet
