#include "pathprof/api/grpc_status.h"

namespace pathprof::api {

// The switch has no default so that a new ErrorCode does not compile until it is mapped here.
grpc::StatusCode ToGrpcCode(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk:
      return grpc::StatusCode::OK;
    case ErrorCode::kInvalidArgument:
      return grpc::StatusCode::INVALID_ARGUMENT;
    case ErrorCode::kNotFound:
      return grpc::StatusCode::NOT_FOUND;
    case ErrorCode::kPermission:
      return grpc::StatusCode::PERMISSION_DENIED;
    case ErrorCode::kUnavailable:
    case ErrorCode::kUnsupported:
      return grpc::StatusCode::FAILED_PRECONDITION;
    case ErrorCode::kResourceExhausted:
      return grpc::StatusCode::RESOURCE_EXHAUSTED;
    case ErrorCode::kCorrupt:
    case ErrorCode::kTruncated:
      // Bytes read (a target's ELF file, a recording) do not follow their format: gRPC's
      // "unrecoverable data loss or corruption", not a fault of the daemon's.
      return grpc::StatusCode::DATA_LOSS;
    case ErrorCode::kInternal:
    case ErrorCode::kIo:
      return grpc::StatusCode::INTERNAL;
  }
  return grpc::StatusCode::INTERNAL;  // not reached: every code is mapped above
}

grpc::Status ToGrpc(const Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(ToGrpcCode(status.code()), status.message());
}

}  // namespace pathprof::api
