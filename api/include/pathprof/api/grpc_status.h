// The one ErrorCode -> gRPC status mapping: what the daemon answers with, and what pathctl's
// embedded commands map to their exit codes, so that a failure exits the same way whether the
// daemon or pathctl met it.
#pragma once

#include <grpcpp/support/status.h>

#include "pathprof/core/status.h"

namespace pathprof::api {

grpc::StatusCode ToGrpcCode(ErrorCode code);
grpc::Status ToGrpc(const Status& status);

}  // namespace pathprof::api
