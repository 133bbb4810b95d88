#include "pathprof/api/grpc_status.h"

#include <absl/status/status.h>

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

// The switch has no default so that a new ErrorCode does not compile until it has a reason.
v1::ErrorReason ReasonOf(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk:
      return v1::ERROR_REASON_UNSPECIFIED;
    case ErrorCode::kInvalidArgument:
      return v1::INVALID_ARGUMENT;
    case ErrorCode::kNotFound:
      return v1::NOT_FOUND;
    case ErrorCode::kCorrupt:
      return v1::CORRUPT;
    case ErrorCode::kTruncated:
      return v1::TRUNCATED;
    case ErrorCode::kUnsupported:
      return v1::UNSUPPORTED;
    case ErrorCode::kPermission:
      return v1::PERMISSION_DENIED;
    case ErrorCode::kUnavailable:
      return v1::UNAVAILABLE;
    case ErrorCode::kResourceExhausted:
      return v1::RESOURCE_EXHAUSTED;
    case ErrorCode::kInternal:
      return v1::INTERNAL;
    case ErrorCode::kIo:
      return v1::IO;
  }
  return v1::INTERNAL;  // not reached: every code is mapped above
}

std::string ReasonName(v1::ErrorReason reason) {
  return v1::ErrorReason_Name(reason);
}

std::string ReasonName(ErrorCode code) {
  return ReasonName(ReasonOf(code));
}

std::string ReasonName(grpc::StatusCode code) {
  // gRPC's codes are absl's, number for number (both follow google.rpc.Code).
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

grpc::Status MakeError(grpc::StatusCode code, std::string message, ErrorDetail detail) {
  if (code == grpc::StatusCode::OK) return grpc::Status::OK;
  v1::ErrorInfo info;
  info.set_reason(detail.reason == v1::ERROR_REASON_UNSPECIFIED ? ReasonName(code)
                                                                : ReasonName(detail.reason));
  info.set_domain(kErrorDomain);
  if (!detail.field.empty()) (*info.mutable_metadata())["field"] = detail.field;
  if (!detail.limit.empty()) (*info.mutable_metadata())["limit"] = detail.limit;
  v1::RpcStatus status;
  status.set_code(static_cast<int>(code));
  status.set_message(message);
  auto* any = status.add_details();
  // Packed by hand rather than with Any::PackFrom, which would name pathprof.v1.ErrorInfo: the
  // URL must be google.rpc's for other clients to decode it.
  any->set_type_url(kErrorInfoTypeUrl);
  any->set_value(info.SerializeAsString());
  return grpc::Status(code, std::move(message), status.SerializeAsString());
}

grpc::Status ToGrpc(const Status& status, ErrorDetail detail) {
  if (status.ok()) return grpc::Status::OK;
  if (detail.reason == v1::ERROR_REASON_UNSPECIFIED) detail.reason = ReasonOf(status.code());
  return MakeError(ToGrpcCode(status.code()), status.message(), std::move(detail));
}

grpc::Status WithErrorInfo(const grpc::Status& s) {
  if (s.ok() || !s.error_details().empty()) return s;
  return MakeError(s.error_code(), s.error_message());
}

std::optional<v1::ErrorInfo> ErrorInfoOf(const grpc::Status& s) {
  v1::RpcStatus status;
  if (s.error_details().empty() || !status.ParseFromString(s.error_details())) return std::nullopt;
  for (const auto& any : status.details()) {
    v1::ErrorInfo info;
    if (any.type_url() == kErrorInfoTypeUrl && info.ParseFromString(any.value())) return info;
  }
  return std::nullopt;
}

grpc::Status InvalidArgument(std::string message, std::string field, v1::ErrorReason reason) {
  return MakeError(grpc::StatusCode::INVALID_ARGUMENT, std::move(message),
                   {.reason = reason, .field = std::move(field)});
}

}  // namespace pathprof::api
