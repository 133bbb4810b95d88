#include "grpc_channel.h"

#include <fstream>
#include <sstream>

namespace pathprof::fleet {

namespace {

Result<std::string> ReadPem(const std::string& backend, const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Error(ErrorCode::kNotFound,
                 backend + " " + what + " '" + path + "' cannot be read: check the path");
  }
  std::ostringstream data;
  data << in.rdbuf();
  return data.str();
}

}  // namespace

Result<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(const std::string& backend,
                                                                         bool use_tls,
                                                                         const TlsOptions& tls) {
  if (!use_tls) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions ssl;
  if (!tls.ca_file.empty()) {
    PATHPROF_ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadPem(backend, tls.ca_file, "CA file"));
  }
  if (tls.client_cert.empty() != tls.client_key.empty()) {
    return Error(ErrorCode::kInvalidArgument,
                 backend + " mutual TLS needs both client_cert and client_key");
  }
  if (!tls.client_cert.empty()) {
    PATHPROF_ASSIGN_OR_RETURN(ssl.pem_cert_chain,
                              ReadPem(backend, tls.client_cert, "client certificate"));
    PATHPROF_ASSIGN_OR_RETURN(ssl.pem_private_key, ReadPem(backend, tls.client_key, "client key"));
  }
  return grpc::SslCredentials(ssl);
}

void AddCallMetadata(grpc::ClientContext& context, const std::string& bearer_token,
                     const std::vector<std::pair<std::string, std::string>>& extra) {
  if (!bearer_token.empty()) context.AddMetadata("authorization", "Bearer " + bearer_token);
  for (const auto& [key, value] : extra) context.AddMetadata(key, value);
}

SendOutcome::Kind ClassifyGrpcStatus(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return SendOutcome::Kind::kOk;
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
    case grpc::StatusCode::ABORTED:
    case grpc::StatusCode::INTERNAL:
    case grpc::StatusCode::UNKNOWN:
      return SendOutcome::Kind::kRetryable;
    default:
      return SendOutcome::Kind::kPermanent;
  }
}

}  // namespace pathprof::fleet
