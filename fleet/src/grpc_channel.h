// What every gRPC push sink (Parca, OTLP) does the same way: channel credentials from the TLS
// options, call metadata, and which status codes are worth a retry.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "pathprof/core/status.h"
#include "pathprof/fleet/push_queue.h"
#include "pathprof/fleet/pyroscope.h"  // TlsOptions

namespace pathprof::fleet {

// Insecure without use_tls; otherwise TLS with the CA and client key pair read from their PEM
// files. Errors name `backend` ("parca", "otlp") and the file that cannot be read.
Result<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(const std::string& backend,
                                                                         bool use_tls,
                                                                         const TlsOptions& tls);

// "authorization: Bearer <token>" when a token is given, then the extra pairs.
void AddCallMetadata(grpc::ClientContext& context, const std::string& bearer_token,
                     const std::vector<std::pair<std::string, std::string>>& extra);

// Retryable: the server is down, overloaded, restarting, or the call ran out of time; anything
// else (INVALID_ARGUMENT, UNAUTHENTICATED, UNIMPLEMENTED, ...) will fail the same way again.
SendOutcome::Kind ClassifyGrpcStatus(grpc::StatusCode code);

}  // namespace pathprof::fleet
