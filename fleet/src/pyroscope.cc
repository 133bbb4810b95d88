// Pyroscope ingest client. Sources read for the wire format (no code taken from them):
// grafana/pyroscope docs/sources/configure-server/about-server-api.md (query parameters, the
// `name` syntax app{k=v}, multipart fields `profile` / `sample_type_config`) and the upstream
// client's multipart writer (file names profile.pprof / sample_type_config.json, parts written
// as form files, i.e. with Content-Type: application/octet-stream).
#include "pathprof/fleet/pyroscope.h"

#include <httplib.h>

#include <random>

#include "pathprof/fleet/archive.h"  // PercentEncode

namespace pathprof::fleet {

namespace {

constexpr const char* kUserAgent = "pathprof-fleet/0.1";

// The multipart part header Go's mime/multipart CreateFormFile writes, which Pyroscope's
// server-side form parser is tested against.
void AppendFilePart(std::string* body, const std::string& boundary, const char* field,
                    const char* file_name, const std::string& content) {
  *body += "--" + boundary + "\r\n";
  *body += std::string("Content-Disposition: form-data; name=\"") + field + "\"; filename=\"" +
           file_name + "\"\r\n";
  *body += "Content-Type: application/octet-stream\r\n\r\n";
  *body += content;
  *body += "\r\n";
}

std::string RandomBoundary() {
  static constexpr char kHex[] = "0123456789abcdef";
  std::random_device device;
  std::string boundary = "pathprof-";
  for (int i = 0; i < 32; ++i) boundary.push_back(kHex[device() & 15]);
  return boundary;
}

// "https://host:4040/prefix" -> {"https://host:4040", "/prefix"}.
bool SplitUrl(const std::string& url, std::string* origin, std::string* prefix) {
  const bool http = url.rfind("http://", 0) == 0;
  const bool https = url.rfind("https://", 0) == 0;
  if (!http && !https) return false;
  const size_t host_start = http ? 7 : 8;
  const size_t slash = url.find('/', host_start);
  *origin = url.substr(0, slash);
  *prefix = slash == std::string::npos ? "" : url.substr(slash);
  while (!prefix->empty() && prefix->back() == '/') prefix->pop_back();
  return origin->size() > host_start;
}

}  // namespace

std::string PyroscopeAppName(const std::string& app, const LabelSet& labels, uint64_t* sanitized) {
  std::string name = app + "{";
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i > 0) name += ',';
    name += labels[i].name + '=';
    for (char c : labels[i].value) {
      const bool reserved =
          c == '{' || c == '}' || c == ',' || c == '=' || c == ' ' || c == '\t' || c == '\n';
      if (reserved && sanitized != nullptr) ++*sanitized;
      name.push_back(reserved ? '_' : c);
    }
  }
  return name + "}";
}

Result<HttpRequest> BuildPyroscopeRequest(const PyroscopeOptions& options,
                                          const ProfileWindow& window,
                                          const std::string& boundary) {
  if (boundary.empty() || boundary.size() > 70 ||
      window.pprof.find(boundary) != std::string::npos ||
      options.sample_type_config.find(boundary) != std::string::npos) {
    return Error(ErrorCode::kInvalidArgument, "multipart boundary '" + boundary +
                                                  "' is empty, too long or occurs in the payload");
  }
  std::string origin, prefix;
  if (!SplitUrl(options.url, &origin, &prefix)) {
    return Error(ErrorCode::kInvalidArgument,
                 "pyroscope url '" + options.url + "' is not http(s)://host[:port][/path]");
  }
  HttpRequest request;
  constexpr int64_t kNanosPerSecond = 1'000'000'000;
  std::string query = "name=" + PercentEncode(PyroscopeAppName(options.app_name, window.labels));
  query += "&from=" + std::to_string(window.start_unix_nanos / kNanosPerSecond);
  query += "&until=" + std::to_string(window.end_unix_nanos / kNanosPerSecond);
  query += "&format=pprof";
  if (window.sample_rate_hz > 0) query += "&sampleRate=" + std::to_string(window.sample_rate_hz);
  if (!options.spy_name.empty()) query += "&spyName=" + PercentEncode(options.spy_name);
  if (!options.units.empty()) query += "&units=" + PercentEncode(options.units);
  if (!options.aggregation_type.empty()) {
    query += "&aggregationType=" + PercentEncode(options.aggregation_type);
  }
  request.path_and_query = prefix + "/ingest?" + query;
  request.content_type = "multipart/form-data; boundary=" + boundary;
  AppendFilePart(&request.body, boundary, "profile", "profile.pprof", window.pprof);
  if (!options.sample_type_config.empty()) {
    AppendFilePart(&request.body, boundary, "sample_type_config", "sample_type_config.json",
                   options.sample_type_config);
  }
  request.body += "--" + boundary + "--\r\n";
  request.headers.push_back({"User-Agent", kUserAgent});
  if (!options.auth.tenant_id.empty()) {
    request.headers.push_back({"X-Scope-OrgID", options.auth.tenant_id});
  }
  for (const auto& header : options.extra_headers) request.headers.push_back(header);
  return request;
}

