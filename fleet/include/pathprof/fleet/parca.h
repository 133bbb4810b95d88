// Pushes windows to Parca's profile store over gRPC:
// parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw, one RawProfileSeries per window
// (its labels, one RawSample holding the pprof bytes). Schema: fleet/proto/parca/... (ours,
// wire-compatible with parca-dev/parca's profilestore.proto).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "parca/profilestore/v1alpha1/profilestore.pb.h"
#include "pathprof/core/status.h"
#include "pathprof/fleet/push_queue.h"
#include "pathprof/fleet/pyroscope.h"  // TlsOptions
#include "pathprof/fleet/window.h"

namespace pathprof::fleet {

struct ParcaOptions {
  std::string target = "localhost:7070";  // host:port (Parca's gRPC port)
  bool use_tls = false;
  TlsOptions tls;            // with use_tls
  std::string bearer_token;  // sent as "authorization: Bearer <token>" metadata
  std::vector<std::pair<std::string, std::string>> extra_metadata;  // lowercase keys
  // Parca derives the profile type from the `__name__` label plus the pprof's sample types.
  std::string profile_name = "pathprof";
  bool normalized = false;  // addresses already relative to their mapping
  std::chrono::milliseconds timeout{30'000};
};

// The request for one window: series[0].labels = {__name__: profile_name} + the window's labels,
// sorted by name (Prometheus label-set order); series[0].samples[0].raw_profile = the pprof.
parca::profilestore::v1alpha1::WriteRawRequest BuildParcaRequest(const ParcaOptions& options,
                                                                 const ProfileWindow& window);

class ParcaSink : public Sink {
 public:
  // Fails on an empty target or unreadable TLS files.
  static Result<std::unique_ptr<ParcaSink>> Create(ParcaOptions options);
  ~ParcaSink() override;
  SendOutcome Send(const ProfileWindow& window) override;
  std::string Describe() const override;

 private:
  struct Impl;
  explicit ParcaSink(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pathprof::fleet
