// The one ErrorCode -> gRPC status mapping: what the daemon answers with, and what pathctl's
// embedded commands map to their exit codes, so that a failure exits the same way whether the
// daemon or pathctl met it. Every failed call also carries a google.rpc.ErrorInfo (AIP-193)
// in its status details; see proto/pathprof/v1/errors.proto for why it is declared there.
#pragma once

#include <grpcpp/support/status.h>

#include <optional>
#include <string>

#include "pathprof/core/status.h"
#include "pathprof/v1/errors.pb.h"

namespace pathprof::api {

inline constexpr char kErrorDomain[] = "pathprof.dev";
inline constexpr char kErrorInfoTypeUrl[] = "type.googleapis.com/google.rpc.ErrorInfo";

// What ErrorInfo says beyond the code: `reason` (every reason is a value of v1::ErrorReason,
// the one table of them; docs/api.md lists it), the request `field` to blame and the
// pathprofd.toml `limit` key a value was above (each empty: not named).
// (Default member initializers let callers name only the fields they set.)
struct ErrorDetail {
  v1::ErrorReason reason = v1::ERROR_REASON_UNSPECIFIED;  // unspecified: the code's own name
  std::string field = {};
  std::string limit = {};
};

grpc::StatusCode ToGrpcCode(ErrorCode code);
// reason = the ErrorCode's (CORRUPT, TRUNCATED, IO, ...), unless `detail` names one.
grpc::Status ToGrpc(const Status& status, ErrorDetail detail = {});
grpc::Status MakeError(grpc::StatusCode code, std::string message, ErrorDetail detail = {});
// INVALID_ARGUMENT, blaming the request field `field` in ErrorInfo's metadata (empty: none).
grpc::Status InvalidArgument(std::string message, std::string field = "",
                             v1::ErrorReason reason = v1::FIELD_OUT_OF_RANGE);
// `s` with an ErrorInfo whose reason is its gRPC code's name, when it carries none yet (a
// status made without MakeError; the server makes none, but gRPC's own may pass through).
grpc::Status WithErrorInfo(const grpc::Status& s);

// A failed call's ErrorInfo, when its details hold one.
std::optional<v1::ErrorInfo> ErrorInfoOf(const grpc::Status& s);

// The reason a pipeline error code is passed on under: its own name.
v1::ErrorReason ReasonOf(ErrorCode code);
// UPPER_SNAKE_CASE names, as ErrorInfo.reason spells them.
std::string ReasonName(v1::ErrorReason reason);
std::string ReasonName(ErrorCode code);
std::string ReasonName(grpc::StatusCode code);

}  // namespace pathprof::api