struct PyroscopeSink::Impl {
  PyroscopeOptions options;
  std::string origin;
  std::unique_ptr<httplib::Client> client;
};

PyroscopeSink::PyroscopeSink(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PyroscopeSink::~PyroscopeSink() = default;

Result<std::unique_ptr<PyroscopeSink>> PyroscopeSink::Create(PyroscopeOptions options) {
  auto impl = std::make_unique<Impl>();
  std::string prefix;
  if (!SplitUrl(options.url, &impl->origin, &prefix)) {
    return Error(ErrorCode::kInvalidArgument,
                 "pyroscope url '" + options.url + "' is not http(s)://host[:port][/path]");
  }
  if (options.tls.client_cert.empty() != options.tls.client_key.empty()) {
    return Error(ErrorCode::kInvalidArgument,
                 "pyroscope mutual TLS needs both client_cert and client_key");
  }
  if (!options.auth.bearer_token.empty() && !options.auth.basic_user.empty()) {
    return Error(ErrorCode::kInvalidArgument,
                 "pyroscope auth: give a bearer token or basic auth, not both (each is an "
                 "Authorization header)");
  }
  impl->client = options.tls.client_cert.empty()
                     ? std::make_unique<httplib::Client>(impl->origin)
                     : std::make_unique<httplib::Client>(impl->origin, options.tls.client_cert,
                                                         options.tls.client_key);
  if (!impl->client->is_valid()) {
    return Error(ErrorCode::kInvalidArgument,
                 "pyroscope client for " + impl->origin +
                     " is not usable (bad host, or unreadable client certificate/key)");
  }
  httplib::Client& client = *impl->client;
  if (!options.tls.ca_file.empty()) client.set_ca_cert_path(options.tls.ca_file);
  client.set_connection_timeout(options.connect_timeout);
  client.set_read_timeout(options.request_timeout);
  client.set_write_timeout(options.request_timeout);
  // The query is percent-encoded by BuildPyroscopeRequest; encoding it again would corrupt it.
  client.set_url_encode(false);
  client.set_keep_alive(false);
  if (!options.auth.bearer_token.empty()) client.set_bearer_token_auth(options.auth.bearer_token);
  if (!options.auth.basic_user.empty()) {
    client.set_basic_auth(options.auth.basic_user, options.auth.basic_password);
  }
  impl->options = std::move(options);
  return std::unique_ptr<PyroscopeSink>(new PyroscopeSink(std::move(impl)));
}

SendOutcome PyroscopeSink::Send(const ProfileWindow& window) {
  std::string boundary = RandomBoundary();
  while (window.pprof.find(boundary) != std::string::npos) boundary = RandomBoundary();
  PyroscopeAppName(impl_->options.app_name, window.labels, &labels_sanitized_);
  Result<HttpRequest> request = BuildPyroscopeRequest(impl_->options, window, boundary);
  if (!request.ok()) return {SendOutcome::Kind::kPermanent, request.status().message()};
  httplib::Headers headers;
  for (const auto& [name, value] : request->headers) headers.emplace(name, value);
  httplib::Result result =
      impl_->client->Post(request->path_and_query, headers, request->body, request->content_type);
  if (!result) {
    const httplib::Error error = result.error();
    // A certificate the server or we cannot accept will not fix itself by retrying.
    const bool permanent =
        error == httplib::Error::SSLLoadingCerts || error == httplib::Error::SSLServerVerification;
    return {permanent ? SendOutcome::Kind::kPermanent : SendOutcome::Kind::kRetryable,
            "POST /ingest failed: " + httplib::to_string(error)};
  }
  const int status = result->status;
  if (status >= 200 && status < 300) return SendOutcome::Ok();
  std::string message = "POST /ingest answered HTTP " + std::to_string(status);
  if (!result->body.empty()) message += ": " + result->body.substr(0, 200);
  const bool retryable = status >= 500 || status == 429 || status == 408;
  return {retryable ? SendOutcome::Kind::kRetryable : SendOutcome::Kind::kPermanent, message};
}

std::string PyroscopeSink::Describe() const {
  return "pyroscope " + impl_->options.url;
}

}  // namespace pathprof::fleet
