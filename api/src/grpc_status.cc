#include "pathprof/api/grpc_status.h"

#include <cctype>

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

std::string ReasonName(ErrorCode code) {
  std::string name = ErrorCodeName(code);  // "permission denied" -> PERMISSION_DENIED
  for (char& c : name) c = c == ' ' ? '_' : static_cast<char>(std::toupper(c));
  return name;
}

std::string ReasonName(grpc::StatusCode code) {
  // gRPC's codes are absl's, number for number (both follow google.rpc.Code).
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

grpc::Status MakeError(grpc::StatusCode code, std::string message, ErrorDetail detail) {
  if (code == grpc::StatusCode::OK) return grpc::Status::OK;
  v1::ErrorInfo info;
  info.set_reason(detail.reason.empty() ? ReasonName(code) : detail.reason);
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
  if (detail.reason.empty()) detail.reason = ReasonName(status.code());
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

grpc::Status InvalidArgument(std::string message, std::string field) {
  return MakeError(grpc::StatusCode::INVALID_ARGUMENT, std::move(message),
                   {.field = std::move(field)});
}

}  // namespace pathprof::api
