// Parca WriteRaw client over gRPC. Message shapes and field numbers: our restatement of
// parca-dev/parca proto/parca/profilestore/v1alpha1/profilestore.proto (see fleet/proto/).
#include "pathprof/fleet/parca.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "parca/profilestore/v1alpha1/profilestore.grpc.pb.h"

namespace pathprof::fleet {

namespace pb = parca::profilestore::v1alpha1;

namespace {

Result<std::string> ReadPem(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Error(ErrorCode::kNotFound,
                 std::string("parca ") + what + " '" + path + "' cannot be read: check the path");
  }
  std::ostringstream data;
  data << in.rdbuf();
  return data.str();
}

SendOutcome::Kind Classify(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return SendOutcome::Kind::kOk;
    // Transient: the server is down, overloaded, restarting, or the call ran out of time.
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
    case grpc::StatusCode::ABORTED:
    case grpc::StatusCode::INTERNAL:
    case grpc::StatusCode::UNKNOWN:
      return SendOutcome::Kind::kRetryable;
    default:  // INVALID_ARGUMENT, UNAUTHENTICATED, PERMISSION_DENIED, UNIMPLEMENTED, ...
      return SendOutcome::Kind::kPermanent;
  }
}

}  // namespace

pb::WriteRawRequest BuildParcaRequest(const ParcaOptions& options, const ProfileWindow& window) {
  LabelSet labels = window.labels;
  labels.push_back({"__name__", options.profile_name});
  std::stable_sort(labels.begin(), labels.end(),
                   [](const Label& a, const Label& b) { return a.name < b.name; });
  pb::WriteRawRequest request;
  request.set_normalized(options.normalized);
  pb::RawProfileSeries* series = request.add_series();
  for (const Label& label : labels) {
    pb::Label* out = series->mutable_labels()->add_labels();
    out->set_name(label.name);
    out->set_value(label.value);
  }
  series->add_samples()->set_raw_profile(window.pprof);
  return request;
}

struct ParcaSink::Impl {
  ParcaOptions options;
  std::unique_ptr<pb::ProfileStoreService::Stub> stub;
};

ParcaSink::ParcaSink(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ParcaSink::~ParcaSink() = default;

Result<std::unique_ptr<ParcaSink>> ParcaSink::Create(ParcaOptions options) {
  if (options.target.empty()) {
    return Error(ErrorCode::kInvalidArgument, "parca target is empty: give host:port");
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (options.use_tls) {
    grpc::SslCredentialsOptions ssl;
    if (!options.tls.ca_file.empty()) {
      PATHPROF_ASSIGN_OR_RETURN(std::string pem, ReadPem(options.tls.ca_file, "CA file"));
      ssl.pem_root_certs = pem;
    }
    if (options.tls.client_cert.empty() != options.tls.client_key.empty()) {
      return Error(ErrorCode::kInvalidArgument,
                   "parca mutual TLS needs both client_cert and client_key");
    }
    if (!options.tls.client_cert.empty()) {
      PATHPROF_ASSIGN_OR_RETURN(std::string cert,
                                ReadPem(options.tls.client_cert, "client certificate"));
      PATHPROF_ASSIGN_OR_RETURN(std::string key, ReadPem(options.tls.client_key, "client key"));
      ssl.pem_cert_chain = cert;
      ssl.pem_private_key = key;
    }
    credentials = grpc::SslCredentials(ssl);
  } else {
    credentials = grpc::InsecureChannelCredentials();
  }
  auto impl = std::make_unique<Impl>();
  impl->stub = pb::ProfileStoreService::NewStub(grpc::CreateChannel(options.target, credentials));
  impl->options = std::move(options);
  return std::unique_ptr<ParcaSink>(new ParcaSink(std::move(impl)));
}

SendOutcome ParcaSink::Send(const ProfileWindow& window) {
  const pb::WriteRawRequest request = BuildParcaRequest(impl_->options, window);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + impl_->options.timeout);
  if (!impl_->options.bearer_token.empty()) {
    context.AddMetadata("authorization", "Bearer " + impl_->options.bearer_token);
  }
  for (const auto& [key, value] : impl_->options.extra_metadata) context.AddMetadata(key, value);
  pb::WriteRawResponse response;
  const grpc::Status status = impl_->stub->WriteRaw(&context, request, &response);
  const SendOutcome::Kind kind = Classify(status.error_code());
  if (kind == SendOutcome::Kind::kOk) return SendOutcome::Ok();
  return {kind, "WriteRaw failed: gRPC code " + std::to_string(status.error_code()) + ": " +
                    status.error_message()};
}

std::string ParcaSink::Describe() const {
  return "parca " + impl_->options.target;
}

}  // namespace pathprof::fleet
