// Pushes windows to Grafana Pyroscope's ingest API: `POST /ingest?name=...&from=...&until=...
// &format=pprof&...` with the pprof in a multipart/form-data body (form file `profile`, and
// optionally `sample_type_config` for sample types Pyroscope does not know).
//
// Wire format as documented in grafana/pyroscope docs/sources/configure-server/
// about-server-api.md ("Ingestion", "pprof format", "Sample Type Configuration") and as the
// upstream Go client's multipart writer names its parts (form field `profile`, file name
// `profile.pprof`; `sample_type_config`, `sample_type_config.json`).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "pathprof/core/status.h"
#include "pathprof/fleet/push_queue.h"
#include "pathprof/fleet/window.h"

namespace pathprof::fleet {

struct TlsOptions {
  std::string ca_file;      // PEM; empty: the system's CAs
  std::string client_cert;  // PEM, for mutual TLS; with client_key
  std::string client_key;
};

struct HttpAuth {
  std::string bearer_token;  // "Authorization: Bearer <token>"
  std::string basic_user;    // "Authorization: Basic ..." (Grafana Cloud: stack user id)
  std::string basic_password;
  std::string tenant_id;  // X-Scope-OrgID, for multi-tenant Pyroscope
};

struct PyroscopeOptions {
  std::string url = "http://localhost:4040";  // scheme://host[:port]; https uses `tls`
  std::string app_name = "pathprof";          // the `name` prefix; Pyroscope appends the type
  std::string spy_name = "pathprof";
  std::string units;             // optional; Pyroscope ignores it for pprof but it is sent
  std::string aggregation_type;  // optional ("sum" / "average")
  // JSON for the `sample_type_config` part; empty: part not sent (Pyroscope's built-in types).
  std::string sample_type_config;
  TlsOptions tls;
  HttpAuth auth;
  std::vector<std::pair<std::string, std::string>> extra_headers;
  std::chrono::milliseconds connect_timeout{5'000};
  std::chrono::milliseconds request_timeout{30'000};  // read and write each
};

// What goes on the wire, built without any I/O so tests can check it byte for byte.
struct HttpRequest {
  std::string path_and_query;  // "/ingest?name=..."
  std::string content_type;    // "multipart/form-data; boundary=..."
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // besides Content-Type
};

// The `name` parameter: app{k=v,...} with the window's labels in order. Pyroscope's name syntax
// has no escaping, so the characters {},= and whitespace in values become '_' (counted in
// *sanitized when non-null).
std::string PyroscopeAppName(const std::string& app, const LabelSet& labels,
                             uint64_t* sanitized = nullptr);

// Builds the ingest request for `window` with the given multipart boundary (which must not
// occur in the payload; kInvalidArgument otherwise).
Result<HttpRequest> BuildPyroscopeRequest(const PyroscopeOptions& options,
                                          const ProfileWindow& window, const std::string& boundary);

class PyroscopeSink : public Sink {
 public:
  // Fails on a URL that is not http(s)://host[:port], or an https URL in a build without TLS.
  static Result<std::unique_ptr<PyroscopeSink>> Create(PyroscopeOptions options);
  ~PyroscopeSink() override;
  SendOutcome Send(const ProfileWindow& window) override;
  std::string Describe() const override;
  uint64_t labels_sanitized() const { return labels_sanitized_; }

 private:
  struct Impl;
  explicit PyroscopeSink(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  uint64_t labels_sanitized_ = 0;
};

}  // namespace pathprof::fleet
